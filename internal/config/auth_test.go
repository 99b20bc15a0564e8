package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const testHash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func TestAuthValidation(t *testing.T) {
	t.Parallel()
	const oidc = `oidc: {issuer: "https://login.example.com/", clientID: trueup, clientSecret: s3cret-value, roles: [{group: g, role: admin}]`
	tests := []struct {
		name, yaml string
		want       string
	}{
		{"anonymous viewer", "auth: {anonymous: viewer}", accepted},
		{"anonymous bad role", "auth: {anonymous: root}", `auth.anonymous: "root" is not one of viewer, operator, admin`},
		{"empty section", "auth: {}", "auth: set anonymous, tokens or oidc"},
		{"token", `auth: {tokens: [{name: ci-bot, sha256: "` + testHash + `", role: operator, namespaces: [staging]}]}`, accepted},
		{"token bad hash", `auth: {tokens: [{name: ci-bot, sha256: "tu_abc", role: operator}]}`, "auth.tokens[0].sha256: must be 64 lowercase hex digits"},
		{"token upper hex", `auth: {tokens: [{name: ci-bot, sha256: "` + strings.ToUpper(testHash) + `", role: operator}]}`, "auth.tokens[0].sha256"},
		{"token bad role", `auth: {tokens: [{name: ci-bot, sha256: "` + testHash + `", role: god}]}`, `auth.tokens[0].role: "god"`},
		{"token bad name", `auth: {tokens: [{name: "a b", sha256: "` + testHash + `", role: viewer}]}`, `auth.tokens[0].name: "a b"`},
		{"token twice", `auth: {tokens: [{name: a, sha256: "` + testHash + `", role: viewer}, {name: a, sha256: "` + testHash + `", role: viewer}]}`,
			`auth.tokens[1].name: token "a" declared twice`},
		{"token bad namespace", `auth: {tokens: [{name: a, sha256: "` + testHash + `", role: viewer, namespaces: ["Prod!"]}]}`, `auth.tokens[0].namespaces[0]: "Prod!"`},
		{"oidc", "auth: {" + oidc + "}}", accepted},
		{"oidc loopback http", `auth: {oidc: {issuer: "http://127.0.0.1:5556/", clientID: a, clientSecret: b, roles: [{group: g, role: viewer}]}}`, accepted},
		{"oidc http elsewhere", `auth: {oidc: {issuer: "http://login.example.com/", clientID: a, clientSecret: b, roles: [{group: g, role: viewer}]}}`,
			"auth.oidc.issuer: http:// would send the client secret and ID tokens unencrypted to login.example.com"},
		{"oidc missing fields", `auth: {oidc: {issuer: "https://l.example.com/"}}`, "auth.oidc.clientID: required"},
		{"oidc no roles", `auth: {oidc: {issuer: "https://l.example.com/", clientID: a, clientSecret: b}}`, "auth.oidc.roles: at least one"},
		{"oidc bad role", `auth: {oidc: {issuer: "https://l.example.com/", clientID: a, clientSecret: b, roles: [{group: g, role: x}]}}`, `auth.oidc.roles[0].role: "x"`},
		{"oidc short session key", "auth: {" + oidc + ", sessionKey: short}}", "auth.oidc.sessionKey: must be at least 32 characters"},
		{"tls", "server: {tls: {certFile: c.pem, keyFile: k.pem}}", accepted},
		{"tls half", "server: {tls: {certFile: c.pem}}", "server.tls: certFile and keyFile are both required"},
		{"unknown field", "auth: {anonymus: viewer}", "anonymus"},
	}
	checkParse(t, tests, "")
}

func TestAuthDefaults(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(`server: {tls: {certFile: c.pem, keyFile: k.pem}}
auth:
  tokens: [{name: all, sha256: "`+testHash+`", role: admin}]
  oidc:
    issuer: https://login.example.com/
    clientID: trueup
    clientSecret: "${OIDC_SECRET}"
    roles: [{group: g, role: viewer}]
`), "/etc/trueup", env(map[string]string{"OIDC_SECRET": "very-secret-value"}))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Auth
	if !slices.Equal(a.Tokens[0].Namespaces, []string{"*"}) || !slices.Equal(a.OIDC.Roles[0].Namespaces, []string{"*"}) {
		t.Errorf("namespaces default: %v %v", a.Tokens[0].Namespaces, a.OIDC.Roles[0].Namespaces)
	}
	if a.OIDC.GroupsClaim != "groups" || a.OIDC.SessionTTL != 8*time.Hour {
		t.Errorf("oidc defaults: %q %s", a.OIDC.GroupsClaim, a.OIDC.SessionTTL)
	}
	if c.Server.TLS.CertFile != "/etc/trueup/c.pem" || c.Server.ExternalURL != "https://127.0.0.1:8080/" {
		t.Errorf("tls paths %q, externalURL %q", c.Server.TLS.CertFile, c.Server.ExternalURL)
	}
	if !slices.Contains(c.Secrets(), "very-secret-value") {
		t.Error("the client secret is not scrubbed")
	}
	// A literal secret is scrubbed too.
	c, err = Parse([]byte(`auth: {oidc: {issuer: "https://l.example.com/", clientID: a, clientSecret: literal-secret, roles: [{group: g, role: viewer}]}}`), "/x", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.Secrets(), "literal-secret") {
		t.Error("a literal client secret is not scrubbed")
	}
}

func TestCheckExposure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		listen string
		auth   *Auth
		ok     bool
	}{
		{"127.0.0.1:8080", nil, true},
		{"localhost:8080", nil, true},
		{"[::1]:8080", nil, true},
		{"0.0.0.0:8080", nil, false},
		{":8080", nil, false},
		{"10.0.0.5:8080", nil, false},
		{"0.0.0.0:8080", &Auth{Anonymous: "viewer"}, true},
	}
	for _, tc := range tests {
		err := CheckExposure(tc.listen, tc.auth)
		if (err == nil) != tc.ok {
			t.Errorf("CheckExposure(%q, %v) = %v, want ok=%v", tc.listen, tc.auth, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "auth: {anonymous: viewer}") {
			t.Errorf("message %q does not name the fix", err)
		}
	}
}
