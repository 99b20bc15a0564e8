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
			f, err := readPlan(js, tc.destroy, planInput{})
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
		f, err := readPlan(fixture(t, name), destroy, planInput{})
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
	if _, err := readPlan([]byte(`{"resource_changes": [`), false, planInput{}); err == nil {
		t.Fatal("readPlan accepted cut JSON")
	}
	// A value the plan sets is part of it.
	a, _ := readPlan([]byte(`{"resource_changes": [{"address": "a.b", "change": {"actions": ["update"], "after": {"size": 2}}}]}`), false, planInput{})
	b, _ := readPlan([]byte(`{"resource_changes": [{"address": "a.b", "change": {"actions": ["update"], "after": {"size": 3}}}]}`), false, planInput{})
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
		x, _ := readPlan([]byte(base), false, planInput{})
		y, _ := readPlan([]byte(other.json), false, planInput{module: other.module})
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

// No secret goes into the hash: the call's secrets (in strings, keys and numbers) and the
// values Terraform marks sensitive. Two plans that differ only there have one hash, so a
// guess of a secret cannot be checked against it.
func TestPlanHashWithoutSecrets(t *testing.T) {
	t.Parallel()
	doc := func(secret, number string) []byte {
		return []byte(`{"variables": {"pw": {"value": "` + secret + `"}, "port": {"value": ` + number + `}, "key": {"value": "k"}},
			"resource_changes": [{"address": "a.b", "change": {"actions": ["update"],
				"before": {"dsn": "postgres://u:` + secret + `@h", "port": ` + number + `}, "after": {"dsn": "postgres://u:` + secret + `@h", "` + secret + `": 1, "port": ` + number + `}}}],
			"configuration": {"root_module": {"variables": {"pw": {}, "key": {"sensitive": true}}}}}`)
	}
	hash := func(js []byte, secrets ...string) string {
		t.Helper()
		f, err := readPlan(js, false, planInput{secrets: secrets})
		if err != nil {
			t.Fatal(err)
		}
		return f.hash
	}
	a := hash(doc("hunter2", "5432"), "hunter2", "5432")
	if b := hash(doc("swordfish", "6543"), "swordfish", "6543"); a != b {
		t.Fatalf("plans that differ only in the call's secrets: hashes %s and %s", a, b)
	}
	if b := hash(doc("swordfish", "6543"), "swordfish", "6543.0"); a != b {
		t.Fatalf("a secret number written another way is in the hash: %s and %s", a, b)
	}
	// The guess's hash is the plan's whatever the guess: only the real secret is scrubbed.
	for _, guess := range []string{"hunter1", "hunter3"} {
		if hash(doc(guess, "5432"), "hunter2", "5432") == a {
			t.Fatalf("the plan of %q has the hash of the plan of the secret", guess)
		}
	}
	if hash(doc("hunter2", "5432")) == a {
		t.Fatal("the secret is not scrubbed from the hashed form")
	}

	// Terraform's sensitive marks: a resource's values, an output's, a sensitive variable's.
	marked := func(value string) []byte {
		return []byte(`{"variables": {"key": {"value": "` + value + `"}},
			"resource_changes": [{"address": "a.b", "change": {"actions": ["update"],
				"before": {"p": "` + value + `", "list": ["x", "` + value + `"], "n": 1}, "after": {"p": "` + value + `", "list": ["x", "` + value + `"], "n": 1},
				"before_sensitive": {"p": true, "list": [false, true]}, "after_sensitive": {"p": true, "list": [false, true]}}}],
			"output_changes": {"o": {"actions": ["update"], "before": "` + value + `", "after": "` + value + `", "before_sensitive": true, "after_sensitive": true}},
			"configuration": {"root_module": {"variables": {"key": {"sensitive": true}}}}}`)
	}
	if a, b := hash(marked("one")), hash(marked("two")); a != b {
		t.Fatalf("plans that differ only in sensitive values: hashes %s and %s", a, b)
	}
	unmarked := func(value string) []byte {
		return []byte(`{"resource_changes": [{"address": "a.b", "change": {"actions": ["update"], "after": {"p": "` + value + `"}, "after_sensitive": {"p": false}}}]}`)
	}
	if hash(unmarked("one")) == hash(unmarked("two")) {
		t.Fatal("a value not marked sensitive is left out of the hash")
	}
}
