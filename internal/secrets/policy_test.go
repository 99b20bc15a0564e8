package secrets

import (
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/config"
)

func TestCheckNameAndKey(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", MaxNameLength+1)
	names := []struct {
		v  string
		ok bool
	}{
		{"db", true}, {"db-main", true}, {"db.main", true}, {"a1-b2.c3", true},
		{"", false}, {"DB", false}, {"db_main", false}, {"-db", false}, {"db-", false},
		{"db--main", false}, {"..", false}, {".", false}, {"a/b", false}, {"../etc", false},
		{".hidden", false}, {"a..b", false}, {"db main", false}, {long, false},
	}
	for _, tc := range names {
		if err := CheckName(tc.v); (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok %v", tc.v, err, tc.ok)
		}
	}
	keys := []struct {
		v  string
		ok bool
	}{
		{"password", true}, {"DB_PASSWORD", true}, {"tls.crt", true}, {"api-key", true},
		{"", false}, {"..", false}, {"a/b", false}, {"_x", false}, {"x_", false}, {"a__b", false},
		{".env", false}, {"a b", false}, {long, false},
	}
	for _, tc := range keys {
		if err := CheckKey(tc.v); (err == nil) != tc.ok {
			t.Errorf("CheckKey(%q) = %v, want ok %v", tc.v, err, tc.ok)
		}
	}
}

// TestExposer names every way a rule matches or not, and that the first match wins.
func TestExposer(t *testing.T) {
	t.Parallel()
	rules := []config.SecretExpose{
		{Store: "vault", Names: []string{"db-*"}, Sources: []string{"platform"}, Namespaces: []string{"prod", "staging"}},
		{Store: "files", Names: []string{"db-main", "tls"}, Sources: []string{"*"}, Namespaces: []string{"dev-?"}},
		{Store: "env", Names: []string{"*"}, Sources: []string{"sandbox"}, Namespaces: []string{"*"}},
	}
	tests := []struct {
		name, secret, source, ns string
		want                     string // "" means not exposed
	}{
		{"glob name, exact source and namespace", "db-main", "platform", "prod", "vault"},
		{"second namespace of the list", "db-orders", "platform", "staging", "vault"},
		{"first rule wins over a later match", "db-main", "platform", "dev-1", "files"},
		{"namespace not listed", "db-main", "platform", "qa", ""},
		{"source not listed", "db-main", "apps", "prod", ""},
		{"name not matched", "cache", "platform", "prod", ""},
		{"* source, ? namespace", "tls", "apps", "dev-2", "files"},
		{"? matches one character only", "tls", "apps", "dev-10", ""},
		{"* matches every name", "anything", "sandbox", "x", "env"},
		{"empty namespace matched by *", "anything", "sandbox", "", "env"},
		{"empty namespace not matched by a list", "db-main", "platform", "", ""},
		{"glob does not cross a slash", "db-a/b", "platform", "prod", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := Exposer(rules, tc.secret, tc.source, tc.ns)
			if got != tc.want || ok != (tc.want != "") {
				t.Fatalf("Exposer(%q, %q, %q) = %q, %v; want %q", tc.secret, tc.source, tc.ns, got, ok, tc.want)
			}
		})
	}
	if _, ok := Exposer(nil, "db", "s", "n"); ok {
		t.Error("no rules exposed a name")
	}
}

func TestEnvVar(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, key, want string }{
		{"db", "password", "TRUEUP_SECRET_DB__PASSWORD"},
		{"db-main", "DB_PASSWORD", "TRUEUP_SECRET_DB_MAIN__DB_PASSWORD"},
		{"tls", "tls.crt", "TRUEUP_SECRET_TLS__TLS_CRT"},
		{"a1", "api-key", "TRUEUP_SECRET_A1__API_KEY"},
	}
	for _, tc := range tests {
		got, err := EnvVar("TRUEUP_SECRET_", tc.name, tc.key)
		if err != nil || got != tc.want {
			t.Errorf("EnvVar(%q, %q) = %q, %v; want %q", tc.name, tc.key, got, err, tc.want)
		}
	}
	if _, err := EnvVar("P_", "db.main", "k"); err == nil {
		t.Error("a name with '.' was mapped; it would share variables with db-main")
	}
	// Distinct valid names never share a variable: the name part has no "__".
	a, _ := EnvVar("P_", "a", "b-c")
	b, _ := EnvVar("P_", "a-b", "c")
	if a == b {
		t.Errorf("a/b-c and a-b/c both map to %s", a)
	}
}

func TestPaths(t *testing.T) {
	t.Parallel()
	if got := FilePath("db-main", "password"); got != "db-main/password" {
		t.Errorf("FilePath = %q", got)
	}
	for _, tc := range []struct{ mount, prefix, name, want string }{
		{"secret", "", "db", "secret/data/db"},
		{"secret", "trueup/", "db", "secret/data/trueup/db"},
		{"/kv/team/", "apps/trueup/", "db.main", "kv/team/data/apps/trueup/db.main"},
	} {
		if got := VaultPath(tc.mount, tc.prefix, tc.name); got != tc.want {
			t.Errorf("VaultPath(%q, %q, %q) = %q, want %q", tc.mount, tc.prefix, tc.name, got, tc.want)
		}
	}
}
