package render

import (
	"encoding/json"
	"testing"

	"go.yaml.in/yaml/v3"
)

// What the render writes for a string, read back as the loader reads it (YAML), is the string:
// a NEL, C1 controls and a byte order mark are escaped, not left raw for YAML to fold or refuse.
func TestRenderedStringsReadBackAsYAML(t *testing.T) {
	for _, s := range []string{"plain", "x\u0085y", "x\u0080y", "x\u009fy", "x\ufeffy", "\ufeff", "x\u2028y", "é\u00a0ü", "a\"b<c>&\\", "\u0085\u0085"} {
		for _, how := range []string{"appendString", "MarshalJSON"} {
			var doc []byte
			if how == "appendString" {
				doc = append([]byte(`{"k":`), appendString(nil, s)...)
				doc = append(doc, '}')
			} else {
				j, err := json.Marshal(map[string]string{"k": s})
				if err != nil {
					t.Fatal(err)
				}
				doc = escapeForYAML(j)
			}
			var got map[string]string
			if err := yaml.Unmarshal(doc, &got); err != nil {
				t.Errorf("%s %q: written %s: %v", how, s, doc, err)
				continue
			}
			if got["k"] != s {
				t.Errorf("%s %q: written %s, read back %q", how, s, doc, got["k"])
			}
			var back map[string]string
			if err := json.Unmarshal(doc, &back); err != nil || back["k"] != s {
				t.Errorf("%s %q: written %s, not the same JSON (%q, %v)", how, s, doc, back["k"], err)
			}
		}
	}
}

func TestEscapeForYAML(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`"abc"`, `"abc"`},
		{"\"x\u0085y\"", `"x\u0085y"`},
		{"\"\u0080\u009f\"", `"\u0080\u009f"`},
		{"\"\ufeff\"", `"\ufeff"`},
		{"\"\u00a0\u00c2\"", "\"\u00a0\u00c2\""},
		{"\"\uefbb\"", "\"\uefbb\""},
	} {
		if got := string(escapeForYAML([]byte(c.in))); got != c.want {
			t.Errorf("escapeForYAML(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
