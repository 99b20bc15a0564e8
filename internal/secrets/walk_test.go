package secrets

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestFindRefs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, spec string
		want       []Ref
		err        string
	}{
		{"none", `{"a":1,"b":[{"c":"secretRef"}]}`, nil, ""},
		{"top-level field", `{"password":{"secretRef":{"name":"db","key":"pw"}}}`,
			[]Ref{{"spec.password", "db", "pw"}}, ""},
		{"nested in arrays, sorted by key", `{"z":{"secretRef":{"name":"b","key":"k"}},"hosts":[{"t":1},{"token":{"secretRef":{"key":"tok","name":"a"}}}]}`,
			[]Ref{{"spec.hosts[1].token", "a", "tok"}, {"spec.z", "b", "k"}}, ""},
		{"the whole spec", `{"secretRef":{"name":"db","key":"pw"}}`, []Ref{{"spec", "db", "pw"}}, ""},
		{"key named secretRef inside a string", `{"note":"see \"secretRef\""}`, nil, ""},
		{"beside other members", `{"p":{"secretRef":{"name":"db","key":"pw"},"x":1}}`, nil,
			"spec.p: malformed secretRef: secretRef must be the only member"},
		{"not an object", `{"p":{"secretRef":"db/pw"}}`, nil, "spec.p: malformed secretRef: want {secretRef"},
		{"no key", `{"p":{"secretRef":{"name":"db"}}}`, nil, "spec.p: malformed secretRef: want exactly a string name and a string key"},
		{"extra member", `{"p":{"secretRef":{"name":"db","key":"k","store":"x"}}}`, nil, "want exactly"},
		{"number name", `{"p":{"secretRef":{"name":1,"key":"k"}}}`, nil, "want exactly"},
		{"traversal name", `{"p":[{"secretRef":{"name":"../etc","key":"passwd"}}]}`, nil, `spec.p[0]: malformed secretRef: secret name "../etc"`},
		{"slash key", `{"p":{"secretRef":{"name":"db","key":"a/b"}}}`, nil, `secret key "a/b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := decodeSpec([]byte(tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			got, err := FindRefs(v, "spec")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, errMalformed) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("FindRefs = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestReplaceKeepsNumbers: re-encoding a spec changes nothing but the references (numbers
// keep their exact text, HTML characters stay as they are).
func TestReplaceKeepsNumbers(t *testing.T) {
	t.Parallel()
	spec := `{"big":12345678901234567890123,"f":1.10,"e":1e400,"neg":-0,"s":"<a&b>","arr":[1,{"secretRef":{"name":"db","key":"pw"}}],"pw":{"secretRef":{"name":"db","key":"pw"}}}`
	v, err := decodeSpec([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Replace(v, "spec", func(r Ref) (string, error) { return "p\"w<" + r.Key, nil })
	if err != nil {
		t.Fatal(err)
	}
	b, err := encodeSpec(out)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"arr":[1,"p\"w<pw"],"big":12345678901234567890123,"e":1e400,"f":1.10,"neg":-0,"pw":"p\"w<pw","s":"<a&b>"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestDecodeSpecRejectsTrailingData(t *testing.T) {
	t.Parallel()
	if _, err := decodeSpec([]byte(`{"a":1} {"b":2}`)); err == nil {
		t.Fatal("trailing document accepted")
	}
}
