package actions

import (
	"fmt"
	"time"
)

// ParseDuration reads an optional duration setting of a plugin's config (`timeout:`,
// `pollInterval:` …): def when empty or "0", an error naming the setting when it is not a
// duration or negative.
func ParseDuration(setting, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("config: %s: %w", setting, err)
	}
	if d < 0 {
		return 0, fmt.Errorf("config: %s %s is negative", setting, s)
	}
	if d == 0 {
		return def, nil
	}
	return d, nil
}
