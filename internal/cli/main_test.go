package cli

import (
	"os"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	// Ages are measured against a fixed clock, so that no test depends on how long it runs.
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	Now = func() time.Time { return at }
	os.Exit(m.Run())
}
