package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/trueup-dev/trueup/internal/refdoc"
)

// TestReferencePagesCurrent fails when a committed page differs from what the code renders,
// or when a link within a page names no heading (docs/reference/cli.md is checked by
// cmd/trueup's TestCLIReference).
func TestReferencePagesCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	pages, err := pages(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range refdoc.SortedKeys(pages) {
		committed, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := refdoc.Stale(name, committed, pages[name]); err != nil {
			t.Error(err)
		}
		if err := refdoc.CheckAnchors(name, pages[name]); err != nil {
			t.Error(err)
		}
	}
}
