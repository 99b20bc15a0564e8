package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCLIReadsTheAPIAsWire: the commands read the API's answers as the wire types; only the
// daemon (serve) reaches the store, so a store rename cannot change what the CLI reads.
func TestCLIReadsTheAPIAsWire(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasSuffix(pkg, "/internal/store") {
			t.Errorf("cmd/trueup imports %s outside its tests", pkg)
		}
	}
}
