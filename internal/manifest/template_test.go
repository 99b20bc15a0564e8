package manifest

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// yamlValue converts a YAML document, a mapping, with the loader's converter.
func yamlValue(t testing.TB, doc string) map[string]any {
	t.Helper()
	docs, errs := parseStream([]byte(doc))
	if len(errs) > 0 || len(docs) != 1 {
		t.Fatalf("parse %q: %v", doc, errs)
	}
	return docs[0].value.(map[string]any)
}

// testInput is an input of the YAML mapping doc.
func testInput(t testing.TB, doc string) *input {
	t.Helper()
	return newInput(yamlValue(t, doc), "in.yaml", 1, 0)
}

const tenantInput = `{tenant: acme, size: 100, region: eu-west-1, ha: true, ratio: 1.50, none: null,
  db: {host: db.acme, port: 5432, opts: {ssl: true}}, zones: [a, b], quote: 'say "hi"', uni: "é",
  text: "<< inputs.tenant >>"}`

func TestTemplateEvaluates(t *testing.T) {
	t.Parallel()
	in := testInput(t, tenantInput)
	cases := []struct {
		name, tmpl, want string // tmpl: the YAML value of key v; want: canonical JSON
	}{
		{"constant", `{a: 1, b: [x, "<<", "a << b"], c: {d: null}}`, `{"a":1,"b":["x","<<","a << b"],"c":{"d":null}}`},
		{"whole string", `"<< inputs.tenant >>"`, `"acme"`},
		{"whole number keeps its type", `"<< inputs.size >>"`, `100`},
		{"whole number unquoted", `<< inputs.size >>`, `100`},
		{"whole number as written", `"<<inputs.ratio>>"`, `1.5`},
		{"whole bool", `"<< inputs.ha >>"`, `true`},
		{"whole null", `"<< inputs.none >>"`, `null`},
		{"whole mapping", `"<<  inputs.db  >>"`, `{"host":"db.acme","opts":{"ssl":true},"port":5432}`},
		{"whole list", `"<< inputs.zones >>"`, `["a","b"]`},
		{"nested", `"<< inputs.db.host >>:<< inputs.db.port >>"`, `"db.acme:5432"`},
		{"nested whole", `"<< inputs.db.opts.ssl >>"`, `true`},
		{"nested whole mapping", `"<< inputs.db.opts >>"`, `{"ssl":true}`},
		{"interpolation", `"db-<< inputs.tenant >>-<< inputs.region >>"`, `"db-acme-eu-west-1"`},
		{"interpolated number and bool", `"n=<< inputs.size >> ha=<< inputs.ha >> r=<< inputs.ratio >>"`, `"n=100 ha=true r=1.5"`},
		{"spaces around make a string", `" << inputs.size >>"`, `" 100"`},
		{"an input is not a template", `"<< inputs.text >>"`, `"<< inputs.tenant >>"`},
		{"escaped input", `"x << inputs.quote >>"`, `"x say \"hi\""`},
		{"escaped literal", `"\"<< inputs.tenant >>\" é"`, `"\"acme\" é"`},
		{"non-ascii input", `"<< inputs.uni >>-<< inputs.tenant >>"`, `"é-acme"`},
		{"output reference passes through", `"${{ Network/net-<< inputs.region >>.outputs.id }}"`, `"${{ Network/net-eu-west-1.outputs.id }}"`},
		{"output reference untouched", `"${{ Network/net.outputs.id }}"`, `"${{ Network/net.outputs.id }}"`},
		{"unterminated output reference is text", `"${{ a-<< inputs.tenant >>"`, `"${{ a-acme"`},
		{"literal <<", `"a << b <<inputsx >> <<< inputs.tenant >>"`, `"a << b <<inputsx >> <acme"`},
		{"mapping", `{name: "db-<< inputs.tenant >>", spec: {size: "<< inputs.size >>", region: "<< inputs.region >>", fixed: [1, {k: v}]}}`,
			`{"name":"db-acme","spec":{"fixed":[1,{"k":"v"}],"region":"eu-west-1","size":100}}`},
		{"list", `[a, "<< inputs.size >>", {x: "<< inputs.ha >>"}, []]`, `["a",100,{"x":true},[]]`},
		{"merge key is YAML's", `{b: &b {x: "<< inputs.size >>"}, c: {<<: *b, y: 2}}`, `{"b":{"x":100},"c":{"x":100,"y":2}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tm, problems := compileTemplate(yamlValue(t, "v: "+c.tmpl)["v"])
			if problems != nil {
				t.Fatalf("problems: %v", problems)
			}
			got, err := tm.appendJSON([]byte("prefix"), in)
			if err != nil {
				t.Fatalf("appendJSON: %v", err)
			}
			if string(got) != "prefix"+c.want {
				t.Errorf("appendJSON = %s, want %s", got[6:], c.want)
			}
			checkAgrees(t, tm, in)
		})
	}
}

// checkAgrees fails unless appendJSON spells marshalCanonical(value()).
func checkAgrees(t testing.TB, tm *tmpl, in *input) {
	t.Helper()
	v, verr := tm.value(in)
	b, aerr := tm.appendJSON(nil, in)
	if (verr == nil) != (aerr == nil) || verr != nil && verr.Error() != aerr.Error() {
		t.Fatalf("value error %v, appendJSON error %v", verr, aerr)
	}
	if verr != nil {
		return
	}
	want, err := marshalCanonical(v)
	if err != nil {
		t.Fatalf("marshalCanonical(value()): %v", err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("appendJSON = %s, marshalCanonical(value()) = %s", b, want)
	}
}

func TestTemplateErrors(t *testing.T) {
	t.Parallel()
	in := testInput(t, tenantInput)
	cases := []struct {
		name, tmpl, want string // want: the error, "at: msg"
	}{
		{"unknown key", `{spec: {r: "<< inputs.regoin >>"}}`,
			"spec.r: input regoin is not defined (inputs: db, ha, none, quote, ratio, region, size, tenant, text, uni and 1 more); did you mean region?"},
		{"unknown key interpolated", `["x-<< inputs.tenat >>"]`,
			"[0]: input tenat is not defined (inputs: db, ha, none, quote, ratio, region, size, tenant, text, uni and 1 more); did you mean tenant?"},
		{"unknown nested key", `"<< inputs.db.hostt >>"`, "input db.hostt is not defined (db: host, opts, port); did you mean db.host?"},
		{"into a string", `"<< inputs.tenant.x >>"`, "input tenant is a string: tenant.x is not defined"},
		{"mapping interpolated", `"n-<< inputs.db >>"`, "input db is a mapping: only a whole value can take it"},
		{"list interpolated", `"n-<< inputs.zones >>"`, "input zones is a list: only a whole value can take it"},
		{"null interpolated", `{a: "n-<< inputs.none >>"}`, "a: input none is null: only a whole value can take it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tm, problems := compileTemplate(yamlValue(t, "v: "+c.tmpl)["v"])
			if problems != nil {
				t.Fatalf("problems: %v", problems)
			}
			_, err := tm.appendJSON(nil, in)
			if err == nil || err.Error() != c.want {
				t.Fatalf("appendJSON error = %v, want %s", err, c.want)
			}
			checkAgrees(t, tm, in)
		})
	}
}

func TestTemplateCompileProblems(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, tmpl string
		want       []string // "at: msg"
	}{
		{"unterminated", `{a: "x << inputs.tenant"}`, []string{`a: unterminated template "<< inputs.tenant": << needs a closing >>` + literalHint}},
		{"no key", `"<< inputs >>"`, []string{`: only << inputs.name >> is supported, not "<< inputs >>"` + literalHint}},
		{"pipeline", `["<< inputs.x | upper >>"]`, []string{`[0]: only << inputs.name >> is supported, not "<< inputs.x | upper >>"` + literalHint}},
		{"index", `"<< inputs.x[0] >>"`, []string{`: only << inputs.name >> is supported, not "<< inputs.x[0] >>"` + literalHint}},
		{"empty segment", `"<< inputs..x >>"`, []string{`: only << inputs.name >> is supported, not "<< inputs..x >>"` + literalHint}},
		{"long", `"x << inputs.` + strings.Repeat("a", 80) + `"`, []string{`: unterminated template "<< inputs.` + strings.Repeat("a", 50) + `…": << needs a closing >>` + literalHint}},
		{"each string", `{a: "<< inputs", b: ["<< inputs.x y >>"], c: "<< inputs.x >>"}`, []string{
			`a: unterminated template "<< inputs": << needs a closing >>` + literalHint, `b[0]: only << inputs.name >> is supported, not "<< inputs.x y >>"` + literalHint}},
		{"literal text", `{cmd: "cat << inputs"}`, []string{`cmd: unterminated template "<< inputs": << needs a closing >>` + literalHint}},
		{"templated key", `{a: {"<< inputs.k >>": v, "<< b": w}}`, []string{`a["<< inputs.k >>"]: a mapping key cannot hold a template (keys are not templated)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tm, problems := compileTemplate(yamlValue(t, "v: "+c.tmpl)["v"])
			if tm != nil {
				t.Fatal("compiled")
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.at.String()+": "+p.msg)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("problems =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestTemplateRefsAndStr(t *testing.T) {
	t.Parallel()
	in := testInput(t, tenantInput)
	tm, _ := compileTemplate(yamlValue(t, `v: {name: "db-<< inputs.tenant >>-<< inputs.region >>-<< inputs.tenant >>", spec: {a: "<< inputs.size >>", b: "<< inputs.db.host >>"}}`)["v"])
	if got, want := tm.refs(), []string{"tenant", "region", "size", "db"}; !slices.Equal(got, want) {
		t.Errorf("refs = %v, want %v", got, want)
	}
	for _, c := range []struct{ tmpl, want, err string }{
		{`"db-<< inputs.tenant >>"`, "db-acme", ""},
		{`"<< inputs.size >>"`, "100", ""},
		{`"<< inputs.ha >>"`, "true", ""},
		{`plain`, "plain", ""},
		{`"<< inputs.db >>"`, "", "input db is a mapping: a string is needed here"},
		{`42`, "", "must be a string, got number"},
		{`{a: "<< inputs.size >>"}`, "", "must be a string, got mapping"},
	} {
		tm, _ := compileTemplate(yamlValue(t, "v: "+c.tmpl)["v"])
		got, err := tm.str(in)
		if got != c.want || (err == nil) != (c.err == "") || err != nil && err.msg != c.err {
			t.Errorf("str(%s) = %q, %v; want %q, %q", c.tmpl, got, err, c.want, c.err)
		}
	}
}

// A value from value() belongs to the caller: changing it changes neither the template nor
// the input.
func TestTemplateValueIsACopy(t *testing.T) {
	t.Parallel()
	in := testInput(t, tenantInput)
	tm, _ := compileTemplate(yamlValue(t, `v: {c: {k: [1]}, d: "<< inputs.db >>", s: "<< inputs.size >>"}`)["v"])
	v, _ := tm.value(in)
	m := v.(map[string]any)
	m["c"].(map[string]any)["k"].([]any)[0] = "changed"
	m["d"].(map[string]any)["host"] = "changed"
	b, _ := tm.appendJSON(nil, in)
	if want := `{"c":{"k":[1]},"d":{"host":"db.acme","opts":{"ssl":true},"port":5432},"s":100}`; string(b) != want {
		t.Fatalf("after changing a value: %s, want %s", b, want)
	}
}

// typicalTemplate is a generated resource as a set writes it: a templated name and a spec of
// three fields, two of them templated.
const typicalTemplate = `v:
  apiVersion: example.com/v1
  kind: Database
  metadata: {name: "db-<< inputs.tenant >>-<< inputs.region >>"}
  dependsOn: [{kind: Network, name: "net-<< inputs.region >>"}]
  spec: {size: "<< inputs.size >>", region: "<< inputs.region >>", engine: postgres}
`

// appendJSON allocates nothing once dst has room: the 100,000 resources of a set are
// encoded one after the other into one buffer.
func TestTemplateAppendJSONAllocates(t *testing.T) {
	in := testInput(t, "{tenant: acme, size: 100, region: eu-west-1}")
	tm, _ := compileTemplate(yamlValue(t, typicalTemplate)["v"])
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() {
		var err *tmplError
		if buf, err = tm.appendJSON(buf[:0], in); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("appendJSON allocates %v times per call", n)
	}
	checkAgrees(t, tm, in)
}

func BenchmarkTemplateAppendJSON(b *testing.B) {
	in := testInput(b, "{tenant: acme, size: 100, region: eu-west-1}")
	tm, _ := compileTemplate(yamlValue(b, typicalTemplate)["v"])
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = tm.appendJSON(buf[:0], in)
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkTemplateStr(b *testing.B) {
	in := testInput(b, "{tenant: acme, size: 100, region: eu-west-1}")
	tm, _ := compileTemplate(yamlValue(b, `v: "db-<< inputs.tenant >>-<< inputs.region >>"`)["v"])
	b.ReportAllocs()
	for b.Loop() {
		_, _ = tm.str(in)
	}
}

func TestTemplateSizeBudget(t *testing.T) {
	t.Parallel()
	in := newInput(map[string]any{"big": strings.Repeat("x", 300<<10)}, "in.yaml", 1, 0)
	for _, tc := range []struct{ tmpl, want string }{
		{`{a: "<< inputs.big >>", b: "<< inputs.big >>", c: "<< inputs.big >>", d: "<< inputs.big >>"}`, "spec would be more than 1 MiB, the limit of a document"},
		{`[{a: ["<< inputs.big >>", "<< inputs.big >>"]}, ["<< inputs.big >>", "<< inputs.big >>"]]`, "spec would be more than 1 MiB, the limit of a document"},
		{`"<< inputs.big >><< inputs.big >><< inputs.big >><< inputs.big >>"`, "spec would be more than 1 MiB, the limit of a document"},
	} {
		tm, problems := compileTemplate(yamlValue(t, "v: "+tc.tmpl)["v"])
		if problems != nil {
			t.Fatalf("%s: %v", tc.tmpl, problems)
		}
		if _, err := tm.appendJSON(nil, in); err == nil || err.Error() != tc.want {
			t.Errorf("%s: appendJSON error %v, want %q", tc.tmpl, err, tc.want)
		}
		tm.ops = nil // the path below a compiled value
		if _, err := tm.appendJSON(nil, in); err == nil || err.Error() != tc.want {
			t.Errorf("%s without a program: error %v, want %q", tc.tmpl, err, tc.want)
		}
	}
	tm, _ := compileTemplate(yamlValue(t, `v: "a-<< inputs.big >><< inputs.big >><< inputs.big >><< inputs.big >>"`)["v"])
	if _, err := tm.str(in); err == nil || err.Error() != "would be more than 1 MiB, the limit of a document" {
		t.Errorf("str: %v", err)
	}
	// Three fit: 900 KiB and the JSON around them.
	tm, _ = compileTemplate(yamlValue(t, `v: {a: "<< inputs.big >>", b: "<< inputs.big >>", c: "<< inputs.big >>"}`)["v"])
	if b, err := tm.appendJSON(nil, in); err != nil || len(b) != 3*(300<<10+6)+4 {
		t.Errorf("within the limit: %d bytes, %v", len(b), err)
	}
	if got, want := tm.size(func(string) int { return 300<<10 + 2 }), 3*(300<<10+6)+4; got != want {
		t.Errorf("size %d, want %d", got, want)
	}
}

// The grammar has no escape: text holding "<< inputs" comes from an input, whose value is
// not expanded.
func TestTemplateLiteralThroughInput(t *testing.T) {
	t.Parallel()
	tm, problems := compileTemplate(yamlValue(t, `v: {cmd: "sh -c '<< inputs.heredoc >>'"}`)["v"])
	if problems != nil {
		t.Fatal(problems)
	}
	b, err := tm.appendJSON(nil, testInput(t, `{heredoc: "cat << inputs >> out"}`))
	if want := `{"cmd":"sh -c 'cat << inputs >> out'"}`; err != nil || string(b) != want {
		t.Errorf("got %s, %v; want %s", b, err, want)
	}
}
