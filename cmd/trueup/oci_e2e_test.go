package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
	"github.com/trueup-dev/trueup/sources/ocisource/ocitest"
)

// TestOCISourceEndToEnd runs `trueup serve` with two OCI sources served by an in-process
// registry, following semver ranges. cfg polls once an hour: its pushed artifact's resources
// become Ready, its revision is the artifact's digest; a higher version's tag, announced by a
// registry notification on the webhook (nothing else moves the source within the test), is
// applied, a prerelease is not. poll polls every second: each poll of its unchanged tags costs
// a tag list and one HEAD, never a ping or a download. A pin by the short digest applies cfg's
// first artifact again.
func TestOCISourceEndToEnd(t *testing.T) {
	dir := t.TempDir()
	var (
		logMu sync.Mutex
		calls []string // "class repository" of every request, in order
	)
	reg := ocitest.Start(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			repo := ""
			if i := strings.Index(r.URL.Path, "/acme/"); i >= 0 {
				repo = strings.SplitN(r.URL.Path[i+1:], "/", 3)[1]
			}
			logMu.Lock()
			calls = append(calls, strings.TrimSpace(ocitest.Class(r)+" "+repo))
			logMu.Unlock()
			next.ServeHTTP(w, r)
		})
	})
	callsSince := func(mark int) []string {
		logMu.Lock()
		defer logMu.Unlock()
		return append([]string(nil), calls[mark:]...)
	}
	types := manifesttest.TypeDoc("Thing", "things.example.com", "{type: object}", "run")
	first := reg.PushFiles(t, "acme/config", "v1.0.0", map[string]string{
		"deploy/types.yaml": types, "deploy/one.yaml": thing("Thing", "things.example.com", "one"), "README.md": "not read\n"})
	reg.PushFiles(t, "acme/poll", "v1.0.0", map[string]string{
		"types.yaml": manifesttest.TypeDoc("Gadget", "gadgets.example.com", "{type: object}", "run"),
		"three.yaml": thing("Gadget", "gadgets.example.com", "three")})
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
    oci: {url: "oci://%s/acme/config", semver: ">=1.0.0", path: deploy, interval: 1h, insecure: true}
    webhook: {secret: hook-secret}
  - name: poll
    oci: {url: "oci://%s/acme/poll", semver: ">=1.0.0", interval: 1s, insecure: true}
actions:
  - name: run
    type: exec
    config: {command: [%q]}
`, addr, filepath.Join(dir, "data"), reg.Host, reg.Host, script))

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
	phaseOf := func(kind, name string) string {
		resp, err := http.Get(base + "/api/v1/resources/default/" + kind + "/" + name)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		var r struct{ Status struct{ Phase string } }
		_ = json.NewDecoder(resp.Body).Decode(&r)
		return r.Status.Phase
	}
	phase := func(name string) string { return phaseOf("Thing", name) }
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
	waitFor("three Ready", func() bool { return phaseOf("Gadget", "three") == "Ready" })
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

	// Polls of poll's unchanged tags (every second): a tag list then a HEAD each, no ping, no
	// manifest or blob download, and no request for cfg. The mark may fall inside a poll (its
	// HEAD alone is seen) and the end inside another (its tag list alone).
	mark := len(callsSince(0))
	waitFor("three polls", func() bool { return strings.Count(strings.Join(callsSince(mark), ","), "HEAD manifest") >= 3 })
	polls := callsSince(mark)
	if len(polls) > 0 && polls[0] == "HEAD manifest poll" {
		polls = polls[1:]
	}
	if n := len(polls); n > 0 && polls[n-1] == "GET tags poll" {
		polls = polls[:n-1]
	}
	for i, c := range polls {
		if want := []string{"GET tags poll", "HEAD manifest poll"}[i%2]; c != want || len(polls)%2 != 0 || len(polls) < 4 {
			t.Fatalf("polls of unchanged tags made %q, want a tag list and a HEAD each", callsSince(mark))
		}
	}
	if phase("one") != "Ready" || phase("two") != "Ready" || phaseOf("Gadget", "three") != "Ready" {
		t.Errorf("phases after polls: one %s, two %s, three %s", phase("one"), phase("two"), phaseOf("Gadget", "three"))
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
