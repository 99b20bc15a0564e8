//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// depsType declares the kinds of the dependency test; every spec field is a string except
// port, which a whole reference fills with a number.
const depsTypes = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Network}
spec:
  group: example.com
  versions:
    - name: v1
      schema: {type: object, additionalProperties: false, properties: {cidr: {type: string}}}
  action: {name: provision}
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Database}
spec:
  group: example.com
  versions:
    - name: v1
      schema:
        type: object
        additionalProperties: false
        properties: {subnet: {type: string}, port: {type: integer}}
  action: {name: provision}
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: App}
spec:
  group: example.com
  versions:
    - name: v1
      schema: {type: object, additionalProperties: false, properties: {database: {type: string}, note: {type: string}}}
  action: {name: provision}
`

func depsManifests(cidr string) map[string]string {
	return map[string]string{
		"manifests/types.yaml": depsTypes,
		"manifests/network.yaml": fmt.Sprintf(`apiVersion: example.com/v1
kind: Network
metadata: {name: core, namespace: prod}
spec: {cidr: %q}
`, cidr),
		"manifests/database.yaml": `apiVersion: example.com/v1
kind: Database
metadata: {name: orders, namespace: prod}
dependsOn:
  - {kind: Network, name: core}
spec:
  subnet: "${{ Network/core.outputs.endpoint }}"
  port: "${{ Network/prod/core.outputs.port }}"
`,
		"manifests/app.yaml": `apiVersion: example.com/v1
kind: App
metadata: {name: web, namespace: prod}
spec:
  database: "postgres://${{ Database/orders.outputs.endpoint }}/orders"
  note: "$${{ literal }}"
`,
		// Unrelated resources: they never run again, and removing the chain stays under
		// the prune guard's half.
		"manifests/other.yaml": others(4),
	}
}

func others(n int) string {
	var docs []string
	for i := range n {
		docs = append(docs, fmt.Sprintf("apiVersion: example.com/v1\nkind: Network\nmetadata: {name: other%d, namespace: prod}\nspec: {cidr: \"192.168.%d.0/24\"}\n", i, i))
	}
	return strings.Join(docs, "---\n")
}

// TestProcsDependencies runs the real binary on Network ← Database ← App (plus an unrelated
// Network): order of first reconciles, App's stdin holding Database's endpoint, a Network
// output change re-running Database and App only, a cycle rejected with every file:line,
// and deletes in reverse order.
func TestProcsDependencies(t *testing.T) {
	url := pgtest.NewDatabase(t, store.MigrateURL)
	w := procSetup(t, url, "0.2")
	w.script = "testdata/deps-action.sh"
	w.commit(depsManifests("10.0.0.0/16"), "network, database, app")
	w.start(1)
	r := w.replicas[0]

	get := func(kind, name string) (wire.Resource, bool) {
		var x wire.Resource
		code, err := w.get(r, "/api/v1/resources/prod/"+kind+"/"+name, &x)
		return x, err == nil && code == 200
	}
	allReady := func(gen map[string]int64) func() (bool, string) {
		return func() (bool, string) {
			for k, g := range gen {
				kind, name, _ := strings.Cut(k, "/")
				x, ok := get(kind, name)
				if !ok || x.Status.Phase != "Ready" || x.Status.ObservedGeneration != g {
					return false, fmt.Sprintf("%s: %s gen %d/%d", k, x.Status.Phase, x.Status.ObservedGeneration, g)
				}
			}
			return true, ""
		}
	}
	w.eventually(60*time.Second, "all Ready", allReady(map[string]int64{"Network/core": 1, "Database/orders": 1, "App/web": 1, "Network/other0": 1, "Network/other3": 1}))

	calls := w.calls()
	span := func(cs []procCall, id string) (start, end int64) {
		for _, c := range cs {
			if c.id == id {
				return c.start, c.end
			}
		}
		t.Fatalf("no call of %s in %+v", id, cs)
		return 0, 0
	}
	_, netEnd := span(calls, "prod/Network/core")
	dbStart, dbEnd := span(calls, "prod/Database/orders")
	appStart, _ := span(calls, "prod/App/web")
	if dbStart < netEnd || appStart < dbEnd {
		t.Fatalf("order: network ended %d, database %d–%d, app started %d", netEnd, dbStart, dbEnd, appStart)
	}
	db, _ := get("Database", "orders")
	var dbOut map[string]any
	_ = json.Unmarshal(db.Status.Outputs, &dbOut)
	endpoint, _ := dbOut["endpoint"].(string)
	if !strings.HasPrefix(endpoint, "orders-") {
		t.Fatalf("database outputs %s", db.Status.Outputs)
	}
	stdin := func(kind string) []string {
		m, _ := filepath.Glob(filepath.Join(filepath.Dir(r.callLog), "stdin", kind+".*.reconcile.*.json"))
		slices.Sort(m)
		var out []string
		for _, f := range m {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
		return out
	}
	app := stdin("App")
	if len(app) != 1 || !strings.Contains(app[0], `"database":"postgres://`+endpoint+`/orders"`) || !strings.Contains(app[0], `"note":"${{ literal }}"`) {
		t.Fatalf("App's stdin does not hold Database's endpoint %s: %v", endpoint, app)
	}
	if dbIn := stdin("Database"); len(dbIn) != 1 || !strings.Contains(dbIn[0], `"port":5432`) {
		t.Fatalf("Database's stdin: a whole reference keeps the output's type: %v", dbIn)
	}

	// Network's output changes (its spec does): Network, Database and App run again, the
	// other Network does not.
	before := len(calls)
	w.commit(depsManifests("10.1.0.0/16"), "new cidr")
	w.eventually(60*time.Second, "App re-run", func() (bool, string) {
		n := 0
		for _, c := range w.calls()[before:] {
			if c.id == "prod/App/web" {
				n++
			}
		}
		return n == 1, fmt.Sprintf("%d App calls", n)
	})
	time.Sleep(time.Second) // anything else that would wrongly run has had time to
	var again []string
	for _, c := range w.calls()[before:] {
		again = append(again, c.id)
	}
	if !slices.Equal(again, []string{"prod/Network/core", "prod/Database/orders", "prod/App/web"}) {
		t.Fatalf("after the Network change, calls %v", again)
	}
	var hist struct {
		Items []wire.HistoryEntry `json:"items"`
	}
	if _, err := w.get(r, "/api/v1/resources/prod/Database/orders/history", &hist); err != nil || len(hist.Items) == 0 ||
		hist.Items[0].Trigger != "dependency" || !strings.Contains(hist.Items[0].Message, "Network/prod/core") {
		t.Fatalf("Database history %+v %v", hist.Items, err)
	}

	// A cycle: rejected whole, each member's file:line in the errors; nothing applied.
	files := depsManifests("10.1.0.0/16")
	files["manifests/network.yaml"] = strings.Replace(files["manifests/network.yaml"], "spec:", "dependsOn: [{kind: App, name: web}]\nspec:", 1)
	files["manifests/app.yaml"] = strings.Replace(files["manifests/app.yaml"], "spec:", "dependsOn: [{kind: Database, name: orders}]\nspec:", 1)
	bad := w.commit(files, "cycle")
	var src wire.SourceDetail
	w.eventually(30*time.Second, "cycle rejected", func() (bool, string) {
		_, err := w.get(r, "/api/v1/sources/infra", &src)
		return err == nil && src.LastAttemptedRevision == bad && len(src.Errors) > 0, fmt.Sprintf("%+v", src)
	})
	var lines []string
	for _, e := range src.Errors {
		lines = append(lines, fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Path, e.Message))
	}
	joined := strings.Join(lines, "\n")
	for _, want := range []string{"network.yaml:1:", "database.yaml:1:", "app.yaml:1:", "dependency cycle"} {
		if !strings.Contains(joined, want) {
			t.Errorf("errors do not name %s:\n%s", want, joined)
		}
	}
	if src.Revision == bad {
		t.Fatal("the cyclic revision was applied")
	}

	// Delete all three (the other Network stays): App, then Database, then Network.
	before = len(w.calls())
	w.commit(map[string]string{"manifests/network.yaml": "", "manifests/database.yaml": "", "manifests/app.yaml": ""}, "remove the chain")
	w.eventually(60*time.Second, "chain deleted", func() (bool, string) {
		_, ok := get("Network", "core")
		return !ok, "Network/core still there"
	})
	var deletes []procCall
	for _, c := range w.calls()[before:] {
		if c.op == "delete" {
			deletes = append(deletes, c)
		}
	}
	if len(deletes) != 3 || deletes[0].id != "prod/App/web" || deletes[1].id != "prod/Database/orders" || deletes[2].id != "prod/Network/core" ||
		deletes[1].start < deletes[0].end || deletes[2].start < deletes[1].end {
		t.Fatalf("deletes %+v", deletes)
	}
}
