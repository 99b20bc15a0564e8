package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const secretsSources = "sources:\n  - name: platform\n    dir: {path: x}\n"

func TestParseSecrets(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(secretsSources+`
secrets:
  stores:
    - {name: host-env, type: env, prefix: TRUEUP_SECRET_}
    - {name: files, type: file, dir: secrets.d}
    - name: vault
      type: vault
      vault: {address: "https://vault.example.com:8200", pathPrefix: trueup/, token: "${VAULT_TOKEN}", caFile: ca.pem}
    - name: vault-approle
      type: vault
      vault:
        address: http://127.0.0.1:8200
        namespace: team-a
        cacheTTL: 0s
        timeout: 3s
        approle: {roleID: "${ROLE_ID}", secretID: literal-secret-id}
  expose:
    - {store: vault, names: [db-*], sources: [platform], namespaces: [prod, staging]}
    - {store: host-env, names: ["*"], sources: ["*"], namespaces: ["*"]}
`), "/etc/trueup", env(map[string]string{"VAULT_TOKEN": "hvs.from-env", "ROLE_ID": "role-1234"}))
	if err != nil {
		t.Fatal(err)
	}
	s := c.SecretStores
	if len(s.Stores) != 4 || len(s.Expose) != 2 {
		t.Fatalf("secrets %+v", s)
	}
	if s.Stores[1].Dir != "/etc/trueup/secrets.d" {
		t.Errorf("file dir %q, want it resolved against the config's folder", s.Stores[1].Dir)
	}
	v := s.Stores[2].Vault
	if v.Mount != DefaultVaultMount || v.Timeout != DefaultVaultTimeout || v.CacheTTL == nil || *v.CacheTTL != DefaultVaultCacheTTL ||
		v.Token != "hvs.from-env" || v.CAFile != "/etc/trueup/ca.pem" {
		t.Errorf("vault defaults %+v", v)
	}
	a := s.Stores[3].Vault
	if *a.CacheTTL != 0 || a.Timeout != 3*time.Second || a.AppRole.Mount != DefaultAppRoleMount || a.Namespace != "team-a" {
		t.Errorf("approle vault %+v (cacheTTL %v)", a, *a.CacheTTL)
	}
	// A credential is scrubbed whether it came through ${VAR} or was written in the file.
	got := c.Secrets()
	for _, want := range []string{"hvs.from-env", "literal-secret-id", "role-1234"} {
		if !slices.Contains(got, want) {
			t.Errorf("Secrets() %q lacks %q", got, want)
		}
	}
}

func TestSecretsErrors(t *testing.T) {
	t.Parallel()
	store := func(s string) string { return secretsSources + "secrets:\n  stores:\n    - " + s + "\n" }
	vault := func(v string) string { return store("{name: v, type: vault, vault: {" + v + "}}") }
	expose := func(e string) string {
		return secretsSources + "secrets:\n  stores:\n    - {name: e, type: env, prefix: TRUEUP_SECRET_}\n  expose:\n    - " + e + "\n"
	}
	tests := []struct{ name, yaml, want string }{
		{"bad store name", store("{name: Bad_Name, type: env, prefix: TRUEUP_S_}"), `secrets.stores[0].name: "Bad_Name" must be a DNS label`},
		{"duplicate store", secretsSources + "secrets:\n  stores:\n    - {name: a, type: env, prefix: AAAA_}\n    - {name: a, type: env, prefix: BBBB_}\n", `secrets.stores[1].name: store "a" declared twice`},
		{"unknown type", store("{name: a, type: aws}"), `secrets.stores[0].type: "aws" is not one of env, file, vault`},
		{"env without prefix", store("{name: a, type: env}"), "secrets.stores[0].prefix: required"},
		{"env short prefix", store("{name: a, type: env, prefix: X_}"), `secrets.stores[0].prefix: "X_" is shorter than 4`},
		{"env bad prefix", store("{name: a, type: env, prefix: 'A-B='}"), `is not an environment variable name prefix`},
		{"env with dir", store("{name: a, type: env, prefix: TRUEUP_S_, dir: /x}"), "secrets.stores[0].dir: not used by stores of type env"},
		{"file without dir", store("{name: a, type: file}"), "secrets.stores[0].dir: required"},
		{"vault without block", store("{name: a, type: vault}"), "secrets.stores[0].vault: required"},
		{"vault unknown field", vault("address: https://v, token: t, tokn: x"), "field tokn not found"},
		{"vault without address", vault("token: t"), "secrets.stores[0].vault.address: required"},
		{"vault address with credentials", vault("address: 'https://u:p@vault', token: t"), "must be an http(s) URL without credentials"},
		{"vault address with path", vault("address: 'https://vault/v1', token: t"), "without credentials, path or query"},
		{"vault over http", vault("address: 'http://vault.example.com:8200', token: t"),
			"secrets.stores[0].vault.address: http:// would send the Vault token unencrypted to vault.example.com"},
		{"vault approle over http", vault("address: 'http://vault.example.com', approle: {roleID: r, secretID: s}"),
			"would send the AppRole secret ID and Vault tokens unencrypted"},
		{"vault without auth", vault("address: https://vault"), "one of token or approle is required"},
		{"vault with both auths", vault("address: https://vault, token: t, approle: {roleID: r, secretID: s}"), "token and approle are exclusive"},
		{"approle without secret id", vault("address: https://vault, approle: {roleID: r}"), "approle: roleID and secretID are required"},
		{"vault bad mount", vault("address: https://vault, token: t, mount: '../sys'"), `mount: "../sys" is not a mount path`},
		{"vault bad pathPrefix", vault("address: https://vault, token: t, pathPrefix: 'a/../b/'"), "pathPrefix"},
		{"vault cacheTTL too long", vault("address: https://vault, token: t, cacheTTL: 2h"), "cacheTTL: 2h0m0s is outside"},
		{"expose unknown store", expose("{store: nope, names: [a], sources: [platform], namespaces: [p]}"), `secrets.expose[0].store: "nope" is not a declared store`},
		{"expose without names", expose("{store: e, sources: [platform], namespaces: [p]}"), `secrets.expose[0].names: required (write "*" to allow every one)`},
		{"expose without namespaces", expose("{store: e, names: [a], sources: [platform]}"), "secrets.expose[0].namespaces: required"},
		{"expose bad pattern", expose("{store: e, names: ['db-['], sources: [platform], namespaces: [p]}"), `secrets.expose[0].names: "db-[" is not a valid pattern`},
		{"expose unknown source", expose("{store: e, names: [a], sources: [platfrom], namespaces: [p]}"), `secrets.expose[0].sources: "platfrom" is not a declared source`},
	}
	checkParse(t, tests, "")
}

// TestSecretsErrorsScrubbed: a token from the environment never appears in a config error.
func TestSecretsErrorsScrubbed(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(secretsSources+`
secrets:
  stores:
    - name: v
      type: vault
      vault: {address: "${VAULT_ADDR}", token: "${VAULT_TOKEN}"}
`), "/x", env(map[string]string{"VAULT_ADDR": "http://vault.example.com", "VAULT_TOKEN": "hvs.topsecret"}))
	if err == nil || strings.Contains(err.Error(), "hvs.topsecret") {
		t.Fatalf("error %v", err)
	}
}

func TestSecretsEnvPrefixVariants(t *testing.T) {
	t.Parallel()
	// Vault over http to another machine with insecure: true is the operator's call.
	_, err := Parse([]byte(secretsSources+`
secrets:
  stores:
    - {name: v, type: vault, vault: {address: "http://vault.internal:8200", token: t0ken, insecure: true}}
`), "/x", env(nil))
	if err != nil {
		t.Fatal(err)
	}
}
