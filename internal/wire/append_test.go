package wire

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/status"
)

// encodeJSON is what WriteJSON writes for v.
func encodeJSON(t testing.TB, v any) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		return "error: " + err.Error()
	}
	return b.String()
}

// writeResources is what WriteResources writes for items and cont, or "error: …" when it
// wrote nothing (encoding/json failed in its fallback).
func writeResources(items []Resource, cont string) (string, http.Header) {
	rec := httptest.NewRecorder()
	WriteResources(rec, http.StatusOK, items, func(r Resource) Resource { return r }, cont)
	if rec.Body.Len() == 0 {
		return "error", rec.Header()
	}
	return rec.Body.String(), rec.Header()
}

func sameAsEncodingJSON(t testing.TB, items []Resource, cont string) {
	t.Helper()
	all := items
	if all == nil {
		all = []Resource{} // never null
	}
	want := encodeJSON(t, map[string]any{"items": all, "continue": cont})
	got, h := writeResources(items, cont)
	if strings.HasPrefix(want, "error") {
		if got != "error" {
			t.Fatalf("encoding/json refuses (%s), WriteResources wrote %q", want, got)
		}
		return
	}
	if got != want {
		t.Fatalf("WriteResources:\n%s\nencoding/json:\n%s", got, want)
	}
	if h.Get("Content-Type") != "application/json" || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("headers %v", h)
	}
}

func TestWriteResourcesSameAsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 27, 22, 49, 1, 123456700, time.UTC)
	east := at.In(time.FixedZone("east", 5*3600+30*60))
	odd := at.In(time.FixedZone("odd", 3600+17)) // an offset with seconds: encoding/json's own spelling
	yes := true
	full := Resource{
		APIVersion: "example.com/v1", Kind: "Database",
		Metadata: Metadata{Name: "db-<acme>", Namespace: "prod", UID: "u-1", Generation: 7,
			Labels:            map[string]string{"z": "1", "a": "x&y", "m": "\u2028line\u2029", "": "empty key"},
			Annotations:       map[string]string{"note": "tab\there \"quoted\" back\\slash \x01\x1f\x7f é 日本 \xff\xfe"},
			CreationTimestamp: at, DeletionTimestamp: &east},
		Spec: json.RawMessage(`{"a": [1, 2.50, -3e10, true, false, null], "html": "<b>&</b>", "sep": "x\u2028y", "esc": "q\"\\ \u00e9 \/", "nested": {"k": {}}, "e": []}`),
		Status: ResourceStatus{Phase: "Ready", ObservedGeneration: 7,
			Conditions: []status.Condition{
				{Type: "Ready", Status: "True", Reason: "Reconciled", Message: "ok <fine>", LastTransitionTime: at, ObservedGeneration: 7},
				{Type: "Reconciling", Status: "False", LastTransitionTime: east},
			},
			Message: "m\n", Outputs: json.RawMessage(`{"url": "https://x/?a=1&b=2"}`), LastReconcileTime: &at, NextReconcileTime: &at, Orphaned: true},
		Source: ResourceSource{Name: "infra", Path: "dbs/a.yaml", Line: 12, Revision: "abc", ResourceSet: "tenant-dbs"},
		DependsOn: []Dependency{
			{Kind: "Network", Namespace: "prod", Name: "net", Explicit: true, Outputs: []string{"id", "<x>"}},
			{Kind: "Zone", Namespace: "prod", Name: "z", Outputs: nil, Phase: "Ready", Source: "s", Ready: &yes, Missing: true},
		},
	}
	// Every field set somewhere in full but Approval (left to encoding/json): a field added
	// to the resource's types and not to appendResource fails the comparison below.
	if unset := unsetFields(reflect.ValueOf(full), "Resource"); len(unset) != 1 || unset[0] != "Resource.Approval" {
		t.Fatalf("fields left unset in the full resource: %v", unset)
	}
	many := map[string]string{}
	for i := range 40 {
		many[strings.Repeat("k", i%7)+string(rune('a'+i%26))+strings.Repeat("z", i/26)] = "v"
	}
	tests := []struct {
		name  string
		items []Resource
		cont  string
		fast  bool // written by appendResource, not left to encoding/json
	}{
		{"none", []Resource{}, "", true},
		{"nil items", nil, "tok", true},
		{"zero resource", []Resource{{}}, "", true},
		{"full", []Resource{full, {}, full}, "next&page", true},
		{"empty maps and conditions", []Resource{{Metadata: Metadata{Labels: map[string]string{}, Annotations: map[string]string{}},
			Status: ResourceStatus{Conditions: []status.Condition{}}, Spec: json.RawMessage(`{}`), DependsOn: []Dependency{}}}, "", true},
		{"many labels", []Resource{{Metadata: Metadata{Labels: many}}}, "", true},
		{"scalar specs", []Resource{{Spec: json.RawMessage(`"s <1>"`)}, {Spec: json.RawMessage(` 12 `)}, {Spec: json.RawMessage("null")}}, "", true},
		{"year 0 and 9999", []Resource{{Metadata: Metadata{CreationTimestamp: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)},
			Status: ResourceStatus{LastReconcileTime: new(time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("", -(23*3600+59*60))))}}}, "", true},
		{"offset with seconds", []Resource{{Metadata: Metadata{CreationTimestamp: odd}}}, "", false},
		{"year beyond 9999", []Resource{{Metadata: Metadata{CreationTimestamp: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}}, "", false},
		{"negative year", []Resource{{Status: ResourceStatus{LastReconcileTime: new(time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC))}}}, "", false},
		{"empty raw spec", []Resource{{Spec: json.RawMessage{}}}, "", false},
		{"unbalanced raw spec", []Resource{{Spec: json.RawMessage(`{"a": [1}`)}}, "", false},
		{"unterminated string", []Resource{{Status: ResourceStatus{Outputs: json.RawMessage(`{"a": "b}`)}}}, "", false},
		{"approval", []Resource{{Approval: &Approval{Name: "x", RequestedAt: at}}}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sameAsEncodingJSON(t, tt.items, tt.cont)
			fast := true
			for i := range tt.items {
				_, ok := appendResource(nil, &tt.items[i])
				fast = fast && ok
			}
			if fast != tt.fast {
				t.Errorf("written by appendResource: %t, want %t", fast, tt.fast)
			}
		})
	}
}

// unsetFields lists the fields of v, a struct, that are zero in v and, for a struct, a slice
// or a pointer to one, in every element of it, by their path from name.
func unsetFields(v reflect.Value, name string) []string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return []string{name}
		}
		return unsetFields(v.Elem(), name)
	case reflect.Slice:
		if v.Len() == 0 {
			return []string{name}
		}
		if e := v.Type().Elem(); e.Kind() != reflect.Struct || e == reflect.TypeFor[time.Time]() {
			return nil
		}
		// A field is unset when no element sets it.
		counts := map[string]int{}
		for i := range v.Len() {
			for _, f := range unsetFields(v.Index(i), name+"[]") {
				counts[f]++
			}
		}
		var out []string
		for f, n := range counts {
			if n == v.Len() {
				out = append(out, f)
			}
		}
		slices.Sort(out)
		return out
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			if v.IsZero() {
				return []string{name}
			}
			return nil
		}
		var out []string
		for i := range v.NumField() {
			out = append(out, unsetFields(v.Field(i), name+"."+v.Type().Field(i).Name)...)
		}
		return out
	default:
		if v.IsZero() {
			return []string{name}
		}
		return nil
	}
}

func TestAppendStringSameAsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "\"\\/", "\b\f\n\r\t\x00\x1f\x7f", "<>&", "\u2028\u2029", "é日本🎉", "\xff", "a\xe2\x80", "\xe2\x80\xa8x", "\xed\xa0\x80"} {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
}

// FuzzWriteResources holds WriteResources to encoding/json's spelling for any strings, maps
// and times, and for raw values that are JSON, as given and as PostgreSQL's jsonb spells
// them (jsonb holds nothing else).
func FuzzWriteResources(f *testing.F) {
	f.Add("n", "v", `{"a": "<b>"}`, int64(0), "reason", true)
	f.Add("\u2028", "\xff", `[1, 2]`, int64(1<<40), "", false)
	f.Add("", "", `{`, int64(-5), "\x00", true)
	f.Fuzz(func(t *testing.T, key, value, raw string, nanos int64, reason string, deps bool) {
		// The zone's offset from the nanoseconds too: whole minutes and not, up to a day.
		at := time.Unix(0, nanos).In(time.FixedZone("z", int(nanos%(25*3600))))
		r := Resource{APIVersion: key, Kind: value,
			Metadata: Metadata{Name: value, Labels: map[string]string{key: value, value: key}, Annotations: map[string]string{reason: raw},
				Generation: nanos, CreationTimestamp: at, DeletionTimestamp: &at},
			Spec: json.RawMessage(raw),
			Status: ResourceStatus{Phase: reason, ObservedGeneration: -nanos, Message: raw,
				Conditions: []status.Condition{{Type: key, Status: value, Reason: reason, Message: raw, LastTransitionTime: at, ObservedGeneration: nanos}},
				Outputs:    json.RawMessage(raw), NextReconcileTime: &at, Orphaned: deps},
			Source: ResourceSource{Path: key, Line: int(nanos % 1000), ResourceSet: reason}}
		if deps {
			ready := nanos%2 == 0
			r.DependsOn = []Dependency{{Kind: key, Outputs: []string{value}, Phase: reason, Ready: &ready}}
		}
		if !json.Valid([]byte(raw)) {
			// Not jsonb's text: WriteResources answers what encoding/json does when its
			// brackets and strings tell it apart, and nothing else is asked of it.
			return
		}
		sameAsEncodingJSON(t, []Resource{r, {}, r}, key)
		// jsonb's own text of the value: what the store hands over.
		var v any
		if json.Unmarshal([]byte(raw), &v) == nil {
			if j, err := json.Marshal(v); err == nil {
				r.Spec = json.RawMessage(strings.ReplaceAll(strings.ReplaceAll(string(j), ",", ", "), ":", ": "))
				if json.Valid(r.Spec) {
					sameAsEncodingJSON(t, []Resource{r}, key)
				}
			}
		}
	})
}
