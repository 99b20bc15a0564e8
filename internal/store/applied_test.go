package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
)

// AppliedSpecs answers for changed specs only: not for new, unchanged or deleting
// resources, nor for another source's.
func TestAppliedSpecs(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s", "other")
	ctx := context.Background()
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: widgets(4, func(int) int { return 1 }), Prune: true}); err != nil {
		t.Fatal(err)
	}
	// w03 is being deleted.
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r2", Set: widgets(3, func(int) int { return 1 }), Prune: true, MaxPruneFraction: 1}); err != nil {
		t.Fatal(err)
	}
	next := widgets(5, func(i int) int { return map[bool]int{true: 2, false: 1}[i != 1] })
	next.Resources[2].Kind = "WIDGET" // kind is compared case-insensitively
	got, err := st.AppliedSpecs(ctx, "s", next.Resources)
	if err != nil {
		t.Fatal(err)
	}
	want := map[manifest.ResourceKey]string{
		{Namespace: "default", Kind: "Widget", Name: "w00"}: `{"size": 1}`,
		{Namespace: "default", Kind: "WIDGET", Name: "w02"}: `{"size": 1}`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d specs %v, want %v", len(got), got, want)
	}
	for k, w := range want {
		var a, b any
		if err := json.Unmarshal(got[k].Spec, &a); err != nil {
			t.Fatalf("%v: %s: %v", k, got[k], err)
		}
		_ = json.Unmarshal([]byte(w), &b)
		if a.(map[string]any)["size"] != b.(map[string]any)["size"] {
			t.Errorf("%v: %s, want %s", k, got[k], w)
		}
	}
	if got, err := st.AppliedSpecs(ctx, "other", next.Resources); err != nil || len(got) != 0 {
		t.Errorf("another source: %v, %v; want none", got, err)
	}
}

// An encrypted file is stored once for all its resources; AppliedSpecs and SealedFile read it
// back; a new version of the file is a new row.
func TestSealedFilesStoredOnce(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	set := widgets(3, func(int) int { return 1 })
	for i := range set.Resources {
		set.Resources[i].Sealed = "ENC[file one]"
	}
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: set, Prune: true}); err != nil {
		t.Fatal(err)
	}
	var files, named int
	if err := st.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM sealed_files), (SELECT count(DISTINCT sealed_sha) FROM resources)`).Scan(&files, &named); err != nil {
		t.Fatal(err)
	}
	if files != 1 || named != 1 {
		t.Fatalf("%d files stored, %d named; want 1 and 1", files, named)
	}
	next := widgets(3, func(int) int { return 2 })
	for i := range next.Resources {
		next.Resources[i].Sealed = "ENC[file two]"
	}
	got, err := st.AppliedSpecs(ctx, "s", next.Resources)
	if err != nil || len(got) != 3 || got[next.Resources[0].Key()].Sealed != "ENC[file one]" {
		t.Fatalf("AppliedSpecs = %v, %v", got, err)
	}
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r2", Set: next, Prune: true}); err != nil {
		t.Fatal(err)
	}
	var sha string
	if err := st.Pool().QueryRow(ctx, `SELECT sealed_sha FROM resources LIMIT 1`).Scan(&sha); err != nil {
		t.Fatal(err)
	}
	if content, err := st.SealedFile(ctx, sha); err != nil || content != "ENC[file two]" {
		t.Fatalf("SealedFile = %q, %v", content, err)
	}
	if _, err := st.SealedFile(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing file: %v", err)
	}
}
