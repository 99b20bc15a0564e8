package execaction_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCallSecretsRedactedBeforeTheCut: a value revealed into the call's spec (req.Secrets)
// that straddles the 4 KiB stderr cut is redacted whole, leaving no piece in the message.
func TestCallSecretsRedactedBeforeTheCut(t *testing.T) {
	t.Parallel()
	const secret = "call-Secret-0123456789-abcdefghij-XYZ"
	script := filepath.Join(t.TempDir(), "leak.sh")
	// The secret, then 4096-20 bytes: the last 4 KiB start inside the secret.
	body := "#!/bin/sh\ncat >/dev/null\nprintf '%s' '" + secret + "' >&2\nhead -c 4076 /dev/zero | tr '\\0' 'x' >&2\nexit 1\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	f := setup(t, config{Command: []string{script}})
	req := request()
	req.Secrets = []string{secret}
	_, err := f.action.Reconcile(t.Context(), req)
	if err == nil {
		t.Fatal("the command failed, the call did not")
	}
	msg := err.Error()
	if !strings.Contains(msg, "xxxx") {
		t.Fatalf("no stderr tail in %q", msg[:min(len(msg), 200)])
	}
	for i := 0; i+8 <= len(secret); i++ {
		if piece := secret[i : i+8]; strings.Contains(msg, piece) {
			t.Fatalf("a piece of the call's secret survived the cut: %q", piece)
		}
	}
}
