package server

import (
	"bytes"
	"strings"
	"testing"
)

// The footer says what the caller can do: an operator's buttons, a signed-in viewer's role,
// signing in where a login exists, and who sees buttons otherwise.
func TestDashboardFooter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		l    layout
		want string
	}{
		{"operator", layout{Operator: true, User: "ann"}, "operator: Reconcile, Sync, Suspend and Resume each ask to confirm, where your role allows them"},
		{"signed-in viewer", layout{User: "ann", LoginURL: "/login"}, "read-only (your role is viewer)"},
		{"not signed in", layout{LoginURL: "/login"}, "read-only (sign in as an operator to reconcile or suspend)"},
		{"anonymous", layout{}, "read-only (operators see Reconcile and Suspend)"},
	} {
		var buf bytes.Buffer
		if err := pages["error.html"].ExecuteTemplate(&buf, "layout", tc.l); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body := buf.String()
		foot := body[strings.Index(body, "<footer"):]
		if !strings.Contains(foot, tc.want) {
			t.Errorf("%s: footer lacks %q:\n%s", tc.name, tc.want, foot)
		}
	}
}
