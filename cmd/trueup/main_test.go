package main

import (
	"os"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
)

func TestMain(m *testing.M) {
	if os.Getenv("TRUEUP_TEST_RUN_MAIN") == "1" {
		// The test binary standing in for the real one: tests start it as a process
		// (re-exec of os.Args[0]) to run `trueup serve` end to end.
		main()
		os.Exit(0)
	}
	// Ages in tables are measured against a fixed clock, and times are encoded in UTC
	// whatever the machine's zone, so golden files hold still.
	clock = func() time.Time { return cliNow }
	time.Local = time.UTC
	pgtest.Main(m)
}
