package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/sources"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// dbType declares DatabaseCluster; tests count lines in it, so edit with care.
const dbType = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata:
  name: DatabaseCluster
spec:
  group: example.com
  versions:
    - name: v1
      schema:
        type: object
        required: [engine, storage_gb]
        additionalProperties: false
        properties:
          engine: {type: string, enum: [postgres, mysql]}
          storage_gb: {type: integer, minimum: 10, maximum: 10000}
          replicas: {type: integer, default: 1}
          tags: {type: array, items: {type: string}}
          backup:
            type: object
            properties:
              enabled: {type: boolean, default: true}
              window: {type: string, default: "02:00"}
    - name: v2
      schema: {type: object}
  action:
    name: provision
    with: {workflow: database.yml}
  resyncInterval: 10m
`

// files builds sources.Files from path, content pairs, hashing the content as a source does.
func files(pairs ...string) []sources.File {
	var out []sources.File
	for i := 0; i+1 < len(pairs); i += 2 {
		data := []byte(pairs[i+1])
		out = append(out, sources.File{Path: pairs[i], Hash: hashJSON(data), Data: data})
	}
	return out
}

// problems returns the lines of a Load error, failing the test for any other error.
func problems(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error %v is %T, want Errors", err, err)
	}
	return strings.Split(errs.Error(), "\n")
}

func TestLoadValidGolden(t *testing.T) {
	t.Parallel()
	set, err := NewLoader().LoadDir("testdata/valid", Options{})
	if err != nil {
		t.Fatalf("LoadDir: %v", err)
	}
	got, err := json.MarshalIndent(set, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "valid.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("set differs from %s (run go test -update and review the diff):\n%s", golden, got)
	}
}

func TestLoadValid(t *testing.T) {
	t.Parallel()
	set, err := NewLoader().Load(files(
		"types.yaml", dbType,
		"db.yaml", `apiVersion: example.com/v1
kind: DatabaseCluster
metadata:
  name: pg
spec:
  engine: postgres
  storage_gb: 50
  backup: {window: "03:00"}
---
---
apiVersion: example.com/v2
kind: DatabaseCluster
metadata: {name: pg, namespace: other}
`,
	), Options{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(set.Types) != 1 || len(set.Resources) != 2 {
		t.Fatalf("got %d types and %d resources, want 1 and 2", len(set.Types), len(set.Resources))
	}
	typ := set.Types[0]
	if typ.Name != "DatabaseCluster" || typ.Group != "example.com" || len(typ.Versions) != 2 ||
		typ.Action.Name != "provision" || string(typ.Action.With) != `{"workflow":"database.yml"}` ||
		typ.ResyncInterval == nil || *typ.ResyncInterval != 10*time.Minute || typ.File != "types.yaml" || typ.Line != 1 {
		t.Errorf("type = %+v", typ)
	}

	pg := set.Resources[0]
	if pg.Namespace != "default" || pg.Name != "pg" || pg.File != "db.yaml" || pg.Line != 1 {
		t.Errorf("resource = %+v", pg)
	}
	// Defaults fill absent properties, recursively, and never replace what is written.
	if want := `{"backup":{"enabled":true,"window":"03:00"},"engine":"postgres","replicas":1,"storage_gb":50}`; string(pg.Spec) != want {
		t.Errorf("spec = %s, want %s", pg.Spec, want)
	}
	if pg.Labels == nil || pg.Annotations == nil {
		t.Error("labels and annotations must be empty maps, not nil")
	}
	if pg.SpecHash != hashJSON(pg.Spec) {
		t.Error("SpecHash is not the sha256 of Spec")
	}
	other := set.Resources[1]
	if other.Namespace != "other" || string(other.Spec) != "{}" || other.Line != 11 {
		t.Errorf("second resource = %+v", other)
	}
}

func TestHashesStable(t *testing.T) {
	t.Parallel()
	load := func(pairs ...string) *Set {
		t.Helper()
		set, err := NewLoader().Load(files(pairs...), Options{})
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		return set
	}
	yamlSet := load("types.yaml", dbType, "db.yaml", `apiVersion: example.com/v1
kind: DatabaseCluster
metadata: {name: pg, labels: {a: "1", b: "2"}}
spec: {engine: postgres, storage_gb: 50, tags: [x, y]}
`)
	// The same content in another order, in JSON, with the type's keys shuffled too.
	reordered := strings.Replace(dbType, "  group: example.com\n", "", 1) + "  group: example.com\n"
	jsonSet := load("types.yaml", reordered, "db.yaml", `{"spec": {"tags": ["x", "y"], "storage_gb": 50.0, "engine": "postgres", "replicas": 1},
 "metadata": {"labels": {"b": "2", "a": "1"}, "name": "pg"}, "kind": "DatabaseCluster", "apiVersion": "example.com/v1"}`)

	y, j := yamlSet.Resources[0], jsonSet.Resources[0]
	if y.SpecHash != j.SpecHash || !bytes.Equal(y.Spec, j.Spec) {
		t.Errorf("spec hashes differ: %s %s vs %s %s", y.SpecHash, y.Spec, j.SpecHash, j.Spec)
	}
	if y.MetaHash != j.MetaHash {
		t.Error("meta hashes differ")
	}
	if yamlSet.Types[0].Hash != jsonSet.Types[0].Hash {
		t.Error("type hashes differ across key order")
	}

	// The metadata hash follows labels and the file, not the spec.
	moved := load("types.yaml", dbType, "other.yaml", `apiVersion: example.com/v1
kind: DatabaseCluster
metadata: {name: pg, labels: {a: "1", b: "2"}}
spec: {engine: postgres, storage_gb: 50, tags: [x, y]}
`)
	if moved.Resources[0].MetaHash == y.MetaHash || moved.Resources[0].SpecHash != y.SpecHash {
		t.Error("moving a file must change MetaHash only")
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files []sources.File
		opts  Options
		want  []string
	}{
		{
			name:  "identity fields missing",
			files: files("x.yaml", "# a comment\nspec: {}\n"),
			want: []string{
				"x.yaml:2: apiVersion: is required",
				"x.yaml:2: kind: is required",
				"x.yaml:2: metadata.name: is required",
			},
		},
		{
			name:  "identity fields of the wrong type",
			files: files("x.yaml", "apiVersion: 1\nkind: [a]\nmetadata: {name: ''}\n"),
			want: []string{
				"x.yaml:1: apiVersion: must be a string, got number",
				"x.yaml:1: metadata.name: is required",
				"x.yaml:2: kind: must be a string, got list",
			},
		},
		{
			name: "resource structure",
			files: files("types.yaml", dbType, "db.yaml", `apiVersion: example.com/v1
kind: DatabaseCluster
metadata:
  name: Prod_DB
  namespace: -bad
  uid: 123
  labels: {team: 1, "app.kubernetes.io/name": [x]}
spec: [1]
status: {}
---
apiVersion: example.com
kind: DatabaseCluster
metadata: {name: pg}
`),
			want: []string{
				`db.yaml:4: metadata.name: invalid name "Prod_DB": must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters`,
				`db.yaml:5: metadata.namespace: invalid namespace "-bad": must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters`,
				`db.yaml:6: metadata: unknown field "uid"`,
				`db.yaml:7: metadata.labels.team: must be a string, got number`,
				`db.yaml:7: metadata.labels["app.kubernetes.io/name"]: must be a string, got list`,
				`db.yaml:8: spec: must be a mapping, got list`,
				`db.yaml:9: unknown field "status"`,
				`db.yaml:11: apiVersion: invalid apiVersion "example.com": must be <group>/<version>`,
			},
		},
		{
			name: "schema violations, each at its own line",
			files: files("types.yaml", dbType, "db.yaml", `apiVersion: example.com/v1
kind: DatabaseCluster
metadata:
  name: pg
spec:
  engine: oracle
  storage_gb: 5
  tags:
    - ok
    - 3
  backup:
    enabled: "yes"
  colour: blue
---
apiVersion: example.com/v1
kind: DatabaseCluster
metadata:
  name: pg2
spec:
  storage_gb: 20000
---
apiVersion: example.com/v1
kind: DatabaseCluster
metadata:
  name: pg3
`),
			want: []string{
				`db.yaml:6: spec.engine: value must be one of "postgres", "mysql"`,
				`db.yaml:7: spec.storage_gb: must be >= 10 but found 5`,
				`db.yaml:10: spec.tags[1]: expected string, but got number`,
				`db.yaml:12: spec.backup.enabled: expected boolean, but got string`,
				`db.yaml:13: spec: additionalProperties 'colour' not allowed`,
				`db.yaml:19: spec: missing properties: 'engine'`,
				`db.yaml:20: spec.storage_gb: must be <= 10000 but found 20000`,
				`db.yaml:22: spec: missing properties: 'engine', 'storage_gb'`,
			},
		},
		{
			name:  "unknown kind",
			files: files("db.yaml", "apiVersion: example.com/v1\nkind: Database\nmetadata: {name: pg}\n"),
			want:  []string{"db.yaml:2: kind: unknown kind Database (no ResourceType declares it)"},
		},
		{
			name:  "mistyped kind",
			files: files("types.yaml", dbType, "db.yaml", "apiVersion: example.com/v1\nkind: DatabseCluster\nmetadata: {name: pg}\n---\napiVersion: example.com/v1\nkind: databasecluster\nmetadata: {name: pg2}\n"),
			want: []string{
				"db.yaml:2: kind: unknown kind DatabseCluster (no ResourceType declares it; did you mean DatabaseCluster?)",
				"db.yaml:6: kind: unknown kind databasecluster (no ResourceType declares it; did you mean DatabaseCluster?)",
			},
		},
		{
			// The kinds of the resource's group first; another group's kind is named with
			// its group; equally close kinds are both named.
			name: "mistyped kind and groups",
			files: files("types.yaml", `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Bucket}
spec: {group: example.com, versions: [{name: v1, schema: {type: object}}], action: {name: a}}
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Buckets}
spec: {group: storage.example.com, versions: [{name: v1, schema: {type: object}}], action: {name: a}}
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Bat}
spec: {group: x.io, versions: [{name: v1, schema: {type: object}}], action: {name: a}}
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Cat}
spec: {group: x.io, versions: [{name: v1, schema: {type: object}}], action: {name: a}}
`, "r.yaml", `apiVersion: storage.example.com/v1
kind: Bucketz
metadata: {name: a}
---
apiVersion: example.com/v1
kind: Buckt
metadata: {name: b}
---
apiVersion: other.io/v1
kind: Buckett
metadata: {name: c}
---
apiVersion: x.io/v1
kind: Hat
metadata: {name: d}
`),
			want: []string{
				"r.yaml:2: kind: unknown kind Bucketz (no ResourceType declares it; did you mean Buckets?)",
				"r.yaml:6: kind: unknown kind Buckt (no ResourceType declares it; did you mean Bucket?)",
				"r.yaml:10: kind: unknown kind Buckett (no ResourceType declares it; did you mean Bucket of group example.com or Buckets of group storage.example.com?)",
				"r.yaml:14: kind: unknown kind Hat (no ResourceType declares it; did you mean Bat or Cat?)",
			},
		},
		{
			name: "wrong version or group",
			files: files("types.yaml", dbType, "db.yaml", `apiVersion: example.com/v3
kind: DatabaseCluster
metadata: {name: a}
---
apiVersion: example.org/v1
kind: DatabaseCluster
metadata: {name: b}
`),
			want: []string{
				"db.yaml:1: apiVersion: apiVersion example.com/v3 is not served by ResourceType DatabaseCluster (available: example.com/v1, example.com/v2)",
				"db.yaml:5: apiVersion: apiVersion example.org/v1 is not served by ResourceType DatabaseCluster (available: example.com/v1, example.com/v2)",
			},
		},
		{
			name: "duplicate identity across two files",
			files: files("types.yaml", dbType,
				"a.yaml", "apiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata: {name: pg}\nspec: {engine: mysql, storage_gb: 10}\n",
				"b/c.yaml", "# other team\napiVersion: example.com/v2\nkind: DatabaseCluster\nmetadata: {name: pg, namespace: default}\n",
				"b/d.yaml", "apiVersion: example.com/v2\nkind: DatabaseCluster\nmetadata: {name: pg, namespace: other}\n",
			),
			want: []string{
				"a.yaml:1: duplicate resource default/DatabaseCluster/pg (also declared at b/c.yaml:2)",
				"b/c.yaml:2: duplicate resource default/DatabaseCluster/pg (also declared at a.yaml:1)",
			},
		},
		{
			name: "same content under two paths",
			files: files("types.yaml", dbType,
				"a/db.yaml", "apiVersion: example.com/v2\nkind: DatabaseCluster\nmetadata: {name: pg}\n",
				"b/db.yaml", "apiVersion: example.com/v2\nkind: DatabaseCluster\nmetadata: {name: pg}\n",
			),
			want: []string{
				"a/db.yaml:1: duplicate resource default/DatabaseCluster/pg (also declared at b/db.yaml:1)",
				"b/db.yaml:1: duplicate resource default/DatabaseCluster/pg (also declared at a/db.yaml:1)",
			},
		},
		{
			name:  "duplicate type",
			files: files("types.yaml", dbType, "more/types.yaml", "---\n"+dbType),
			want: []string{
				"more/types.yaml:2: duplicate ResourceType DatabaseCluster (also declared at types.yaml:1)",
				"types.yaml:1: duplicate ResourceType DatabaseCluster (also declared at more/types.yaml:2)",
			},
		},
		{
			name: "type structure",
			files: files("t.yaml", `apiVersion: trueup.dev/v2
kind: ResourceType
metadata: {name: database, namespace: x}
spec:
  group: Example.com
  versions:
    - name: v1
      schema: {type: object}
    - name: v1
      schema: {type: object}
    - name: V2
      schema: {type: object}
    - name: v3
      extra: true
  action: {with: [workflow]}
  resyncInterval: 5
  owner: me
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: ResourceType}
spec:
  group: trueup.dev
  versions: []
  action: {name: x}
  resyncInterval: -1m
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Empty}
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Sparse}
spec:
  resyncInterval: soon
`),
			want: []string{
				"t.yaml:1: apiVersion: must be trueup.dev/v1 for kind ResourceType",
				`t.yaml:3: metadata: unknown field "namespace"`,
				`t.yaml:3: metadata.name: invalid kind name "database": must start with an uppercase letter, contain only letters and digits and be at most 63 characters`,
				`t.yaml:5: spec.group: invalid group "Example.com": must be a DNS subdomain: dot-separated DNS labels, at most 253 characters`,
				`t.yaml:9: spec.versions[1].name: duplicate version "v1" (also spec.versions[0])`,
				`t.yaml:11: spec.versions[2].name: invalid version name "V2": must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters`,
				`t.yaml:13: spec.versions[3].schema: is required`,
				`t.yaml:14: spec.versions[3]: unknown field "extra"`,
				`t.yaml:15: spec.action.name: is required`,
				`t.yaml:15: spec.action.with: must be a mapping, got list`,
				`t.yaml:16: spec.resyncInterval: invalid duration "5": must be a Go duration such as 30s, 10m or 1h, or 0 to turn resync off`,
				`t.yaml:17: spec: unknown field "owner"`,
				`t.yaml:21: metadata.name: ResourceType is reserved`,
				`t.yaml:23: spec.group: group trueup.dev is reserved`,
				`t.yaml:24: spec.versions: must list at least one version`,
				`t.yaml:26: spec.resyncInterval: invalid duration "-1m": must not be negative`,
				`t.yaml:28: spec: is required`,
				`t.yaml:35: spec.action: is required`,
				`t.yaml:35: spec.group: is required`,
				`t.yaml:35: spec.versions: is required`,
				`t.yaml:36: spec.resyncInterval: invalid duration "soon": must be a Go duration such as 30s, 10m or 1h, or 0 to turn resync off`,
			},
		},
		{
			name: "schema that does not compile",
			files: files("t.yaml", `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Thing}
spec:
  group: example.com
  versions:
    - name: v1
      schema:
        type: object
        properties:
          size:
            type: int
    - name: v2
      schema: {properties: {id: {pattern: "("}}}
    - name: v3
      schema: {$ref: "https://example.com/schema.json"}
    - name: v4
      schema: {$ref: "#/$defs/missing"}
  action: {name: noop}
`, "r.yaml", "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: a}\n"),
			want: []string{
				`t.yaml:12: spec.versions[0].schema: invalid schema at properties.size.type: value must be one of "array", "boolean", "integer", "null", "number", "object", "string"`,
				`t.yaml:14: spec.versions[1].schema: invalid schema at properties.id.pattern: '(' is not valid 'regex'`,
				`t.yaml:16: spec.versions[2].schema: invalid schema: $ref to https://example.com/schema.json: a schema cannot reference other documents`,
				`t.yaml:18: spec.versions[3].schema: invalid schema: #/$defs/missing not found`,
			},
		},
		{
			name:  "broken yaml",
			files: files("types.yaml", dbType, "bad.yaml", "apiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata:\n  name: [pg\n"),
			want:  []string{"bad.yaml:4: invalid yaml: did not find expected ',' or ']'"},
		},
		{
			name: "drift policy",
			files: files("t.yaml", `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Thing}
spec:
  group: example.com
  versions: [{name: v1, schema: {type: object}}]
  action: {name: a}
  drift:
    mode: ignore
    ignore:
      - /tags
      - tags
      - 3
      - /a~2
    why: x
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Other}
spec:
  group: example.com
  versions: [{name: v1, schema: {type: object}}]
  action: {name: a}
  drift: {mode: 1, ignore: /tags}
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Third}
spec:
  group: example.com
  versions: [{name: v1, schema: {type: object}}]
  action: {name: a}
  drift: detect
`),
			want: []string{
				`t.yaml:9: spec.drift.mode: unknown drift mode "ignore": must be remediate, detect or notify`,
				`t.yaml:12: spec.drift.ignore[1]: "tags" is not a JSON pointer: it must start with "/" (such as /tags)`,
				`t.yaml:13: spec.drift.ignore[2]: must be a string, got number`,
				`t.yaml:14: spec.drift.ignore[3]: "/a~2" is not a JSON pointer: "~" must be written ~0 (and "/" in a key ~1)`,
				`t.yaml:15: spec.drift: unknown field "why"`,
				`t.yaml:24: spec.drift.ignore: must be a list of JSON pointers, got string`,
				`t.yaml:24: spec.drift.mode: must be a string, got number`,
				`t.yaml:33: spec.drift: must be a mapping, got string`,
			},
		},
		{
			name: "action rejected by CheckAction",
			files: files("a.yaml", strings.Replace(dbType, "provision", "missing", 1),
				"b.yaml", strings.ReplaceAll(dbType, "DatabaseCluster", "Other"),
				"c.yaml", strings.ReplaceAll(dbType, "DatabaseCluster", "Third"),
				"d.yaml", strings.ReplaceAll(dbType, "DatabaseCluster", "Fourth"),
			),
			opts: Options{CheckAction: func(name string, with json.RawMessage) error {
				switch {
				case name == "missing":
					return errors.New(`unknown action "missing"`)
				case !bytes.Equal(with, []byte(`{"workflow":"database.yml"}`)):
					return errors.New("with is not canonical")
				}
				return nil
			}},
			want: []string{`a.yaml:25: spec.action: unknown action "missing"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			set, err := NewLoader().Load(tt.files, tt.opts)
			if set != nil {
				t.Errorf("Load returned a set along with errors")
			}
			got := problems(t, err)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestDriftPolicy: spec.drift as a type of the set holds it (absent: nil, remediate).
func TestDriftPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, drift string
		want        *DriftPolicy
	}{
		{"absent", "", nil},
		{"null", "  drift: null\n", nil},
		{"empty: remediate", "  drift: {}\n", &DriftPolicy{Mode: DriftRemediate}},
		{"detect", "  drift: {mode: detect}\n", &DriftPolicy{Mode: DriftDetect}},
		{"notify, ignoring", "  drift: {mode: notify, ignore: [/tags, /a~1b/c~0]}\n", &DriftPolicy{Mode: DriftNotify, Ignore: []string{"/tags", "/a~1b/c~0"}}},
		{"ignore alone", "  drift: {ignore: [/tags]}\n", &DriftPolicy{Mode: DriftRemediate, Ignore: []string{"/tags"}}},
	} {
		set, err := NewLoader().Load(files("t.yaml", dbType+tc.drift), Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := set.Types[0].Drift; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: drift %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestCheckActionPaths: a CheckAction error is placed at spec.action, spec.action.with or
// the field of with it names, on the line of that key (the deepest one written).
func TestCheckActionPaths(t *testing.T) {
	t.Parallel()
	// action: at line 25, with: at 27, with's ref at 28, workflow at 29, inputs' second
	// item at 32 and variables' app.io/x key at 34.
	typ := strings.Replace(dbType, "with: {workflow: database.yml}", "with:\n      ref: main\n      workflow: database.yml\n"+
		"      inputs:\n        - a\n        - b\n      variables:\n        app.io/x: y", 1)
	tests := []struct {
		err      string
		wantLine int
		wantPath string
		wantMsg  string
	}{
		{`unknown action "x"`, 25, "spec.action", `unknown action "x"`},
		{"with: inputz is required", 27, "spec.action.with", "inputz is required"}, // not written: with:'s line
		{`with: ref "x" is not a valid ref`, 28, "spec.action.with", `ref "x" is not a valid ref`},
		{`with.inputs[1]: must be a word`, 32, "spec.action.with.inputs[1]", "must be a word"},
		{`with.variables["app.io/x"]: not allowed`, 34, `spec.action.with.variables["app.io/x"]`, "not allowed"},
		{`with.variables["app.io/x"].deeper: not allowed`, 34, `spec.action.with.variables["app.io/x"].deeper`, "not allowed"},
		{"with.workflow: must end in .yml", 29, "spec.action.with.workflow", "must end in .yml"},
		{"with.ref: not allowed", 28, "spec.action.with.ref", "not allowed"},
		{"with.outputs: is required", 27, "spec.action.with.outputs", "is required"}, // not written: with:'s line
		{`action "x": with: bad`, 27, "spec.action.with", `action "x": with: bad`},
	}
	for _, tt := range tests {
		set, err := NewLoader().Load(files("t.yaml", typ), Options{
			CheckAction: func(string, json.RawMessage) error { return errors.New(tt.err) },
		})
		want := []string{fmt.Sprintf("t.yaml:%d: %s: %s", tt.wantLine, tt.wantPath, tt.wantMsg)}
		if got := problems(t, err); set != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("CheckAction error %q: got %q, want %q", tt.err, got, want)
		}
	}
}

func TestParsePath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]path{
		"ref":                   {"ref"},
		"inputs[1]":             {"inputs", 1},
		"a.b[0][2].c":           {"a", "b", 0, 2, "c"},
		`variables["app.io/x"]`: {"variables", "app.io/x"},
		`variables["a\"b"].c`:   {"variables", `a"b`, "c"},
		`["x y"]`:               {"x y"},
		"":                      nil,
		"a.":                    nil,
		"a..b":                  nil,
		"a.[1]":                 nil,
		"a[x]":                  nil,
		"a[1":                   nil,
		`a["b]`:                 nil,
		"two words":             nil,
	} {
		got, ok := parsePath(in)
		if ok != (want != nil) || !reflect.DeepEqual(got, want) && want != nil {
			t.Errorf("parsePath(%q) = %v, %v; want %v", in, got, ok, want)
		}
		if ok && got.String() != in {
			t.Errorf("parsePath(%q).String() = %q", in, got.String())
		}
	}
}

func TestLimitsThroughLoad(t *testing.T) {
	t.Parallel()
	big := "apiVersion: example.com/v1\n" + strings.Repeat("# padding\n", 110_000)
	_, err := NewLoader().Load(files("types.yaml", dbType,
		"big.yaml", big,
		"deep.yaml", nested(101),
		"lol.yaml", billionLaughs,
	), Options{})
	want := []string{
		"big.yaml: file is larger than the 1 MiB limit",
		"deep.yaml:4: spec" + strings.Repeat(".a", 99) + ": nesting deeper than 100 levels",
		"lol.yaml:9: spec.e[0]: aliases expand to more than 10000 nodes",
	}
	if got := problems(t, err); !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestKnownTypes(t *testing.T) {
	t.Parallel()
	types, err := NewLoader().Load(files("types.yaml", dbType), Options{})
	if err != nil {
		t.Fatal(err)
	}
	known := Options{KnownTypes: types.Types}
	res := "apiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata: {name: pg}\nspec: {engine: mysql, storage_gb: 10}\n"

	set, err := NewLoader().Load(files("db.yaml", res), known)
	if err != nil {
		t.Fatalf("resource of a known type: %v", err)
	}
	if len(set.Types) != 0 || len(set.Resources) != 1 || string(set.Resources[0].Spec) != `{"engine":"mysql","replicas":1,"storage_gb":10}` {
		t.Errorf("set = %+v", set)
	}

	// A type declared in the files replaces the known one of the same name.
	moved := strings.Replace(dbType, "group: example.com", "group: example.org", 1)
	_, err = NewLoader().Load(files("db.yaml", res, "types.yaml", moved), known)
	want := []string{"db.yaml:1: apiVersion: apiVersion example.com/v1 is not served by ResourceType DatabaseCluster (available: example.org/v1, example.org/v2)"}
	if got := problems(t, err); !reflect.DeepEqual(got, want) {
		t.Errorf("errors = %q, want %q", got, want)
	}
}

func TestCache(t *testing.T) {
	t.Parallel()
	db := `apiVersion: example.com/v1
kind: DatabaseCluster
metadata:
  name: pg
spec:
  engine: postgres
  storage_gb: 50
`
	l := NewLoader()
	fs := files("types.yaml", dbType, "db.yaml", db)
	first, err := l.Load(fs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cached := l.files[fs[1].Hash]

	second, err := l.Load(fs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, second) {
		t.Errorf("second load differs:\n%+v\n%+v", first, second)
	}
	if l.files[fs[1].Hash] != cached {
		t.Error("unchanged file was parsed again")
	}

	// A schema change re-validates the cached resource, with lines from its file.
	stricter := files("types.yaml", strings.Replace(dbType, "minimum: 10,", "minimum: 100,", 1), "db.yaml", db)
	_, err = l.Load(stricter, Options{})
	want := []string{"db.yaml:7: spec.storage_gb: must be >= 100 but found 50"}
	if got := problems(t, err); !reflect.DeepEqual(got, want) {
		t.Errorf("after schema change: errors = %q, want %q", got, want)
	}
	if l.files[fs[1].Hash] != cached {
		t.Error("unchanged resource file was parsed again after a schema change")
	}

	// A new default changes the stored spec and its hash.
	moreDefaults := files("types.yaml", strings.Replace(dbType, "default: 1}", "default: 3}", 1), "db.yaml", db)
	fourth, err := l.Load(moreDefaults, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if fourth.Resources[0].SpecHash == first.Resources[0].SpecHash || !strings.Contains(string(fourth.Resources[0].Spec), `"replicas":3`) {
		t.Errorf("spec after default change = %s", fourth.Resources[0].Spec)
	}

	// Only what the latest load used stays cached.
	if _, err := l.Load(files("types.yaml", dbType), Options{}); err != nil {
		t.Fatal(err)
	}
	if len(l.files) != 1 || len(l.schemas) != 2 {
		t.Errorf("cache holds %d files and %d schemas, want 1 and 2", len(l.files), len(l.schemas))
	}

	// Without hashes, content identifies files.
	noHash := []sources.File{{Path: "types.yaml", Data: []byte(dbType)}, {Path: "db.yaml", Data: []byte(db)}}
	again, err := l.Load(noHash, Options{})
	if err != nil || len(again.Files) != len(first.Files) {
		t.Fatalf("load without hashes: %v, files %v", err, again.Files)
	}
	again.Files, first.Files = nil, nil // the hashes made from content are not the source's
	if !reflect.DeepEqual(again, first) {
		t.Errorf("load without hashes: %+v", again)
	}

	// A caller replacing a resource's fields (sealed.Revision.Redact does, for encrypted
	// files) must not reach the next Set: those files' resources are never reused.
	sealedFS := files("types.yaml", dbType, "db.yaml", db)
	sealedOpts := Options{Rewritten: map[string]bool{"db.yaml": true}}
	redacted, err := l.Load(sealedFS, sealedOpts)
	if err != nil {
		t.Fatal(err)
	}
	redacted.Resources[0].Spec = json.RawMessage(`{"engine":"*** sops:x"}`)
	third, _ := l.Load(sealedFS, sealedOpts)
	third.Files = nil
	if !reflect.DeepEqual(first, third) {
		t.Error("changing a returned Set's encrypted resource changed the next one")
	}
}

// A Loader reuses what it parsed and checked before; whatever the history, a load must give
// what a fresh Loader gives for the same files.
func TestCachedLoadMatchesCold(t *testing.T) {
	t.Parallel()
	a := `apiVersion: example.com/v1
kind: DatabaseCluster
metadata:
  name: pg
  namespace: team-a
  labels: {team: a, tier: gold}
  annotations: {note: "<first> & \"only\""}
spec: {engine: postgres, storage_gb: 50, backup: {window: "03:00"}}
---
apiVersion: example.com/v1
kind: DatabaseCluster
metadata: {name: my, namespace: team-a, labels: {tier: gold, team: a}}
spec: {engine: mysql, storage_gb: 200}
`
	b := "apiVersion: example.com/v2\nkind: DatabaseCluster\nmetadata: {name: pg, labels: {team: b}}\n"
	c := `{"apiVersion": "example.com/v1", "kind": "DatabaseCluster", "metadata": {"name": "js"}, "spec": {"engine": "postgres", "storage_gb": 10.0}}`
	moreDefaults := strings.Replace(dbType, "default: 1}", "default: 3}", 1)
	stricter := strings.Replace(dbType, "minimum: 10,", "minimum: 100,", 1)
	// Resources that sort before, between and after those of a, b and c: a load that
	// changes one file merges its resources into the kept order.
	db := func(namespace, name string) string {
		return fmt.Sprintf("apiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata: {name: %s, namespace: %s}\nspec: {engine: postgres, storage_gb: 10}\n", name, namespace)
	}
	d := strings.Join([]string{db("team-a", "mx"), db("a", "first"), db("zz", "last"), db("team-a", "a0")}, "---\n")
	dRenamed := strings.Join([]string{db("team-a", "aa"), db("zz", "first"), db("a", "last"), db("team-a", "zz")}, "---\n")
	aFirstOnly, aSecond, _ := strings.Cut(a, "---\n")

	revisions := []struct {
		name  string
		files []sources.File
	}{
		{"first", files("types.yaml", dbType, "apps/a.yaml", a, "apps/b.yaml", b, "c.json", c)},
		{"spec changed", files("types.yaml", dbType, "apps/a.yaml", strings.Replace(a, "storage_gb: 200", "storage_gb: 300", 1), "apps/b.yaml", b, "c.json", c)},
		{"file moved", files("types.yaml", dbType, "apps/a.yaml", a, "apps/moved/b.yaml", b, "c.json", c)},
		{"labels changed", files("types.yaml", dbType, "apps/a.yaml", a, "apps/b.yaml", strings.Replace(b, "team: b", "team: c", 1), "c.json", c)},
		{"default changed", files("types.yaml", moreDefaults, "apps/a.yaml", a, "apps/b.yaml", b, "c.json", c)},
		{"schema tightened", files("types.yaml", stricter, "apps/a.yaml", a, "apps/b.yaml", b, "c.json", c)},
		{"same content twice", files("types.yaml", dbType, "apps/a.yaml", a, "apps/b.yaml", b, "c.json", c, "copy/a.yaml", a)},
		{"type gone", files("apps/a.yaml", a, "apps/b.yaml", b, "c.json", c)},
		{"back", files("types.yaml", dbType, "apps/a.yaml", a, "apps/b.yaml", b, "c.json", c)},
		{"file added between", files("types.yaml", dbType, "apps/a.yaml", a, "apps/b.yaml", strings.Replace(b, "v2", "v1", 1)+"spec: {engine: postgres, storage_gb: 10}\n", "c.json", c, "apps/d.yaml", d)},
		{"file renames its resources", files("types.yaml", dbType, "apps/a.yaml", a, "apps/b.yaml", b, "c.json", c, "apps/d.yaml", dRenamed)},
		{"resource moved to another file", files("types.yaml", dbType, "apps/a.yaml", aFirstOnly, "apps/b.yaml", b, "c.json", c, "apps/d.yaml", dRenamed+"---\n"+aSecond)},
		{"file removed", files("types.yaml", dbType, "apps/a.yaml", a, "c.json", c, "apps/d.yaml", d)},
	}
	l := NewLoader()
	for _, rev := range revisions {
		cached, cachedErr := l.Load(rev.files, Options{})
		cold, coldErr := NewLoader().Load(rev.files, Options{})
		if !reflect.DeepEqual(cached, cold) {
			t.Errorf("%s: cached load differs from a cold one:\n%+v\n%+v", rev.name, cached, cold)
		}
		if got, want := problems(t, cachedErr), problems(t, coldErr); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: cached load errors:\n%s\ncold load errors:\n%s", rev.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func TestLoadConcurrent(t *testing.T) {
	t.Parallel()
	l := NewLoader()
	fs := files("types.yaml", dbType, "db.yaml", "apiVersion: example.com/v2\nkind: DatabaseCluster\nmetadata: {name: pg}\n")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if _, err := l.Load(fs, Options{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestLoadDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("types.yml", dbType)
	write("apps/prod/db.yaml", "apiVersion: example.com/v2\nkind: DatabaseCluster\nmetadata: {name: pg}\n")
	write("apps/notes.txt", "not read")
	write(".git/config.yaml", "broken: [")
	write("apps/.cache/x.json", "{")

	set, err := NewLoader().LoadDir(dir, Options{})
	if err != nil {
		t.Fatalf("LoadDir: %v", err)
	}
	if len(set.Resources) != 1 || set.Resources[0].File != "apps/prod/db.yaml" || set.Types[0].File != "types.yml" {
		t.Errorf("set = %+v", set)
	}

	write("apps/prod/bad.json", `{"apiVersion": "example.com/v2", "kind": "DatabaseCluster", "metadata": {"name": "pg"}}`)
	_, err = NewLoader().LoadDir(dir, Options{})
	want := []string{
		"apps/prod/bad.json:1: duplicate resource default/DatabaseCluster/pg (also declared at apps/prod/db.yaml:1)",
		"apps/prod/db.yaml:1: duplicate resource default/DatabaseCluster/pg (also declared at apps/prod/bad.json:1)",
	}
	if got := problems(t, err); !reflect.DeepEqual(got, want) {
		t.Errorf("errors = %q, want %q", got, want)
	}

	if _, err := NewLoader().LoadDir(filepath.Join(dir, "missing"), Options{}); err == nil || errors.As(err, new(Errors)) {
		t.Errorf("missing dir: err = %v, want a plain error", err)
	}
}

// TestBigIntegersThroughLoad: an integer beyond int64 passes `type: integer` and reaches the
// resource's spec with every digit; one beyond the schema's maximum is refused as such.
func TestBigIntegersThroughLoad(t *testing.T) {
	t.Parallel()
	set, err := NewLoader().Load(files("types.yaml", dbType, "db.yaml", `apiVersion: example.com/v1
kind: DatabaseCluster
metadata: {name: pg}
spec: {engine: postgres, storage_gb: 50, replicas: 123456789012345678901234567890}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if spec := string(set.Resources[0].Spec); !strings.Contains(spec, `"replicas":123456789012345678901234567890`) {
		t.Errorf("spec %s lost the integer's digits", spec)
	}
	_, err = NewLoader().Load(files("types.yaml", dbType, "db.yaml", `apiVersion: example.com/v1
kind: DatabaseCluster
metadata: {name: pg}
spec: {engine: postgres, storage_gb: 123456789012345678901234567890}
`), Options{})
	if got := strings.Join(problems(t, err), "\n"); !strings.Contains(got, "db.yaml:4: spec.storage_gb") {
		t.Errorf("over the maximum: %q, want an error naming db.yaml:4 spec.storage_gb", got)
	}
}

// TestDuplicatesWhenHashesCollide: match keys identities by a hash; with every identity's
// hash the same, distinct resources still load, and each duplicate is reported at each of its
// places, as with the real hash.
func TestDuplicatesWhenHashesCollide(t *testing.T) {
	widget := func(name, ns string) string {
		return fmt.Sprintf("---\napiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: %s, namespace: %s}\nspec: {size: 1}\n", name, ns)
	}
	distinct := files("types/widget.yaml", benchWidgetType, "a.yaml", widget("a", "x")+widget("b", "x")+widget("a", "y"), "b.yaml", widget("c", "x"))
	dups := files("types/widget.yaml", benchWidgetType, "a.yaml", widget("a", "x")+widget("b", "x")+widget("a", "x"), "b.yaml", widget("b", "x")+widget("a", "x"))
	want := []string{
		"a.yaml:2: duplicate resource x/Widget/a (also declared at a.yaml:12, b.yaml:7)",
		"a.yaml:12: duplicate resource x/Widget/a (also declared at a.yaml:2, b.yaml:7)",
		"a.yaml:7: duplicate resource x/Widget/b (also declared at b.yaml:2)",
		"b.yaml:2: duplicate resource x/Widget/b (also declared at a.yaml:7)",
		"b.yaml:7: duplicate resource x/Widget/a (also declared at a.yaml:2, a.yaml:12)",
	}
	slices.Sort(want)
	check := func(how string) {
		set, err := NewLoader().Load(distinct, Options{})
		if err != nil || set.Len() != 4 {
			t.Fatalf("%s: distinct resources: %v", how, err)
		}
		_, err = NewLoader().Load(dups, Options{})
		got := problems(t, err)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: duplicates:\n%s\nwant\n%s", how, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	check("the identities' hashes")
	defer func(h func(maphash.Seed, identity) uint64) { identityHash = h }(identityHash)
	identityHash = func(maphash.Seed, identity) uint64 { return 7 }
	check("one hash for every identity")
}
