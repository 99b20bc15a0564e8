package config

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/plaintext"
)

// Secrets declares the controller-side secret stores that a spec's
// `{secretRef: {name, key}}` resolves from, and which names each source
// and namespace may use. Manifests only name a secret; the stores, their credentials and the
// allowlist live here, in the trusted file.
type Secrets struct {
	// Stores are where secret values are read from.
	Stores []SecretStore `yaml:"stores"`
	// Expose is the allowlist, read in order: the first entry matching (name, source,
	// namespace) decides the store; no match means the name is not exposed there.
	Expose []SecretExpose `yaml:"expose"`
}

// SecretStore is one store; type says which of its fields apply.
type SecretStore struct {
	Name string `yaml:"name"` // how expose entries name the store; unique
	Type string `yaml:"type"` // one of env, file, vault
	// Prefix (env): only variables starting with it are reachable.
	Prefix string `yaml:"prefix"`
	// Dir (file): the folder of NAME/KEY files; relative to the config's folder.
	Dir   string       `yaml:"dir"`
	Vault *VaultConfig `yaml:"vault"` // (vault) where the Vault server is and how to log in
}

// VaultConfig reaches a HashiCorp Vault KV v2 engine with a token or AppRole.
type VaultConfig struct {
	Address    string `yaml:"address"`    // the server's URL (https://vault.example.com:8200)
	Namespace  string `yaml:"namespace"`  // X-Vault-Namespace (Enterprise / HCP); optional
	Mount      string `yaml:"mount"`      // KV v2 mount; default "secret"
	PathPrefix string `yaml:"pathPrefix"` // prepended to the secret name: pathPrefix + NAME
	// Token authenticates directly (normally a ${VAR}); exclusive with approle.
	Token string `yaml:"token"`
	// AppRole logs in with an AppRole instead of a token.
	AppRole *AppRole `yaml:"approle"`
	CAFile  string   `yaml:"caFile"` // PEM bundle trusted for the address; relative to the config's folder
	// Insecure allows the token over an http:// address to another machine.
	Insecure bool          `yaml:"insecure"`
	Timeout  time.Duration `yaml:"timeout"` // per request; default 10s
	// CacheTTL keeps a read secret in memory (never on disk) this long; default 30s, 0s off.
	CacheTTL *time.Duration `yaml:"cacheTTL"`
}

// AppRole logs in at auth/{mount}/login; the client token is renewed by logging in again.
type AppRole struct {
	RoleID   string `yaml:"roleID"`   // required
	SecretID string `yaml:"secretID"` // required; normally a ${VAR}
	Mount    string `yaml:"mount"`    // default "approle"
}

// SecretExpose allows names matching names, referenced from sources matching sources and
// namespaces matching namespaces, to resolve from store. Every list is required and holds
// exact values or globs (path.Match); "*" must be written to allow everything.
type SecretExpose struct {
	Store      string   `yaml:"store"`      // the store's name
	Names      []string `yaml:"names"`      // secret names a secretRef may use
	Sources    []string `yaml:"sources"`    // sources whose manifests may use them
	Namespaces []string `yaml:"namespaces"` // namespaces whose resources may use them
}

// Secret store defaults.
const (
	DefaultVaultMount        = "secret"
	DefaultAppRoleMount      = "approle"
	DefaultVaultTimeout      = 10 * time.Second
	DefaultVaultCacheTTL     = 30 * time.Second
	MaxVaultCacheTTL         = time.Hour
	secretStoreTypeEnv       = "env"
	secretStoreTypeFile      = "file"
	secretStoreTypeVault     = "vault"
	secretEnvPrefixMinLength = 4
)

var (
	envPrefixRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	vaultMountRe = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`)
	vaultPathRe  = regexp.MustCompile(`^([A-Za-z0-9_.-]+/)*[A-Za-z0-9_.-]*$`)
)

// prepareSecrets resolves the stores' relative paths, fills defaults, records their
// credentials for scrubbing (a token written literally, not through ${VAR}, is scrubbed
// too) and checks the secrets block. Called by Validate; every step is idempotent.
func (c *Config) prepareSecrets() error {
	s := &c.SecretStores
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	stores := map[string]bool{}
	for i := range s.Stores {
		st := &s.Stores[i]
		at := fmt.Sprintf("secrets.stores[%d]", i)
		if !nameRe.MatchString(st.Name) {
			bad("%s.name: %q must be a DNS label (lowercase letters, digits and '-', at most 63)", at, st.Name)
		}
		if stores[st.Name] {
			bad("%s.name: store %q declared twice", at, st.Name)
		}
		stores[st.Name] = true
		exclusive := func(field string, set bool) {
			if set {
				bad("%s.%s: not used by stores of type %s", at, field, st.Type)
			}
		}
		switch st.Type {
		case secretStoreTypeEnv:
			switch {
			case st.Prefix == "":
				bad("%s.prefix: required (only variables with it are reachable; e.g. TRUEUP_SECRET_)", at)
			case !envPrefixRe.MatchString(st.Prefix):
				bad("%s.prefix: %q is not an environment variable name prefix", at, st.Prefix)
			case len(st.Prefix) < secretEnvPrefixMinLength:
				bad("%s.prefix: %q is shorter than %d characters", at, st.Prefix, secretEnvPrefixMinLength)
			}
			exclusive("dir", st.Dir != "")
			exclusive("vault", st.Vault != nil)
		case secretStoreTypeFile:
			if st.Dir == "" {
				bad("%s.dir: required", at)
			} else {
				st.Dir = c.Path(st.Dir)
			}
			exclusive("prefix", st.Prefix != "")
			exclusive("vault", st.Vault != nil)
		case secretStoreTypeVault:
			exclusive("prefix", st.Prefix != "")
			exclusive("dir", st.Dir != "")
			if st.Vault == nil {
				bad("%s.vault: required", at)
			} else {
				c.prepareVault(at+".vault", st.Vault, bad)
			}
		default:
			bad("%s.type: %q is not one of env, file, vault", at, st.Type)
		}
	}
	for i, e := range s.Expose {
		at := fmt.Sprintf("secrets.expose[%d]", i)
		if e.Store == "" {
			bad("%s.store: required", at)
		} else if !stores[e.Store] {
			bad("%s.store: %q is not a declared store", at, e.Store)
		}
		for _, l := range []struct {
			key  string
			pats []string
		}{{"names", e.Names}, {"sources", e.Sources}, {"namespaces", e.Namespaces}} {
			if len(l.pats) == 0 {
				bad("%s.%s: required (write \"*\" to allow every one)", at, l.key)
			}
			for _, p := range l.pats {
				if p == "" {
					bad("%s.%s: empty entry", at, l.key)
				} else if _, err := path.Match(p, ""); err != nil {
					bad("%s.%s: %q is not a valid pattern", at, l.key, p)
				}
			}
		}
		for _, p := range e.Sources {
			if !strings.ContainsAny(p, `*?[\`) && !c.hasSource(p) {
				bad("%s.sources: %q is not a declared source", at, p)
			}
		}
	}
	return errors.Join(errs...)
}

func (c *Config) hasSource(name string) bool {
	for _, s := range c.Sources {
		if s.Name == name {
			return true
		}
	}
	return false
}

// prepareVault fills the defaults of one vault block and checks it; at is
// "secrets.stores[i].vault". Credentials are never quoted in messages.
func (c *Config) prepareVault(at string, v *VaultConfig, bad func(string, ...any)) {
	if v.Mount == "" {
		v.Mount = DefaultVaultMount
	}
	if v.Timeout == 0 {
		v.Timeout = DefaultVaultTimeout
	}
	if v.CacheTTL == nil {
		d := DefaultVaultCacheTTL
		v.CacheTTL = &d
	}
	if v.CAFile != "" {
		v.CAFile = c.Path(v.CAFile)
	}
	if v.Address == "" {
		bad("%s.address: required", at)
	} else if u, err := url.Parse(v.Address); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		bad("%s.address: must be an http(s) URL without credentials, path or query (https://vault.example.com:8200)", at)
	} else {
		what := "the Vault token"
		if v.AppRole != nil {
			what = "the AppRole secret ID and Vault tokens"
		}
		if err := plaintext.Check(at+".address", u.Scheme, u.Hostname(), what, true, v.Insecure); err != nil {
			bad("%w", err)
		}
	}
	if !vaultMountRe.MatchString(v.Mount) || dotSegment(v.Mount) {
		bad("%s.mount: %q is not a mount path", at, v.Mount)
	}
	if !vaultPathRe.MatchString(v.PathPrefix) || dotSegment(v.PathPrefix) {
		bad("%s.pathPrefix: %q must be path segments of letters, digits, '.', '_' and '-' (a trailing / separates it from the name)", at, v.PathPrefix)
	}
	if v.Timeout < 0 {
		bad("%s.timeout: %s is negative", at, v.Timeout)
	}
	if d := *v.CacheTTL; d < 0 || d > MaxVaultCacheTTL {
		bad("%s.cacheTTL: %s is outside 0..%s", at, d, MaxVaultCacheTTL)
	}
	switch a := v.AppRole; {
	case a == nil && v.Token == "":
		bad("%s: one of token or approle is required", at)
	case a != nil && v.Token != "":
		bad("%s: token and approle are exclusive", at)
	case a != nil:
		if a.Mount == "" {
			a.Mount = DefaultAppRoleMount
		}
		if a.RoleID == "" || a.SecretID == "" {
			bad("%s.approle: roleID and secretID are required", at)
		}
		if !vaultMountRe.MatchString(a.Mount) || dotSegment(a.Mount) {
			bad("%s.approle.mount: %q is not a mount path", at, a.Mount)
		}
		c.recordSecret(a.SecretID)
	default:
		c.recordSecret(v.Token)
	}
}

// dotSegment reports whether a Vault path has a "." or ".." segment, which would leave the
// mount or prefix the operator chose.
func dotSegment(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// recordSecret adds a credential written in the file to the scrubbed values; one that came
// through ${VAR} is there already.
func (c *Config) recordSecret(v string) {
	if v == "" {
		return
	}
	if c.secrets == nil {
		c.secrets = map[string]int{}
	}
	if c.secrets[v] == 0 {
		c.secrets[v]++
	}
}
