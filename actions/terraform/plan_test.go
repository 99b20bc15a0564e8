package terraform

import (
	"os"
	"path/filepath"
	"testing"
)

// The fixtures are show -json of real plans of testdata/modules/gate (update-again.json: the
// same change as update.json planned later, its resources in another order, indented).
func TestReadPlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                         string
		json                         string
		destroy                      bool
		add, change, destroyed, repl int
		applies                      bool
	}{
		{name: "create.json", add: 2, applies: true},
		{name: "update.json", change: 2, applies: true},
		{name: "replace-destroy.json", destroyed: 1, repl: 1, applies: true},
		{name: "nochange.json"},
		{name: "destroy.json", destroy: true, destroyed: 2, applies: true},
		{name: "create before destroy", json: `{"resource_changes": [{"address": "a.b", "change": {"actions": ["create", "delete"]}}]}`, repl: 1, applies: true},
		{name: "a data source read at apply", json: `{"resource_changes": [{"address": "data.a.b", "change": {"actions": ["read"]}}]}`, applies: true},
		{name: "an output only", json: `{"output_changes": {"url": {"actions": ["update"]}}}`, applies: true},
		{name: "nothing at all", json: `{"format_version": "1.2"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			js := []byte(tc.json)
			if tc.json == "" {
				js = fixture(t, tc.name)
			}
			f, err := readPlan(js, tc.destroy, "")
			if err != nil {
				t.Fatal(err)
			}
			if f.add != tc.add || f.change != tc.change || f.destroy != tc.destroyed || f.replace != tc.repl || f.applies != tc.applies {
				t.Fatalf("readPlan = %+v; want add %d, change %d, destroy %d, replace %d, applies %v",
					f, tc.add, tc.change, tc.destroyed, tc.repl, tc.applies)
			}
			if len(f.hash) != 64 {
				t.Fatalf("hash %q; want a SHA-256 in hex", f.hash)
			}
		})
	}
}

func TestPlanHash(t *testing.T) {
	t.Parallel()
	hash := func(name string, destroy bool) string {
		f, err := readPlan(fixture(t, name), destroy, "")
		if err != nil {
			t.Fatal(err)
		}
		return f.hash
	}
	// Another timestamp, order and layout: the same change, the same hash.
	if a, b := hash("update.json", false), hash("update-again.json", false); a != b {
		t.Fatalf("two plans of the same change: hashes %s and %s", a, b)
	}
	seen := map[string]string{}
	for _, tc := range []struct {
		name    string
		destroy bool
	}{{"create.json", false}, {"update.json", false}, {"replace-destroy.json", false}, {"nochange.json", false},
		{"destroy.json", true}, {"nochange.json", true}} {
		h := hash(tc.name, tc.destroy)
		if other, ok := seen[h]; ok {
			t.Fatalf("%s (destroy %v) has the hash of %s", tc.name, tc.destroy, other)
		}
		seen[h] = tc.name
	}
	if _, err := readPlan([]byte(`{"resource_changes": [`), false, ""); err == nil {
		t.Fatal("readPlan accepted cut JSON")
	}
	// A value the plan sets is part of it.
	a, _ := readPlan([]byte(`{"resource_changes": [{"address": "a.b", "change": {"actions": ["update"], "after": {"size": 2}}}]}`), false, "")
	b, _ := readPlan([]byte(`{"resource_changes": [{"address": "a.b", "change": {"actions": ["update"], "after": {"size": 3}}}]}`), false, "")
	if a.hash == b.hash {
		t.Fatal("plans that set other values have one hash")
	}
	// What the plan runs is part of it too: a variable only a provisioner reads, the
	// configuration, the module's files.
	base := `{"variables": {"cmd": {"value": "echo harmless"}}, "configuration": {"root_module": {}}}`
	for name, other := range map[string]struct {
		json, module string
	}{
		"a variable":        {json: `{"variables": {"cmd": {"value": "touch PWNED"}}, "configuration": {"root_module": {}}}`},
		"the configuration": {json: `{"variables": {"cmd": {"value": "echo harmless"}}, "configuration": {"root_module": {"resources": []}}}`},
		"the module":        {json: base, module: "other"},
	} {
		x, _ := readPlan([]byte(base), false, "")
		y, _ := readPlan([]byte(other.json), false, other.module)
		if x.hash == y.hash {
			t.Errorf("plans of another %s have one hash", name)
		}
	}
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "plans", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
