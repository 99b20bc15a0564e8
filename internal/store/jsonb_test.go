package store

import (
	"reflect"
	"testing"
)

// TestStorageJSON pins the jsonb the store writes: rows written by earlier versions read back.
func TestStorageJSON(t *testing.T) {
	errs := []struct {
		name string
		errs []SourceError
		json string
		back []SourceError // what reading json gives
	}{
		{"none", nil, `[]`, []SourceError{}},
		{"empty", []SourceError{}, `[]`, []SourceError{}},
		{"message only", []SourceError{{Message: "bad"}}, `[{"message":"bad"}]`, []SourceError{{Message: "bad"}}},
		{"every field", []SourceError{{File: "a.yaml", Line: 3, Path: "spec.x", Message: "m", Origin: "tenant=a, region=eu"}},
			`[{"file":"a.yaml","line":3,"path":"spec.x","message":"m","origin":"tenant=a, region=eu"}]`,
			[]SourceError{{File: "a.yaml", Line: 3, Path: "spec.x", Message: "m", Origin: "tenant=a, region=eu"}}},
		{"no origin", []SourceError{{File: "a.yaml", Line: 3, Path: "spec.x", Message: "m"}},
			`[{"file":"a.yaml","line":3,"path":"spec.x","message":"m"}]`, []SourceError{{File: "a.yaml", Line: 3, Path: "spec.x", Message: "m"}}},
	}
	for _, tt := range errs {
		t.Run("errors "+tt.name, func(t *testing.T) {
			if got := string(encodeSourceErrors(tt.errs)); got != tt.json {
				t.Errorf("encoded %s, want %s", got, tt.json)
			}
			back, err := decodeSourceErrors([]byte(tt.json))
			if err != nil || !reflect.DeepEqual(back, tt.back) {
				t.Errorf("decoded %#v, %v; want %#v", back, err, tt.back)
			}
		})
	}
	if got, err := decodeSourceErrors([]byte("null")); got != nil || err != nil {
		t.Errorf("null decoded %#v, %v; want nil", got, err)
	}
	if _, err := decodeSourceErrors(nil); err == nil {
		t.Error("no bytes decoded without error")
	}

	prunes := []struct {
		p    SourcePrune
		json string
	}{
		{SourcePrune{}, `{"enabled":false,"maxFraction":0,"allowEmpty":false}`},
		{SourcePrune{Enabled: true, MaxFraction: 0.3, AllowEmpty: true}, `{"enabled":true,"maxFraction":0.3,"allowEmpty":true}`},
	}
	for _, tt := range prunes {
		if got := string(encodePrune(tt.p)); got != tt.json {
			t.Errorf("prune %+v encoded %s, want %s", tt.p, got, tt.json)
		}
		if back, err := decodePrune([]byte(tt.json)); err != nil || back != tt.p {
			t.Errorf("prune %s decoded %+v, %v", tt.json, back, err)
		}
	}
}
