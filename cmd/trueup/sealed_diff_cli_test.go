package main

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/sealed/sealedtest"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// TestDiffSealed: `trueup diff` on SOPS-encrypted manifests shows a changed encrypted value
// as a changed marker, quotes no plaintext, and sees no change where only the ciphertext
// changed (the file edited and saved again with sops).
func TestDiffSealed(t *testing.T) {
	identity, recipient := sealedtest.Key()
	t.Setenv("SOPS_AGE_KEY", identity)
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		t.Fatal(err)
	}
	const typeYAML = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Database}
spec:
  group: db.example.com
  versions: [{name: v1, schema: {type: object, properties: {password: {type: string}, size: {type: integer}}}}]
  action: {name: noop}
`
	db := func(password string) string {
		enc, err := sealedtest.EncryptWithKey("db.yaml", []byte("apiVersion: db.example.com/v1\nkind: Database\nmetadata: {name: orders, namespace: prod}\nspec:\n  password: "+password+"\n  size: 10\n"),
			"^spec$", dataKey, recipient)
		if err != nil {
			t.Fatal(err)
		}
		return string(enc)
	}
	applied := db("first-Passw0rd-aa")

	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDatabase(t, store.MigrateURL), store.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if err := st.RegisterSource(ctx, store.SourceConfig{Name: "vault", URL: "dir:///srv/vault"}); err != nil {
		t.Fatal(err)
	}
	keys, err := sealed.ParseAgeKeys(identity)
	if err != nil {
		t.Fatal(err)
	}
	set, err := sealed.Load(manifest.NewLoader(), sealed.NewOpener(keys),
		[]sources.File{{Path: "types.yaml", Data: []byte(typeYAML)}, {Path: "db.yaml", Data: []byte(applied)}}, manifest.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "vault", Revision: "r1", Set: set, Prune: true}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(st, server.Options{Replica: "test"}, slog.New(slog.NewTextHandler(io.Discard, nil))).Handler())
	t.Cleanup(srv.Close)
	a := &api{url: srv.URL, store: st}

	for _, c := range []struct {
		name, file string
		exit       int
		want       []string
	}{
		{"same file", applied, 0, []string{"0 to change, 0 to remove, 1 unchanged; types: 0 to add, 0 to change, 0 to remove, 1 unchanged"}},
		{"saved again, same value", db("first-Passw0rd-aa"), 0, []string{"0 to change, 0 to remove, 1 unchanged; types: 0 to add, 0 to change, 0 to remove, 1 unchanged"}},
		{"value changed", db("second-Passw0rd-bb"), 1, []string{"~ Database/prod/orders", `-  "password": "*** sops:`, `+  "password": "*** sops:`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeDir(t, map[string]string{"types.yaml": typeYAML, "db.yaml": c.file})
			stdout, stderr, err := a.run(t, "diff", dir, "--source", "vault")
			if code := exitStatus(err); code != c.exit {
				t.Fatalf("exit %d (%v), want %d\n%s%s", code, err, c.exit, stdout, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, stdout)
				}
			}
			for _, secret := range []string{"first-Passw0rd", "second-Passw0rd"} {
				if strings.Contains(stdout+stderr, secret) {
					t.Errorf("diff quotes the plaintext %q:\n%s", secret, stdout)
				}
			}
		})
	}
}

// exitStatus is the exit status a CLI error stands for.
func exitStatus(err error) int {
	var code exitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	}
	return 1
}

// TestValidateWithUnsetKeyVariable: a manifests repository's CI without the controller's age
// key still validates (with a warning) when the config names the key through a variable.
func TestValidateWithUnsetKeyVariable(t *testing.T) {
	dir := t.TempDir()
	cfg := dir + "/trueup.yaml"
	writeTestFile(t, cfg, "sources:\n  - name: infra\n    dir: {path: repo}\n    decryption: {age: {keys: \"${TRUEUP_TEST_UNSET_AGE_KEY}\"}}\nactions:\n  - {name: noop, type: noop}\n")
	writeTestFile(t, dir+"/repo/t.yaml", "apiVersion: trueup.dev/v1\nkind: ResourceType\nmetadata: {name: W}\nspec:\n  group: w.example.com\n  versions: [{name: v1, schema: {type: object}}]\n  action: {name: noop}\n")
	out, stderr, err := runCLI(t, "validate", dir+"/repo", "--config", cfg)
	if err != nil {
		t.Fatalf("validate: %v\n%s%s", err, out, stderr)
	}
	if !strings.Contains(stderr, "warning:") || !strings.Contains(out, "valid") {
		t.Fatalf("stdout %q stderr %q", out, stderr)
	}
}
