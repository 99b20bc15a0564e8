package secrets

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
)

// fixture is a resolver over an env store (a fake environment), a file store in a temp
// folder, and the rules given.
type fixture struct {
	r   *Resolver
	dir string
}

func setup(t *testing.T, env map[string]string, rules ...config.SecretExpose) fixture {
	t.Helper()
	dir := t.TempDir()
	r, err := New(config.Secrets{
		Stores: []config.SecretStore{
			{Name: "host-env", Type: "env", Prefix: "TRUEUP_SECRET_"},
			{Name: "files", Type: "file", Dir: dir},
		},
		Expose: rules,
	}, nil, WithLookupEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
	if err != nil {
		t.Fatal(err)
	}
	return fixture{r: r, dir: dir}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func all(store string) config.SecretExpose {
	return config.SecretExpose{Store: store, Names: []string{"*"}, Sources: []string{"*"}, Namespaces: []string{"*"}}
}

func TestEnvStore(t *testing.T) {
	t.Parallel()
	f := setup(t, map[string]string{
		"TRUEUP_SECRET_DB_MAIN__PASSWORD": "s3cr3t-\"quoted\"",
		"TRUEUP_SECRET_DB_MAIN__USER":     "app",
		"HOME":                            "/root",
	}, all("host-env"))
	spec := json.RawMessage(`{"port":5432,"user":{"secretRef":{"name":"db-main","key":"user"}},"password":{"secretRef":{"name":"db-main","key":"password"}}}`)
	got, values, err := f.r.Resolve(context.Background(), "platform", "prod", spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"password":"s3cr3t-\"quoted\"","port":5432,"user":"app"}`; string(got) != want {
		t.Errorf("resolved %s, want %s", got, want)
	}
	if strings.Join(values, ",") != `s3cr3t-"quoted"` { // "app" is too short to scrub
		t.Errorf("values %q", values)
	}
	// The caller's spec is not changed: it is what the store keeps.
	if !strings.Contains(string(spec), "secretRef") {
		t.Error("input spec modified")
	}
	for _, tc := range []struct{ spec, want string }{
		{`{"p":{"secretRef":{"name":"db-main","key":"missing"}}}`, `spec.p: secret "db-main" has no key "missing" in store "host-env"`},
		{`{"p":{"secretRef":{"name":"home","key":"x"}}}`, `spec.p: secret "home" has no key "x"`},
		{`{"p":{"secretRef":{"name":"db.main","key":"user"}}}`, `an env store takes names without '.'`},
	} {
		_, _, err := f.r.Resolve(context.Background(), "platform", "prod", json.RawMessage(tc.spec))
		if err == nil || !actions.IsTerminal(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Resolve(%s) = %v, want a terminal error with %q", tc.spec, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "TRUEUP_SECRET_") {
			t.Errorf("error %q names the variable", err)
		}
	}
}

func TestFileStore(t *testing.T) {
	t.Parallel()
	f := setup(t, nil, all("files"))
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "passwd"), "root:x:0:0")
	writeFile(t, filepath.Join(f.dir, "db", "password"), "pw-from-file\n")
	writeFile(t, filepath.Join(f.dir, "db", "crlf"), "pw\r\n")
	writeFile(t, filepath.Join(f.dir, "db", "two"), "pw\n\n")
	writeFile(t, filepath.Join(f.dir, "db", "big"), strings.Repeat("x", MaxFileSecret+1))
	writeFile(t, filepath.Join(f.dir, "shared", "token"), "tok")
	if err := os.Symlink(filepath.Join(outside, "passwd"), filepath.Join(f.dir, "db", "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(f.dir, "evil")); err != nil {
		t.Fatal(err)
	}
	// A symlink inside the folder is followed (Kubernetes mounts Secrets that way).
	if err := os.Symlink(filepath.Join("..", "shared", "token"), filepath.Join(f.dir, "db", "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(f.dir, "db", "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	ref := func(name, key string) json.RawMessage {
		return json.RawMessage(`{"v":{"secretRef":{"name":"` + name + `","key":"` + key + `"}}}`)
	}
	for _, tc := range []struct{ name, key, want string }{
		{"db", "password", "pw-from-file"},
		{"db", "crlf", "pw"},
		{"db", "two", "pw\n"},
		{"db", "linked", "tok"},
	} {
		got, _, err := f.r.Resolve(context.Background(), "s", "n", ref(tc.name, tc.key))
		var v struct{ V string }
		if err != nil || json.Unmarshal(got, &v) != nil || v.V != tc.want {
			t.Errorf("%s/%s: %s, %v; want %q", tc.name, tc.key, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ name, key, want string }{
		{"db", "escape", "leads outside the store's folder"},
		{"evil", "passwd", "leads outside the store's folder"},
		{"..", "passwd", "malformed secretRef"},
		{"db", "..", "malformed secretRef"},
		{"db", "missing", `secret "db" has no key "missing" in store "files"`},
		{"nope", "x", `secret "nope" has no key "x"`},
		{"db", "big", "larger than"},
		{"db", "dir", "not a regular file"},
	} {
		_, _, err := f.r.Resolve(context.Background(), "s", "n", ref(tc.name, tc.key))
		if err == nil || !actions.IsTerminal(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s/%s: %v, want a terminal error with %q", tc.name, tc.key, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "root:x") || strings.Contains(err.Error(), f.dir)) {
			t.Errorf("%s/%s: error %q shows content or the folder", tc.name, tc.key, err)
		}
	}
}

// TestNotExposed: a name the allowlist does not give to (source, namespace) fails the same
// way whether or not the secret exists, before any store is read, and names the field,
// the name, the source and the namespace.
func TestNotExposed(t *testing.T) {
	t.Parallel()
	f := setup(t, map[string]string{"TRUEUP_SECRET_DB__PASSWORD": "hunter2"}, config.SecretExpose{
		Store: "host-env", Names: []string{"db"}, Sources: []string{"platform"}, Namespaces: []string{"prod"},
	})
	msg := func(name, source, ns string) string {
		_, values, err := f.r.Resolve(context.Background(), source, ns,
			json.RawMessage(`{"cfg":{"pw":{"secretRef":{"name":"`+name+`","key":"password"}}}}`))
		if err == nil || !actions.IsTerminal(err) || values != nil {
			t.Fatalf("%s from %s/%s: %v, %q; want a terminal error", name, source, ns, err, values)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("error %q holds the value", err)
		}
		return err.Error()
	}
	want := `spec.cfg.pw: secret "db" is not exposed to source "apps", namespace "prod"`
	if got := msg("db", "apps", "prod"); !strings.Contains(got, want) {
		t.Errorf("error %q, want %q", got, want)
	}
	// An existing and a missing secret read alike (modulo the name).
	exists := msg("db", "platform", "dev")
	missing := strings.ReplaceAll(msg("dbx", "platform", "dev"), `"dbx"`, `"db"`)
	if exists != missing {
		t.Errorf("existing and missing secrets fail differently:\n%s\n%s", exists, missing)
	}
	// One unexposed reference fails the call even when another is fine.
	_, _, err := f.r.Resolve(context.Background(), "platform", "prod", json.RawMessage(
		`{"a":{"secretRef":{"name":"db","key":"password"}},"b":{"secretRef":{"name":"other","key":"k"}}}`))
	if !actions.IsTerminal(err) || !strings.Contains(err.Error(), `spec.b: secret "other" is not exposed`) {
		t.Errorf("mixed references: %v", err)
	}
	// A nil resolver (no secrets block) exposes nothing.
	var none *Resolver
	if _, _, err := none.Resolve(context.Background(), "s", "n", json.RawMessage(`{"a":{"secretRef":{"name":"db","key":"k"}}}`)); !actions.IsTerminal(err) {
		t.Errorf("nil resolver: %v", err)
	}
}

func TestFastPath(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	for _, spec := range []string{`{"a":1.50,"b":"x"}`, `{"note":"a \"secretRef\" in text"}`, `null`, ``} {
		in := json.RawMessage(spec)
		got, values, err := f.r.Resolve(context.Background(), "s", "n", in)
		if err != nil || values != nil || string(got) != spec {
			t.Errorf("Resolve(%s) = %s, %q, %v; want it unchanged", spec, got, values, err)
		}
	}
	_, _, err := f.r.Resolve(context.Background(), "s", "n", json.RawMessage(`{"secretRef": `))
	if !actions.IsTerminal(err) {
		t.Errorf("undecodable spec: %v", err)
	}
}

func TestNewRejectsUnknownStore(t *testing.T) {
	t.Parallel()
	_, err := New(config.Secrets{Expose: []config.SecretExpose{all("nope")}}, nil)
	if err == nil {
		t.Fatal("expose of an undeclared store accepted")
	}
}

func BenchmarkResolveNoRefs(b *testing.B) {
	r, err := New(config.Secrets{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	spec := json.RawMessage(`{"image":"registry.example.com/app:1.2.3","replicas":3,"env":{"A":"1","B":"2"},"resources":{"cpu":"500m","memory":"512Mi"},"hosts":["a.example.com","b.example.com"]}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := r.Resolve(ctx, "s", "n", spec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResolveOneRef(b *testing.B) {
	env := map[string]string{"TRUEUP_SECRET_DB__PASSWORD": "pw"}
	r, err := New(config.Secrets{
		Stores: []config.SecretStore{{Name: "e", Type: "env", Prefix: "TRUEUP_SECRET_"}},
		Expose: []config.SecretExpose{all("e")},
	}, nil, WithLookupEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
	if err != nil {
		b.Fatal(err)
	}
	spec := json.RawMessage(`{"image":"registry.example.com/app:1.2.3","replicas":3,"password":{"secretRef":{"name":"db","key":"password"}}}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := r.Resolve(ctx, "s", "n", spec); err != nil {
			b.Fatal(err)
		}
	}
}
