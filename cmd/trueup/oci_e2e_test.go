package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
	"github.com/trueup-dev/trueup/sources/ocisource/ocitest"
)

// TestOCISourceEndToEnd runs `trueup serve` with an OCI source served by an in-process
// registry, following a semver range: the pushed artifact's resources become Ready, the
// source's revision is the artifact's digest; a higher version's tag (announced by a registry
// notification on the webhook) is applied, a prerelease is not; and polls of unchanged tags
// cost a tag list and one HEAD each, never a download. A pin by the short digest applies the
// first artifact again.
func TestOCISourceEndToEnd(t *testing.T) {
	dir := t.TempDir()
	reg := ocitest.Start(t, nil)
	types := manifesttest.TypeDoc("Thing", "things.example.com", "{type: object}", "run")
	first := reg.PushFiles(t, "acme/config", "v1.0.0", map[string]string{
		"deploy/types.yaml": types, "deploy/one.yaml": thing("Thing", "things.example.com", "one"), "README.md": "not read\n"})
	script := filepath.Join(dir, "run.sh")
	writeTestFile(t, script, "#!/bin/sh\ncat >/dev/null\necho '{\"done\": true}'\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cfgPath := filepath.Join(dir, "trueup.yaml")
	writeTestFile(t, cfgPath, fmt.Sprintf(`server: {listen: %q}
dataDir: %s
reconcile: {backoff: {initial: 100ms, max: 500ms}}
sources:
  - name: cfg
    oci: {url: "oci://%s/acme/config", semver: ">=1.0.0", path: deploy, interval: 1s, insecure: true}
    webhook: {secret: hook-secret}
actions:
  - name: run
    type: exec
    config: {command: [%q]}
`, addr, filepath.Join(dir, "data"), reg.Host, script))

	logs := startServe(t, cfgPath, pgtest.NewDatabase(t, store.MigrateURL))
	base := "http://" + addr
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s\n%s", what, logs.String())
			}
		}
	}
	phase := func(name string) string {
		resp, err := http.Get(base + "/api/v1/resources/default/Thing/" + name)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		var r struct{ Status struct{ Phase string } }
		_ = json.NewDecoder(resp.Body).Decode(&r)
		return r.Status.Phase
	}
	revision := func() string {
		resp, err := http.Get(base + "/api/v1/sources/cfg")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		var src wire.Source
		_ = json.NewDecoder(resp.Body).Decode(&src)
		return src.Revision
	}

	waitFor("one Ready", func() bool { return phase("one") == "Ready" })
	if got := revision(); got != first {
		t.Errorf("source revision %q, want the artifact's digest %q", got, first)
	}

	// A prerelease is not followed; a new version's tag, announced by the registry, is applied.
	reg.PushFiles(t, "acme/config", "v2.0.0-rc.1", map[string]string{"deploy/types.yaml": types})
	second := reg.PushFiles(t, "acme/config", "v1.1.0", map[string]string{
		"deploy/types.yaml": types, "deploy/one.yaml": thing("Thing", "things.example.com", "one"),
		"deploy/two.yaml": thing("Thing", "things.example.com", "two")})
	body := `{"events":[{"action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","repository":"acme/config","tag":"v1.1.0"}}]}`
	req, err := http.NewRequest(http.MethodPost, base+"/hooks/cfg", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/vnd.docker.distribution.events.v1+json")
	req.Header.Set("Authorization", "Bearer hook-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("registry notification answered %d", resp.StatusCode)
	}
	waitFor("two Ready", func() bool { return phase("two") == "Ready" })
	waitFor("the second revision", func() bool { return revision() == second })

	// Polls of the unchanged tags (every second): a tag list and a HEAD each, no manifest or
	// blob download.
	reg.Reset()
	waitFor("two polls", func() bool { return reg.Requests()["HEAD manifest"] >= 2 })
	got := reg.Requests()
	if got["GET blob"] != 0 || got["GET manifest"] != 0 {
		t.Errorf("unchanged polls downloaded: %v", got)
	}
	if phase("one") != "Ready" || phase("two") != "Ready" {
		t.Errorf("phases after polls: one %s, two %s", phase("one"), phase("two"))
	}

	// A pin names the first artifact by its short digest, as the CLI shows it: applied again.
	c := exec.Command(os.Args[0], "--server", base, "source", "pin", "cfg", first[:len("sha256:")+12], "--reason", "roll back")
	c.Env = append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("source pin: %v\n%s", err, out)
	}
	waitFor("the pinned first revision", func() bool { return revision() == first })
	waitFor("two deleted", func() bool { return phase("two") == "" })
}
