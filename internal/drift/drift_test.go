package drift

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/jsonptr"
)

func TestFilter(t *testing.T) {
	t.Parallel()
	paths := []actions.DriftPath{{Path: "/tags/owner"}, {Path: "/size"}, {Path: "/tagsets/0"}}
	kept, ignored := Filter(paths, []string{"/tags", "/nothing"})
	if !reflect.DeepEqual(kept, []actions.DriftPath{{Path: "/size"}, {Path: "/tagsets/0"}}) ||
		!reflect.DeepEqual(ignored, []actions.DriftPath{{Path: "/tags/owner"}}) {
		t.Fatalf("kept %v, ignored %v", kept, ignored)
	}
	if kept, ignored := Filter(paths, nil); len(kept) != 3 || ignored != nil {
		t.Fatalf("no ignore: kept %v, ignored %v", kept, ignored)
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	n := func(s string) json.Number { return json.Number(s) }
	for _, tc := range []struct {
		name, spec, observed string
		want                 []actions.DriftPath
	}{
		{"equal", `{"a": 1, "b": {"c": "x"}}`, `{"b": {"c": "x"}, "a": 1}`, nil},
		{"numbers by value", `{"a": 1, "b": 100}`, `{"a": 1.0, "b": 1e2}`, nil},
		{"a leaf differs", `{"tags": {"owner": "a"}}`, `{"tags": {"owner": "b"}}`,
			[]actions.DriftPath{{Path: "/tags/owner", Expected: "a", Actual: "b"}}},
		{"found fields the spec does not set", `{"a": 1}`, `{"a": 1, "default": true}`, nil},
		{"a field not found", `{"a": 1, "b": "x"}`, `{"a": 1}`,
			[]actions.DriftPath{{Path: "/b", Expected: "x"}}},
		{"keys in order, escaped", `{"z": 1, "a/b": 1, "m~": 1}`, `{"z": 2, "a/b": 2, "m~": 2}`,
			[]actions.DriftPath{{Path: "/a~1b", Expected: n("1"), Actual: n("2")}, {Path: "/m~0", Expected: n("1"), Actual: n("2")}, {Path: "/z", Expected: n("1"), Actual: n("2")}}},
		{"lists item by item", `{"l": [1, {"x": "a"}]}`, `{"l": [1, {"x": "b"}]}`,
			[]actions.DriftPath{{Path: "/l/1/x", Expected: "a", Actual: "b"}}},
		{"lists of another length", `{"l": [1, 2]}`, `{"l": [1]}`,
			[]actions.DriftPath{{Path: "/l", Expected: []any{n("1"), n("2")}, Actual: []any{n("1")}}}},
		{"type changed", `{"a": {"b": 1}}`, `{"a": "flat"}`,
			[]actions.DriftPath{{Path: "/a", Expected: map[string]any{"b": n("1")}, Actual: "flat"}}},
		{"null found", `{"a": null}`, `{"a": null}`, nil},
		{"the key \"\"", `{"": 1}`, `{"": 2}`, []actions.DriftPath{{Path: "/", Expected: n("1"), Actual: n("2")}}},
	} {
		got, err := Compare(json.RawMessage(tc.spec), json.RawMessage(tc.observed))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %#v\nwant %#v", tc.name, got, tc.want)
		}
	}
	for _, bad := range []string{`{`, `"x"`, `[1]`, `null`} {
		if _, err := Compare(json.RawMessage(`{}`), json.RawMessage(bad)); err == nil || !strings.HasPrefix(err.Error(), "observed: ") {
			t.Errorf("observed %s: %v", bad, err)
		}
	}
	var big strings.Builder
	big.WriteString("{")
	for i := range 2 * maxPaths {
		if i > 0 {
			big.WriteString(",")
		}
		big.WriteString(`"k` + strings.Repeat("x", i) + `": 1`)
	}
	big.WriteString("}")
	got, _ := Compare(json.RawMessage(big.String()), json.RawMessage(`{}`))
	if len(got) != maxPaths {
		t.Errorf("%d paths, want the first %d", len(got), maxPaths)
	}
}

// Every path Compare returns is a pointer CheckPointer accepts, and leads to the spec value
// it names as expected.
func FuzzCompare(f *testing.F) {
	f.Add(`{"a": {"b/c": [1, "x"]}, "~": 2}`, `{"a": {"b/c": [2, "x"]}, "~": 3}`)
	f.Add(`{"": 1}`, `{"": 2}`)
	f.Fuzz(func(t *testing.T, spec, observed string) {
		paths, err := Compare(json.RawMessage(spec), json.RawMessage(observed))
		if err != nil {
			return
		}
		want, _ := decode(json.RawMessage(spec))
		for _, p := range paths {
			if err := jsonptr.Check(p.Path); err != nil {
				t.Fatalf("path %q: %v", p.Path, err)
			}
			v := want
			for _, tok := range jsonptr.Tokens(p.Path) {
				switch c := v.(type) {
				case map[string]any:
					v = c[tok]
				case []any:
					i := 0
					for _, r := range tok {
						i = i*10 + int(r-'0')
					}
					v = c[i]
				}
			}
			if !reflect.DeepEqual(v, p.Expected) {
				t.Fatalf("path %q leads to %#v, expected says %#v", p.Path, v, p.Expected)
			}
		}
	})
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	got := Describe([]actions.DriftPath{{Path: "/tags", Expected: "a", Actual: "b"}, {Path: "/size"}, {Path: "/n", Expected: 1}}, nil)
	if want := `/tags: expected "a", found "b"; /size; /n: expected 1, found null`; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	long := Describe([]actions.DriftPath{{Path: "/x", Expected: strings.Repeat("v", 1000), Actual: "w"}}, nil)
	if len(long) > maxValue+40 || !strings.Contains(long, "…") {
		t.Errorf("a long value is not cut: %d bytes", len(long))
	}
	many := make([]actions.DriftPath, 1000)
	for i := range many {
		many[i] = actions.DriftPath{Path: "/" + strings.Repeat("p", 50), Expected: "a", Actual: "b"}
	}
	if m := Describe(many, nil); len(m) > maxMessage+len("…") {
		t.Errorf("message of %d bytes, bound %d", len(m), maxMessage)
	}
}

// A secret longer than a value's bound, or straddling the message's, is scrubbed whole
// before anything is cut: no beginning of it is left.
func TestDescribeScrubsBeforeCutting(t *testing.T) {
	t.Parallel()
	secret := strings.Repeat("s3cr3t-", 43)[:300]
	scrub := actions.Scrubber([]string{secret})
	for _, tc := range []struct {
		name  string
		paths []actions.DriftPath
		want  string
	}{
		{"expected", []actions.DriftPath{{Path: "/key", Expected: secret, Actual: "other"}}, "/key: differs (secret value)"},
		{"found", []actions.DriftPath{{Path: "/key", Expected: "other", Actual: secret}}, `/key: expected "other", found "***"`},
		{"inside a value", []actions.DriftPath{{Path: "/key", Expected: map[string]any{"a": "x " + secret}, Actual: nil}}, "/key: differs (secret value)"},
		{"across the list", append(slices.Repeat([]actions.DriftPath{{Path: "/" + strings.Repeat("p", 100)}}, 39), actions.DriftPath{Path: "/" + secret}), "; /***"},
	} {
		m := Describe(tc.paths, scrub)
		if run := secretRun(m, secret); run != "" {
			t.Errorf("%s: %q holds %q of the secret", tc.name, m, run)
		}
		if !strings.Contains(m, tc.want) {
			t.Errorf("%s: %q does not say %q", tc.name, m, tc.want)
		}
	}
	// The value found where a secret is expected is left out too: it is likely one as well.
	m := Describe([]actions.DriftPath{{Path: "/password", Expected: "hunter2", Actual: "live-credential"}, {Path: "/size", Expected: 1, Actual: 2}},
		actions.Scrubber([]string{"hunter2"}))
	if want := "/password: differs (secret value); /size: expected 1, found 2"; m != want {
		t.Errorf("got %q\nwant %q", m, want)
	}
	o := actions.Observation{Observed: json.RawMessage(`{"key": "other"}`)}
	if j := Judge(o, json.RawMessage(`{"key": "`+secret+`"}`), nil, scrub); secretRun(j.Message, secret) != "" {
		t.Errorf("Judge: %q", j.Message)
	}
	ignored := append(slices.Repeat([]actions.DriftPath{{Path: "/t/" + strings.Repeat("p", 100)}}, 39), actions.DriftPath{Path: "/t/" + secret})
	if j := Judge(actions.Observation{Drift: ignored}, nil, []string{"/t"}, scrub); !j.Ignored || secretRun(j.Message, secret) != "" {
		t.Errorf("Judge, ignored: %+v", j)
	}
}

// secretRun returns a 20-byte run of secret that s holds, else "".
func secretRun(s, secret string) string {
	for i := 0; i+20 <= len(secret); i++ {
		if strings.Contains(s, secret[i:i+20]) {
			return secret[i : i+20]
		}
	}
	return ""
}

func TestJudge(t *testing.T) {
	t.Parallel()
	spec := json.RawMessage(`{"tags": {"owner": "a"}, "size": 1}`)
	for _, tc := range []struct {
		name   string
		o      actions.Observation
		ignore []string
		want   Outcome
	}{
		{"paths given", actions.Observation{Drift: []actions.DriftPath{{Path: "/tags", Expected: "a", Actual: "b"}}}, nil,
			Outcome{Message: `/tags: expected "a", found "b"`}},
		{"all paths ignored", actions.Observation{Drift: []actions.DriftPath{{Path: "/tags/owner"}, {Path: "/tags/team"}}}, []string{"/tags"},
			Outcome{Ignored: true, Message: "/tags/owner, /tags/team"}},
		{"some paths ignored", actions.Observation{Drift: []actions.DriftPath{{Path: "/tags/owner"}, {Path: "/size", Expected: 1, Actual: 2}}}, []string{"/tags"},
			Outcome{Message: "/size: expected 1, found 2"}},
		{"observed compared", actions.Observation{Observed: json.RawMessage(`{"tags": {"owner": "b"}, "size": 1}`)}, nil,
			Outcome{Message: `/tags/owner: expected "a", found "b"`}},
		{"observed, ignored", actions.Observation{Observed: json.RawMessage(`{"tags": {"owner": "b"}, "size": 1}`)}, []string{"/tags"},
			Outcome{Ignored: true, Message: "/tags/owner"}},
		{"paths win over observed", actions.Observation{Drift: []actions.DriftPath{{Path: "/size"}}, Observed: json.RawMessage(`{"tags": {"owner": "b"}}`)}, []string{"/tags"},
			Outcome{Message: "/size"}},
		{"no paths: never ignored", actions.Observation{Message: "bucket policy changed"}, []string{"/tags"},
			Outcome{Message: "bucket policy changed"}},
		{"no paths, no message", actions.Observation{}, []string{"/"}, Outcome{Message: "drift detected"}},
		{"observed equal: drift without paths", actions.Observation{Observed: spec, Message: "etag differs"}, []string{"/tags"},
			Outcome{Message: "etag differs"}},
		{"observed not JSON", actions.Observation{Observed: json.RawMessage(`{`)}, []string{"/tags"},
			Outcome{Message: "drift detected"}},
	} {
		if got := Judge(tc.o, spec, tc.ignore, nil); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
