package server

import (
	"os/exec"
	"strings"
	"testing"
)

// TestServerLinksNoPlugin: the server shows previews through previewresult; neither the
// preview engine nor the action contract is among its dependencies, so the API cannot drive a
// plugin.
func TestServerLinksNoPlugin(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasSuffix(pkg, "/internal/preview") || strings.HasSuffix(pkg, "/actions") {
			t.Errorf("internal/server depends on %s", pkg)
		}
	}
}
