package store

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// stringsJSON reads back as json.Marshal's spelling of the map with its NULs replaced does, for
// every kind of byte a label or annotation may hold.
func TestStringsJSON(t *testing.T) {
	t.Parallel()
	for _, m := range []map[string]string{
		nil,
		{},
		{"team": "a"},
		{"b": "2", "a": "1", "c": "3", "app.kubernetes.io/name": "web"},
		{"quote\"back\\slash": "new\nline\ttab\rret"},
		{"ctl": "\x01\x1f\x7f", "nul": "a\x00b", "nul\x00key": "x"},
		{"literal": `\u0000`, `back\u0000slash`: `a\\u0000b`},
		{"bad utf8": "a\xffb\xc3", "\xe2\x82": "x"},
		{"html": "<a href='x'>&</a>", "sep": "\u2028\u2029", "emoji": "🙂", "accents": "café"},
		{"k1": "", "k2": "", "k3": "", "k4": "", "k5": "", "k6": "", "k7": "", "k8": "", "k9": "", "k10": ""},
	} {
		got := stringsJSON(m)
		if len(m) == 0 {
			if got != "{}" {
				t.Errorf("%q: %s, want {}", m, got)
			}
			continue
		}
		// The oracle is json.Marshal with the NULs (which jsonb cannot hold) replaced.
		nulFree := make(map[string]string, len(m))
		for k, v := range m {
			nulFree[strings.ReplaceAll(k, "\x00", "\ufffd")] = strings.ReplaceAll(v, "\x00", "\ufffd")
		}
		want, _ := json.Marshal(nulFree)
		var a, b map[string]string
		if err := json.Unmarshal([]byte(got), &a); err != nil {
			t.Errorf("%q: %s does not parse: %v", m, got, err)
			continue
		}
		if err := json.Unmarshal(want, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%q: %s reads as %q, json.Marshal's %s as %q", m, got, a, want, b)
		}
	}
	// Keys in json.Marshal's order, so that equal maps are equal text.
	if got := stringsJSON(map[string]string{"b": "2", "a": "1"}); got != `{"a":"1","b":"2"}` {
		t.Errorf("order: %s", got)
	}
}
