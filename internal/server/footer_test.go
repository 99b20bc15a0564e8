package server

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/status"
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

// A retry a replica runs reads "running now" on the resource page: the API gives no time
// while the lease is held.
func TestDashboardRetryRunning(t *testing.T) {
	t.Parallel()
	srv, st := setupAuth(t, 1)
	now := time.Now()
	s, _ := status.Result(status.State{Phase: status.PhaseReady, ObservedGeneration: 1, Conditions: status.Initial(now)},
		status.Outcome{Generation: 1, CurrentGeneration: 1, Err: "exit status 1"}, now)
	cj, err := json.Marshal(s.Conditions)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(context.Background(), `WITH r AS (UPDATE resources SET phase = $1, conditions = $2
		WHERE namespace = 'alpha' AND name = 'q000' RETURNING id)
		UPDATE resource_queue q SET run_at = now() - interval '20 seconds',
		lease_owner = 'replica-1', lease_token = gen_random_uuid(), lease_expires_at = now() + interval '1 hour'
		FROM r WHERE q.id = r.id`, s.Phase, cj); err != nil {
		t.Fatal(err)
	}
	code, body := getAs(t, formClient(t), srv.URL+"/resources/alpha/Queue/q000", "admin")
	if code != 200 || !strings.Contains(body, "<dt>Next retry</dt><dd>running now</dd>") {
		t.Errorf("%d; no running retry in\n%s", code, body)
	}
}
