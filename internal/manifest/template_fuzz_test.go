package manifest

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// FuzzTemplate compiles a document as a ResourceSet template and evaluates it with each
// input of an inputs file: appendJSON must spell what marshalCanonical spells for value(),
// fail exactly when value() fails, and name only keys refs() lists.
func FuzzTemplate(f *testing.F) {
	f.Add(typicalTemplate, tenantInput)
	f.Add("v: {a: '<< inputs.db >>', b: 'x-<< inputs.db.host >>-<<inputs.db.port>>', c: [\"<< inputs.zones >>\", 1.50]}", tenantInput)
	f.Add("v: '${{ Network/net-<< inputs.region >>.outputs.id }}'\nw: '<<< inputs.quote >>>'\n", tenantInput)
	f.Add("v: '\"<< inputs.uni >>\\u2028<< inputs.none >>'", tenantInput)
	f.Add("v: '<< inputs.x | upper >>'\nk: {'<< inputs.k >>': 1}\n", "- {x: 1}\n- {x: [a]}\n")
	f.Add("a: &a {x: '<< inputs.x >>'}\nb: {<<: *a, y: '<< inputs'}\n", "x: \"\\xff\\t\"\n")
	f.Add("v: \"<< inputs.a.b.c >>\"", "a: {b: {c: 'é'}}\n---\na: {b: 3}\n---\n[]\n")
	f.Fuzz(func(t *testing.T, tmplYAML, inputsYAML string) {
		docs, errs := parseStream([]byte(tmplYAML))
		if len(errs) > 0 || len(docs) == 0 {
			return
		}
		tm, problems := compileTemplate(docs[0].value)
		if (tm == nil) == (len(problems) == 0) {
			t.Fatalf("compileTemplate gave %v and %d problems", tm != nil, len(problems))
		}
		if tm == nil {
			return
		}
		if !strings.Contains(tmplYAML, "<<") {
			// Without a template the value is a constant: its JSON as written.
			want, _ := marshalCanonical(docs[0].value)
			if b, err := tm.appendJSON(nil, newInput(map[string]any{}, "", 0, 0)); err != nil || !bytes.Equal(b, want) {
				t.Fatalf("constant: appendJSON = %s, %v; want %s", b, err, want)
			}
		}
		refs := tm.refs()
		ins, _ := parseInputs([]byte(inputsYAML), "in.yaml")
		if len(ins) > 20 {
			ins = ins[:20]
		}
		ins = append(ins, newInput(map[string]any{}, "", 0, 0))
		for _, in := range ins {
			checkAgrees(t, tm, in)
			b, err := tm.appendJSON([]byte("x"), in)
			if err != nil {
				if !slices.ContainsFunc(refs, func(k string) bool { return strings.Contains(err.msg, "input "+k) }) {
					t.Fatalf("error %q names no key of refs() %v", err.msg, refs)
				}
				continue
			}
			if !json.Valid(b[1:]) {
				t.Fatalf("appendJSON gave invalid JSON %q", b[1:])
			}
			_, _ = tm.str(in)
		}
	})
}
