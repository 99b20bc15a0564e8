package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/graph"
)

// A resource of dbType, as the seeds pair them.
const fuzzResource = `apiVersion: example.com/v1
kind: DatabaseCluster
metadata:
  name: orders
  namespace: shop
  labels: {team: payments, tier: "1"}
  annotations: {note: "x"}
spec:
  engine: postgres
  storage_gb: 100
  tags: [a, b]
  backup: {window: "03:00"}
`

// celFuzzType carries x-trueup-validations at several levels, so that CEL is fuzzed too.
const celFuzzType = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Policy}
spec:
  group: example.com
  action: {name: a}
  versions:
    - name: v1
      schema:
        type: object
        x-trueup-validations:
          - {rule: "self.min <= self.max", message: "min must not exceed max"}
          - {rule: "!has(oldSelf.engine) || self.engine == oldSelf.engine", message: "engine is immutable", fieldPath: ".engine"}
        properties:
          min: {type: integer}
          max: {type: integer}
          engine: {type: string, x-trueup-validations: [{rule: "self == oldSelf"}]}
          ports:
            type: array
            items:
              type: object
              x-trueup-validations: [{rule: "self.port > 0 && self.port < 65536", message: "port out of range"}]
          labels:
            type: object
            additionalProperties: {type: string, x-trueup-validations: [{rule: "self.size() > 0"}]}
`

// maxFuzzSpec bounds an accepted spec's canonical JSON: the loader caps a document's
// decoded size at 1 MiB, and JSON spells a decoded byte in at most 6 (\u00XX).
const maxFuzzSpec = 6*maxDecodedSize + 1<<10

// slowInput is far beyond what a fuzz input (kilobytes) should cost: a hostile commit must
// not buy seconds of the controller's CPU with a small file.
const slowInput = time.Second

// FuzzLoad loads a ResourceType file and a resource file. Whatever the bytes, Load must not
// panic; a rejection lists problems each naming one of the files, at a line inside it; an
// accepted Set holds canonical, valid JSON whose hashes match; and a second Load on the
// warm caches gives exactly what the cold one gave.
func FuzzLoad(f *testing.F) {
	f.Add(dbType, fuzzResource)
	f.Add(dbType, "apiVersion: example.com/v2\nkind: DatabaseCluster\nmetadata: {name: a}\nspec: {x: [1, 2.5, -3e2, 123456789012345678901234567890]}\n")
	f.Add(dbType, "apiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata: {name: b}\nspec: {engine: oracle, storage_gb: 5}\n")
	f.Add(dbType, "---\n"+fuzzResource+"---\n"+strings.Replace(fuzzResource, "orders", "orders2", 1))
	f.Add(dbType, "a: &a [x, x, x]\nb: &b [*a, *a, *a]\nspec: [*b, *b, *b]\n")
	f.Add(dbType, "apiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata: {name: c}\nspec: {engine: postgres, storage_gb: 10, storage_gb: 11}\n")
	f.Add("apiVersion: trueup.dev/v1\nkind: ResourceType\nmetadata: {name: Bucket}\nspec:\n  group: example.com\n  versions: [{name: v1, schema: {type: object, properties: {n: {type: string, pattern: '^[a-z'}}}}]\n  action: {name: s3}\n",
		"apiVersion: example.com/v1\nkind: Bucket\nmetadata: {name: logs}\nspec: {n: x}\n")
	f.Add("apiVersion: trueup.dev/v1\nkind: ResourceType\nmetadata: {name: Thing}\nspec:\n  group: example.com\n  versions: [{name: v1, schema: {type: object, properties: {items: {type: array, items: {type: object, default: {}, properties: {d: {type: string, default: zz}}}}}}}]\n  action: {name: a, with: {ref: main}}\n  resyncInterval: 0s\n",
		"apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {items: [{}, {d: y}, {}]}\n")
	f.Add(celFuzzType, "apiVersion: example.com/v1\nkind: Policy\nmetadata: {name: p}\nspec: {min: 5, max: 3, engine: pg, ports: [{port: 80}, {port: 0}], labels: {a: x, b: \"\"}, big: 123456789012345678901234567890}\n")
	f.Add(celFuzzType, "apiVersion: example.com/v1\nkind: Policy\nmetadata: {name: q}\nspec: {min: 1, max: 2, engine: {secretRef: {name: db, key: engine}}, ports: [{port: 1.5}]}\n")
	f.Add(strings.Replace(celFuzzType, "self.min <= self.max", "self.min <=", 1), "apiVersion: example.com/v1\nkind: Policy\nmetadata: {name: r}\nspec: {}\n")
	f.Add(celFuzzType, "apiVersion: example.com/v1\nkind: Policy\nmetadata: {name: p}\ndependsOn: [{kind: Policy, name: q}, {kind: Net, namespace: x, name: n}]\nspec: {min: '${{ Net/n.outputs.min }}', max: 3, engine: 'pg-${{ Policy/q.outputs.e }}', labels: {a: '$${{ x }}'}}\n---\napiVersion: example.com/v1\nkind: Policy\nmetadata: {name: q}\nspec: {ports: [{port: '${{ Policy/p.outputs.port }}'}]}\n")
	f.Add(celFuzzType, "apiVersion: example.com/v1\nkind: Policy\nmetadata: {name: p}\ndependsOn: [{kind: Policy, name: p}, {kind: 1}, x]\nspec: {min: '${{ Policy/p.outputs.x }}', max: '${{ a', engine: '${{ Policy/q.outputs }}'}\n")
	f.Add("", "")
	f.Add("\t", "[")
	f.Add("apiVersion: trueup.dev/v1\nkind: ResourceType\n", "!!binary aGVsbG8=\n")

	f.Fuzz(func(t *testing.T, typeYAML, resYAML string) {
		fs := files("types.yaml", typeYAML, "db/res.yaml", resYAML)
		l := NewLoader()
		start := time.Now()
		defer func() {
			if d := time.Since(start); d > slowInput {
				t.Fatalf("Load and checks of %d+%d bytes took %v", len(typeYAML), len(resYAML), d)
			}
		}()
		set, err := l.Load(fs, Options{})
		if err != nil {
			checkErrors(t, err, map[string]string{"types.yaml": typeYAML, "db/res.yaml": resYAML})
		} else {
			checkSet(t, set)
		}
		if cands := set.TransitionCandidates(); len(cands) > 0 {
			old := map[ResourceKey]json.RawMessage{}
			for _, r := range cands {
				old[r.Key()] = json.RawMessage(`{"min":1,"max":9,"engine":"other","ports":[{"port":1}],"labels":{"a":"y"}}`)
			}
			if err := l.CheckTransitions(set, old); err != nil {
				checkErrors(t, err, map[string]string{"types.yaml": typeYAML, "db/res.yaml": resYAML})
			}
		}
		set2, err2 := l.Load(fs, Options{})
		if !reflect.DeepEqual(set, set2) || !sameError(err, err2) {
			t.Fatalf("warm load differs from cold:\ncold %+v %v\nwarm %+v %v", set, err, set2, err2)
		}
	})
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Error() == b.Error()
}

func checkErrors(t *testing.T, err error, contents map[string]string) {
	t.Helper()
	var errs Errors
	if !errors.As(err, &errs) || len(errs) == 0 {
		t.Fatalf("error is not a non-empty manifest.Errors: %T %v", err, err)
	}
	for _, ve := range errs {
		data, ok := contents[ve.File]
		if !ok {
			t.Fatalf("problem names no loaded file: %q", ve.Error())
		}
		if lines := lastLine([]byte(data)); ve.Line < 0 || ve.Line > lines {
			t.Fatalf("problem at line %d of a %d-line file: %q", ve.Line, lines, ve.Error())
		}
		if ve.Msg == "" {
			t.Fatalf("problem without a message: %+v", ve)
		}
	}
}

func checkSet(t *testing.T, set *Set) {
	t.Helper()
	canonical := func(what string, b json.RawMessage) {
		if !json.Valid(b) {
			t.Fatalf("%s is not valid JSON: %q", what, b)
		}
		c, err := Canonical(b)
		if err != nil {
			t.Fatalf("%s does not re-canonicalise: %v", what, err)
		}
		if !bytes.Equal(c, b) {
			t.Fatalf("%s is not canonical:\n%s\n%s", what, b, c)
		}
	}
	for _, rt := range set.Types {
		canonical("type spec", rt.Spec)
		for _, v := range rt.Versions {
			canonical("version schema", v.Schema)
		}
		if rt.Action.With != nil {
			canonical("action with", rt.Action.With)
		}
	}
	for _, r := range set.Resources {
		canonical("resource spec", r.Spec)
		if len(r.Spec) > maxFuzzSpec {
			t.Fatalf("accepted spec of %d bytes", len(r.Spec))
		}
		if r.SpecHash != hashJSON(r.Spec) {
			t.Fatalf("SpecHash %s does not match the spec", r.SpecHash)
		}
		if r.Labels == nil || r.Annotations == nil || r.Namespace == "" || r.Name == "" || r.Line < 1 {
			t.Fatalf("incomplete resource %+v", r)
		}
		// DependsOn is what Dependencies makes of the resource's spec and explicit targets.
		self := graph.ID{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
		var explicit []graph.ID
		for i, d := range r.DependsOn {
			if i > 0 && compareIDs(r.DependsOn[i-1].Target, d.Target) >= 0 || sameID(d.Target, self) || d.Target.Namespace == "" {
				t.Fatalf("DependsOn not sorted, repeated or naming the resource: %+v", r.DependsOn)
			}
			if d.Explicit {
				explicit = append(explicit, d.Target)
			}
		}
		if deps, err := Dependencies(self, explicit, r.Spec); err != nil || !reflect.DeepEqual(deps, r.DependsOn) {
			t.Fatalf("Dependencies = %+v, %v; DependsOn %+v", deps, err, r.DependsOn)
		}
	}
}

// FuzzParseStream converts arbitrary bytes as one file. It must not panic; every document
// kept converts to JSON within the decoded size bound; every problem is at a line inside
// the file.
func FuzzParseStream(f *testing.F) {
	f.Add([]byte(dbType))
	f.Add([]byte(fuzzResource))
	f.Add([]byte("---\n---\na: 1\n...\n---\n- [1, {b: ~}]\n"))
	f.Add([]byte("a: &x {k: v}\nb: *x\nc: {<<: *x, k2: w}\n"))
	f.Add([]byte("a: !!binary aGVsbG8=\nb: !custom x\nc: 0x1F\nd: 1_000\ne: .inf\nf: 2026-11-23\n"))
	f.Add([]byte("? [a, b]\n: c\n"))
	f.Add([]byte("a: 'unterminated\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		docs, errs := parseStream(data)
		if d := time.Since(start); d > slowInput {
			t.Fatalf("parseStream of %d bytes took %v", len(data), d)
		}
		lines := lastLine(data)
		for _, ve := range errs {
			if ve.Line < 0 || ve.Line > lines || ve.Msg == "" || ve.File != "" {
				t.Fatalf("bad problem %+v in a %d-line file", ve, lines)
			}
		}
		for _, d := range docs {
			b, err := json.Marshal(d.value)
			if err != nil {
				t.Fatalf("document %d does not encode: %v", d.index, err)
			}
			if len(b) > maxFuzzSpec {
				t.Fatalf("document %d decodes to %d bytes", d.index, len(b))
			}
		}
	})
}
