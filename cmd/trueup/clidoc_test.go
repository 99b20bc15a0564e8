package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/trueup-dev/trueup/internal/refdoc"
)

// cliPage is docs/reference/cli.md, from the repository root. The command tree is built in
// this package, so the page is generated and checked here (`make docs` runs this test with
// -update) rather than by tools/docgen.
const cliPage = "docs/reference/cli.md"

func TestCLIReference(t *testing.T) {
	// Flag defaults that read the environment show what they are without it.
	t.Setenv("TRUEUP_SERVER", "")
	got := refdoc.CLIPage("make docs", newRootCmd())
	if err := refdoc.CheckAnchors(cliPage, got); err != nil {
		t.Error(err)
	}
	path := filepath.Join("..", "..", filepath.FromSlash(cliPage))
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	committed, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := refdoc.Stale(cliPage, committed, got); err != nil {
		t.Error(err)
	}
}
