package config

import (
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/policy"
)

// The example, as a windows block.
const windowsExample = `
windows:
  - {name: friday-freeze, kind: deny, schedule: "0 12 * * 5", duration: 60h, timeZone: Europe/Paris,
     match: {namespaces: [production]}, allowOperators: true}
  - {name: db-maintenance, kind: allow, schedule: "0 2 * * *", duration: 2h, match: {kinds: [Database]}}
`

func TestWindows(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(windowsExample), "/x", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.WindowSet().Len() != 2 || c.Windows[0].Duration != 60*time.Hour {
		t.Fatalf("%d windows: %+v", c.WindowSet().Len(), c.Windows)
	}
	// Friday 13:00 in Paris: the freeze holds a production database until Monday 00:00 there,
	// and the maintenance window then until 02:00 UTC; the closed maintenance window does not
	// allow operators to override.
	v := c.WindowSet().Check(&policy.Resource{Namespace: "production", Kind: "Database", Name: "orders"}, time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	if !v.Closed || v.Window != "friday-freeze" || v.AllowOperators || v.Until.Format(time.RFC3339) != "2026-11-30T02:00:00Z" {
		t.Errorf("verdict %+v", v)
	}
}

func TestWindowsErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, yaml, want string }{
		{"unknown key", strings.Replace(windowsExample, "allowOperators:", "allowOperator:", 1), "line 4: field allowOperator not found"},
		{"bad schedule", strings.Replace(windowsExample, `"0 12 * * 5"`, `"0 25 * * 5"`, 1), "windows[0] (friday-freeze).schedule"},
		{"bad zone", strings.Replace(windowsExample, "Europe/Paris", "Europe/Atlantis", 1), "windows[0] (friday-freeze).timeZone"},
		{"bad match", strings.Replace(windowsExample, "[Database]", `["[x"]`, 1), "windows[1] (db-maintenance).match.kinds[0]"},
		{"no duration", strings.Replace(windowsExample, ", duration: 2h", "", 1), "windows[1] (db-maintenance).duration"},
	} {
		_, err := Parse([]byte(c.yaml), "/x", env(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
