package store

import (
	"reflect"
	"testing"
)

// TestSourceHasNoWireCounts: the counts of a source's resources are the server's to shape
// (STYLE 18): the store's Source carries none.
func TestSourceHasNoWireCounts(t *testing.T) {
	t.Parallel()
	if _, ok := reflect.TypeOf(Source{}).FieldByName("Resources"); ok {
		t.Error("store.Source has a Resources field")
	}
	if tag := reflect.TypeOf(SourceResources{}).Field(0).Tag; tag != "" {
		t.Errorf("store.SourceResources has wire tags: %q", tag)
	}
}
