package main

import (
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
)

func TestMain(m *testing.M) {
	// Ages in tables are measured against a fixed clock, and times are encoded in UTC
	// whatever the machine's zone, so golden files hold still.
	now = func() time.Time { return cliNow }
	time.Local = time.UTC
	pgtest.Main(m)
}
