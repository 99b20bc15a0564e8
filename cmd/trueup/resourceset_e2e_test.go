package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// fleetTypes declares Database (size an integer) and Network, and the Networks of two regions.
var fleetTypes = manifesttest.TypeDoc("Database", "example.com",
	"{type: object, additionalProperties: false, required: [size, region], properties: {size: {type: integer, minimum: 1}, region: {type: string}}}", "run") +
	"---\n" + manifesttest.TypeDoc("Network", "example.com", "{type: object}", "run") + `---
apiVersion: example.com/v1
kind: Network
metadata: {name: net-eu-west-1, namespace: production}
spec: {}
---
apiVersion: example.com/v1
kind: Network
metadata: {name: net-us-east-1, namespace: production}
spec: {}
`

// fleetSet is a ResourceSet reading its inputs from tenants.yaml beside it, crossed with two
// regions.
const fleetSet = `apiVersion: trueup.dev/v1
kind: ResourceSet
metadata: {name: tenant-dbs, namespace: production}
spec:
  inputsFrom: [{path: tenants.yaml}]
  matrix: {region: [eu-west-1, us-east-1]}
  resources:
    - apiVersion: example.com/v1
      kind: Database
      metadata: {name: "db-<< inputs.tenant >>-<< inputs.region >>"}
      dependsOn: [{kind: Network, name: "net-<< inputs.region >>"}]
      spec:
        size: "<< inputs.size >>"
        region: "<< inputs.region >>"
`

// fleetSizeLine is the line of spec.size in fleetSet's template.
const fleetSizeLine = 13

// TestResourceSetEndToEnd runs `trueup serve` with a folder source holding a ResourceSet of
// 3 inputs × 2 regions: 6 Databases become Ready with the inputs' values (a number stays a
// number) and a dependency on their region's Network; the CLI lists them by set and the set's
// API counts them. Removing an input prunes its 2 resources; a bad input rejects the
// revision at the template's line naming the input, and nothing is applied or deleted.
func TestResourceSetEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	writeTestFile(t, filepath.Join(repo, "types.yaml"), fleetTypes)
	writeTestFile(t, filepath.Join(repo, "sets", "tenant-dbs.yaml"), fleetSet)
	tenants := func(lines ...string) {
		t.Helper()
		writeTestFile(t, filepath.Join(repo, "sets", "tenants.yaml"), strings.Join(lines, "\n")+"\n")
	}
	acme, globex, initech := "- {tenant: acme, size: 100}", "- {tenant: globex, size: 50}", "- {tenant: initech, size: 10}"
	tenants(acme, globex, initech)
	script := filepath.Join(dir, "run.sh")
	writeTestFile(t, script, "#!/bin/sh\ncat >/dev/null\necho '{\"done\": true}'\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	logs, wait := serveProcess(t, fmt.Sprintf("server: {listen: %q}\nreconcile: {backoff: {initial: 100ms, max: 500ms}}\n"+
		"sources:\n  - name: fleet\n    dir: {path: %s, interval: 1h}\n    prune: {maxFraction: 0.5}\n"+
		"actions:\n  - name: run\n    type: exec\n    config: {command: [%q]}\n", addr, repo, script),
		"TRUEUP_DATABASE_URL="+pgtest.NewDatabase(t, store.MigrateURL))
	defer func() {
		if err := wait(true); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	base := "http://" + addr
	waitFor := func(what string, cond func() (bool, string)) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			ok, last := cond()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; last: %s\n%s", what, last, logs.String())
			}
		}
	}
	getJSON := func(path string, v any) int {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
		}
		return resp.StatusCode
	}
	databases := func() []wire.Resource {
		var list struct{ Items []wire.Resource }
		getJSON("/api/v1/resources?namespace=production&kind=Database", &list)
		return list.Items
	}
	// members are the set's Databases as "name phase generation spec" (the spec's keys sorted).
	members := func() []string {
		var got []string
		for _, r := range databases() {
			if r.Metadata.Labels["trueup.dev/resource-set"] != "tenant-dbs" || r.Source.ResourceSet != "tenant-dbs" {
				t.Errorf("%s: labels %v, source %+v: not marked as the set's", r.Metadata.Name, r.Metadata.Labels, r.Source)
			}
			var spec map[string]any // the keys sorted, a number still a number
			if err := json.Unmarshal(r.Spec, &spec); err != nil {
				t.Fatalf("%s: spec %s: %v", r.Metadata.Name, r.Spec, err)
			}
			sorted, _ := json.Marshal(spec)
			got = append(got, fmt.Sprintf("%s %s %d %s", r.Metadata.Name, r.Status.Phase, r.Metadata.Generation, sorted))
		}
		slices.Sort(got)
		return got
	}
	want := func(sizes map[string]int) []string {
		var w []string
		for tenant, size := range sizes {
			for _, region := range []string{"eu-west-1", "us-east-1"} {
				w = append(w, fmt.Sprintf(`db-%s-%s Ready 1 {"region":"%s","size":%d}`, tenant, region, region, size))
			}
		}
		slices.Sort(w)
		return w
	}
	cli := func(args ...string) (string, int) {
		t.Helper()
		return cliProcess(t, base, args...)
	}

	all := want(map[string]int{"acme": 100, "globex": 50, "initech": 10})
	waitFor("6 Databases Ready", func() (bool, string) {
		got := members()
		return slices.Equal(got, all), strings.Join(got, "\n")
	})
	var one wire.Resource
	if code := getJSON("/api/v1/resources/production/Database/db-globex-us-east-1", &one); code != http.StatusOK {
		t.Fatalf("GET db-globex-us-east-1: %d", code)
	}
	if len(one.DependsOn) != 1 || one.DependsOn[0].Kind != "Network" || one.DependsOn[0].Name != "net-us-east-1" ||
		!one.DependsOn[0].Explicit || one.DependsOn[0].Phase != "Ready" {
		t.Errorf("db-globex-us-east-1 depends on %+v, want the Ready Network/net-us-east-1", one.DependsOn)
	}
	if one.Source.Path != "sets/tenant-dbs.yaml" || one.Source.Line != 8 {
		t.Errorf("db-globex-us-east-1 comes from %s:%d, want the template at sets/tenant-dbs.yaml:8", one.Source.Path, one.Source.Line)
	}
	out, code := cli("get", "resources", "--set", "tenant-dbs", "-n", "production")
	if code != 0 || strings.Count(out, "\n") != 7 || !strings.Contains(out, "db-initech-eu-west-1") || strings.Contains(out, "net-") {
		t.Errorf("get resources --set tenant-dbs: exit %d, want a header and the 6 Databases:\n%s", code, out)
	}
	var rs wire.ResourceSet
	waitFor("the set's API counting 6 Ready members", func() (bool, string) {
		code := getJSON("/api/v1/resourcesets/production/tenant-dbs", &rs)
		return code == http.StatusOK && rs.Members == 6 && rs.Inputs == 6 && rs.Phases["Ready"] == 6, fmt.Sprintf("%d %+v", code, rs)
	})
	if rs.Source != "fleet" || rs.Path != "sets/tenant-dbs.yaml" || rs.Line != 1 {
		t.Errorf("the set's API: %+v", rs)
	}
	if out, code := cli("get", "resourcesets"); code != 0 || !strings.Contains(out, "tenant-dbs") || !strings.Contains(out, "6/6") {
		t.Errorf("get resourcesets: exit %d, want tenant-dbs with 6 of 6 Ready\n%s", code, out)
	}
	page := httpGetBody(t, base+"/resourcesets/production/tenant-dbs")
	if !strings.Contains(page, "sets/tenant-dbs.yaml:1") || !strings.Contains(page, `href="/resources/production/Database/db-initech-us-east-1"`) ||
		!strings.Contains(page, "6 on this page") {
		t.Errorf("the set's dashboard page does not show its file and 6 members:\n%s", page)
	}

	// An input goes: its 2 resources are pruned, the other 4 stay as they were.
	tenants(acme, initech)
	if out, code := cli("sync", "fleet", "--wait"); code != 0 {
		t.Errorf("sync --wait after removing globex: exit %d\n%s", code, out)
	}
	four := want(map[string]int{"acme": 100, "initech": 10})
	waitFor("globex's 2 Databases pruned", func() (bool, string) {
		got := members()
		return slices.Equal(got, four), strings.Join(got, "\n")
	})
	waitFor("the set's API counting 4 members", func() (bool, string) {
		code := getJSON("/api/v1/resourcesets/production/tenant-dbs", &rs)
		return code == http.StatusOK && rs.Members == 4 && rs.Phases["Ready"] == 4, fmt.Sprintf("%d %+v", code, rs)
	})

	// A bad input rejects the revision: acme's change is not applied, nothing is deleted.
	tenants("- {tenant: acme, size: 200}", "- {tenant: bad, size: huge}")
	out, code = cli("sync", "fleet", "--wait")
	wantMsg := fmt.Sprintf("sets/tenant-dbs.yaml:%d (tenant=bad, region=eu-west-1): spec.size:", fleetSizeLine)
	if code != 1 || !strings.Contains(out, "Ready=False") || !strings.Contains(out, "rejected") {
		t.Errorf("sync --wait of the bad input: exit %d, want 1 and the rejection:\n%s", code, out)
	}
	var src wire.Source
	if code := getJSON("/api/v1/sources/fleet", &src); code != http.StatusOK {
		t.Fatalf("GET the source: %d", code)
	}
	if c, ok := status.Get(src.Conditions, status.Ready); !ok || c.Status != status.False || !strings.Contains(c.Message, wantMsg) {
		t.Errorf("the source's Ready condition %+v, want False with %q", c, wantMsg)
	}
	if got := members(); !slices.Equal(got, four) {
		t.Errorf("after the bad input the Databases are\n%s\nwant them unchanged:\n%s", strings.Join(got, "\n"), strings.Join(four, "\n"))
	}
}

// cliProcess runs the CLI as a process against the server at base, with no context file or
// token from the environment, and returns its combined output and exit status: what scripts
// see.
func cliProcess(t *testing.T, base string, args ...string) (string, int) {
	t.Helper()
	c := exec.Command(os.Args[0], append([]string{"--server", base}, args...)...)
	c.Env = append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1", "TRUEUP_SERVER=", "TRUEUP_TOKEN=", "XDG_CONFIG_HOME="+t.TempDir())
	out, err := c.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}
