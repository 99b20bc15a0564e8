package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCLIReadsTheAPIAsWire: the commands and internal/cli, which does their work, read the
// API's answers as the wire types; only the daemon (serve) reaches the store, so a store
// rename cannot change what the CLI reads.
func TestCLIReadsTheAPIAsWire(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".", "../../internal/cli/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		t.Fatalf("go list listed %q: want cmd/trueup and internal/cli", lines)
	}
	for _, l := range lines {
		f := strings.Fields(l)
		for _, pkg := range f[1:] {
			if strings.HasSuffix(pkg, "/internal/store") {
				t.Errorf("%s imports %s outside its tests", f[0], pkg)
			}
		}
	}
}
