package manifest

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/trueup-dev/trueup/sources"
)

func TestRevisionCaps(t *testing.T) {
	t.Parallel()
	// Three files: the type, and two of two resources each: 3 files, 5 documents, 4 resources.
	res := func(a, b string) string {
		return fmt.Sprintf("apiVersion: example.com/v1\nkind: Blob\nmetadata: {name: %s}\n---\napiVersion: example.com/v1\nkind: Blob\nmetadata: {name: %s}\n", a, b)
	}
	fs := files("types.yaml", blobType, "a.yaml", res("a", "b"), "b.yaml", res("c", "d"))
	tests := []struct {
		name   string
		limits Limits
		want   string // "" for accepted
	}{
		{"defaults", Limits{}, ""},
		{"at every cap", Limits{MaxFiles: 3, MaxDocuments: 5, MaxResources: 4}, ""},
		{"files", Limits{MaxFiles: 2}, "revision has 3 files, more than the limit of 2 (limits.maxFiles in the controller config)"},
		{"documents", Limits{MaxDocuments: 4}, "revision has 5 documents, more than the limit of 4 (limits.maxDocuments in the controller config)"},
		{"resources", Limits{MaxResources: 3}, "revision has 4 resources, more than the limit of 3 (limits.maxResources in the controller config)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			set, err := NewLoader().Load(fs, Options{Limits: tt.limits})
			if tt.want == "" {
				if err != nil || len(set.Resources) != 4 {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if got := problems(t, err); set != nil || !reflect.DeepEqual(got, []string{tt.want}) {
				t.Errorf("errors = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDefaultCapsPass100kResources(t *testing.T) {
	t.Parallel()
	fs := files("types.yaml", blobType)
	for i := range 100_000 {
		fs = append(fs, sources.File{Path: fmt.Sprintf("r/%06d.yaml", i), Hash: fmt.Sprint(i),
			Data: []byte(fmt.Sprintf("apiVersion: example.com/v1\nkind: Blob\nmetadata: {name: r%d}\n", i))})
	}
	set, err := NewLoader().Load(fs, Options{})
	if err != nil || len(set.Resources) != 100_000 {
		t.Fatalf("100k resources: %v", err)
	}
}

func TestRefusedFiles(t *testing.T) {
	t.Parallel()
	fs := files("types.yaml", blobType)
	fs = append(fs, sources.File{Path: "big.yaml", Hash: "x", Refused: sources.TooLarge(300 << 20)},
		sources.File{Path: "link.yaml", Hash: "y", Refused: "symlink leads outside the source folder"})
	_, err := NewLoader().Load(fs, Options{})
	want := []string{"big.yaml: file is 300.0 MiB, larger than the 1 MiB limit", "link.yaml: symlink leads outside the source folder"}
	if got := problems(t, err); !reflect.DeepEqual(got, want) {
		t.Errorf("errors = %q, want %q", got, want)
	}
}
