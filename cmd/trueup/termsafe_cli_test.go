package main

import (
	"context"
	"strings"
	"testing"
)

// TestStoredMessagesCannotDriveTheTerminal: a plugin's message with escape sequences (a
// colour, a window title, a screen clear) reaches the CLI's output without them.
func TestStoredMessagesCannotDriveTheTerminal(t *testing.T) {
	t.Parallel()
	a := setup(t)
	const evil = "failed \x1b[31mred\x1b[0m \x1b]0;owned\x07\x1b[2Jcleared\rover"
	if _, err := a.store.Pool().Exec(context.Background(),
		`UPDATE resources SET message = $1 WHERE namespace = 'production' AND name = 'orders-pg'`, evil); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"describe", "DatabaseCluster/orders-pg", "-n", "production"},
		{"get", "resources", "-n", "production", "-o", "wide"},
	} {
		out, stderr, err := a.run(t, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr)
		}
		if strings.ContainsAny(out, "\x1b\x07\r") {
			t.Errorf("%v printed control characters: %q", args, out)
		}
		if args[0] == "describe" && !strings.Contains(out, "failed red cleared") && !strings.Contains(out, "failed red  clearedover") {
			t.Errorf("%v lost the message's text:\n%s", args, out)
		}
	}
}
