package config

import "testing"

func TestParseRender(t *testing.T) {
	t.Parallel()
	src := func(render string) string {
		return "sources:\n  - name: a\n    git: {url: x, path: deploy}\n    render: " + render + "\n"
	}
	c, err := Parse([]byte(src("kustomize")), "/x", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if k := c.Sources[0].Render.Kustomize; k == nil || len(k.Paths) != 0 {
		t.Fatalf("render: kustomize = %+v, want an empty kustomize block", c.Sources[0].Render)
	}
	c, err = Parse([]byte(src("{kustomize: {paths: [types, overlays/*], maxResources: 500}}")), "/x", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if k := c.Sources[0].Render.Kustomize; len(k.Paths) != 2 || k.Paths[1] != "overlays/*" || k.MaxResources != 500 {
		t.Fatalf("kustomize = %+v", k)
	}
	checkParse(t, []struct{ name, yaml, want string }{
		{"other renderer", src("helm"), `line 4: render must be kustomize or {kustomize: {paths: [...]}}, not "helm"`},
		{"unknown key", src("{kustomise: {}}"), "line 4: field kustomise not found"},
		{"unknown kustomize key", src("{kustomize: {path: x}}"), "field path not found"},
		{"no renderer", src("{}"), "sources[0].render: kustomize is required"},
		{"absolute", src("{kustomize: {paths: [/etc]}}"), `sources[0].render.kustomize.paths[0]: "/etc" must be relative to the source's path`},
		{"escape", src("{kustomize: {paths: [ok, a/../../b]}}"), `sources[0].render.kustomize.paths[1]: "a/../../b" leads out of the source's path`},
		{"bad glob", src("{kustomize: {paths: [\"a/[\"]}}"), `"a/[" is not a valid pattern`},
		{"empty", src("{kustomize: {paths: [\"\"]}}"), "paths[0]: empty"},
		{"negative cap", src("{kustomize: {maxResources: -1}}"), "sources[0].render.kustomize.maxResources: -1 is negative"},
	}, "")
}
