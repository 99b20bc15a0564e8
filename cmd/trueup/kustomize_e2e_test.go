package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/cli"
)

// kustomizeFleet is a repository with a Database type, a base of two Databases and two
// overlays: prod (namePrefix prod-, a patch file raising one size, an inline JSON patch)
// and staging (namePrefix staging-, a patch file).
func kustomizeFleet() map[string]string {
	return map[string]string{
		"deploy/types/kustomization.yaml": "resources: [db.yaml]\n",
		"deploy/types/db.yaml": `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Database}
spec:
  group: example.com
  versions:
    - name: v1
      schema: {type: object, required: [size], properties: {size: {type: integer}, tier: {type: string}}}
  action: {name: provision}
`,
		"deploy/base/kustomization.yaml": "resources: [dbs.yaml]\n",
		"deploy/base/dbs.yaml": `apiVersion: example.com/v1
kind: Database
metadata: {name: orders, namespace: shop}
spec: {size: 10, tier: small}
---
apiVersion: example.com/v1
kind: Database
metadata: {name: users, namespace: shop}
spec: {size: 5, tier: small}
`,
		"deploy/overlays/prod/kustomization.yaml": `resources: [../../base]
namePrefix: prod-
patches:
  - path: orders-size.yaml
  - target: {kind: Database, name: users}
    patch: |-
      - {op: replace, path: /spec/tier, value: large}
`,
		"deploy/overlays/prod/orders-size.yaml":      "apiVersion: example.com/v1\nkind: Database\nmetadata: {name: orders, namespace: shop}\nspec: {size: 100}\n",
		"deploy/overlays/staging/kustomization.yaml": "resources: [../../base]\nnamePrefix: staging-\npatches:\n  - path: orders-size.yaml\n",
		"deploy/overlays/staging/orders-size.yaml":   "apiVersion: example.com/v1\nkind: Database\nmetadata: {name: orders, namespace: shop}\nspec: {size: 20}\n",
		"deploy/README.md":                           "overlays of the shop's databases\n",
	}
}

// TestKustomizeOverlaysEndToEnd: the real binary syncs a Git source with render: kustomize
// (types and two overlays of one base): the store holds the patched, prefixed resources
// with the base file as their origin. A revision whose prod overlay names a remote base is
// rejected: the source is Ready=False naming the kustomization and the entry, and nothing
// of it is applied. trueup validate --kustomize checks the same checkout offline.
func TestKustomizeOverlaysEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	commit := func(files map[string]string, msg string) {
		t.Helper()
		for p, d := range files {
			writeTestFile(t, filepath.Join(repo, filepath.FromSlash(p)), d)
		}
		git("add", "-A")
		git("commit", "-q", "-m", msg)
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	commit(kustomizeFleet(), "fleet")

	out, stderr, err := runCLI(t, "validate", filepath.Join(repo, "deploy"), "--kustomize", "types", "--kustomize", "overlays/*")
	if err != nil || !strings.Contains(out, "valid: 1 resource type, 4 resources") {
		t.Fatalf("validate --kustomize: %v\n%s%s", err, out, stderr)
	}

	script := filepath.Join(dir, "action.sh")
	writeTestFile(t, script, "#!/bin/sh\ncat > /dev/null\nprintf '{\"done\": true}\\n'\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "trueup.yaml")
	writeTestFile(t, cfgPath, fmt.Sprintf(`server: {listen: %q}
sources:
  - name: shop
    git: {url: %s, path: deploy, interval: 1s}
    render:
      kustomize: {paths: [types, overlays/*]}
actions:
  - {name: provision, type: exec, config: {command: [%s], timeout: 30s}}
`, freeAddr(t), repo, script))
	logs, conn := serveDB(t, cfgPath)
	ctx := context.Background()
	eventually := func(what string, cond func() (bool, string)) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			ok, last := cond()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 60s (last: %s)\n%s", what, last, logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	want := map[string]string{
		"prod-orders":    `{"size": 100, "tier": "small"}`,
		"prod-users":     `{"size": 5, "tier": "large"}`,
		"staging-orders": `{"size": 20, "tier": "small"}`,
		"staging-users":  `{"size": 5, "tier": "small"}`,
	}
	stored := func() (map[string]string, string) {
		rows, err := conn.Query(ctx, `SELECT name, spec::text, file_path FROM resources WHERE namespace = 'shop' ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		got, desc := map[string]string{}, ""
		for rows.Next() {
			var name, spec, file string
			if err := rows.Scan(&name, &spec, &file); err != nil {
				t.Fatal(err)
			}
			got[name] = spec
			desc += fmt.Sprintf("%s=%s@%s ", name, spec, file)
			if file != "deploy/base/dbs.yaml" {
				t.Errorf("%s comes from %s, want the base file deploy/base/dbs.yaml", name, file)
			}
		}
		return got, desc
	}
	eventually("the overlays' resources stored", func() (bool, string) {
		got, desc := stored()
		if len(got) != len(want) {
			return false, desc
		}
		for n, s := range want {
			if got[n] != s {
				return false, desc
			}
		}
		return true, desc
	})
	var applied string
	if err := conn.QueryRow(ctx, `SELECT revision FROM sources WHERE name = 'shop'`).Scan(&applied); err != nil {
		t.Fatal(err)
	}

	// A remote base: refused before kustomize runs, nothing applied.
	commit(map[string]string{
		"deploy/overlays/prod/kustomization.yaml":  "resources:\n- github.com/example/infra//base?ref=v1\nnamePrefix: prod-\n",
		"deploy/overlays/staging/orders-size.yaml": "apiVersion: example.com/v1\nkind: Database\nmetadata: {name: orders, namespace: shop}\nspec: {size: 30}\n",
	}, "remote base")
	const entry = `deploy/overlays/prod/kustomization.yaml: resources[0]: "github.com/example/infra//base?ref=v1" is a remote base`
	eventually("the source Ready=False naming the kustomization and the entry", func() (bool, string) {
		var ready, message string
		_ = conn.QueryRow(ctx, `SELECT c->>'status', c->>'message' FROM sources, jsonb_array_elements(conditions) c
			WHERE name = 'shop' AND c->>'type' = 'Ready'`).Scan(&ready, &message)
		return ready == "False" && strings.Contains(message, entry), ready + ": " + message
	})
	var revision string
	if err := conn.QueryRow(ctx, `SELECT revision FROM sources WHERE name = 'shop'`).Scan(&revision); err != nil {
		t.Fatal(err)
	}
	if revision != applied {
		t.Errorf("source revision %s after the refused commit, want %s still", revision, applied)
	}
	if got, desc := stored(); got["staging-orders"] != want["staging-orders"] || len(got) != len(want) {
		t.Errorf("the refused revision changed the store: %s", desc)
	}
	_, stderr, err = runCLI(t, "validate", filepath.Join(repo, "deploy"), "--kustomize", "types", "--kustomize", "overlays/*")
	var code cli.ExitCode
	// DIR's files are named from DIR.
	if !errors.As(err, &code) || code != 1 || !strings.Contains(stderr, strings.TrimPrefix(entry, "deploy/")) {
		t.Errorf("validate of the refused checkout: %v, want exit status 1 and %s\n%s", err, entry, stderr)
	}
}
