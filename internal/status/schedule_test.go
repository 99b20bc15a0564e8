package status

import (
	"testing"
	"time"
)

func TestNextReconcile(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 5, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name                       string
		runAt                      *time.Time
		leased, suspended, blocked bool
		want                       *time.Time
	}{
		{"due or scheduled", &at, false, false, false, &at},
		{"nothing due", nil, false, false, false, nil},
		{"a replica runs it now", &at, true, false, false, nil},
		{"suspended", &at, false, true, false, nil},
		{"blocked", &at, false, false, true, nil},
		{"leased and suspended", &at, true, true, false, nil},
	} {
		got := NextReconcile(tc.runAt, tc.leased, tc.suspended, tc.blocked)
		if (got == nil) != (tc.want == nil) || got != nil && !got.Equal(*tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
