package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestSourcePinCLI(t *testing.T) {
	t.Parallel()
	a := setup(t)
	ctx := context.Background()
	// infra applied rev1 at t0, rev2 41 minutes ago.
	if _, err := a.store.Pool().Exec(ctx, `UPDATE source_revisions SET applied_at = CASE revision WHEN $1 THEN $2::timestamptz ELSE $3::timestamptz END`,
		rev1, t0, cliNow.Add(-41*time.Minute)); err != nil {
		t.Fatal(err)
	}
	out, _, err := a.run(t, "source", "history", "infra")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "REVISION AUTHOR APPLIED CURRENT PINNED" ||
		!strings.HasPrefix(lines[1], rev2[:12]) || strings.Join(strings.Fields(lines[1])[1:], " ") != "<none> 41m ago true false" || !strings.HasPrefix(lines[2], rev1[:12]) {
		t.Errorf("source history: err %v\n%s", err, out)
	}

	if _, _, err := a.run(t, "source", "pin", "infra", rev1[:7]); err == nil || !strings.Contains(err.Error(), "--reason is required") {
		t.Errorf("pin without a reason: %v", err)
	}
	if _, _, err := a.run(t, "source", "pin", "infra", "0000000", "--reason", "x"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("pin at an unknown revision: %v", err)
	}
	out, _, err = a.run(t, "source", "pin", "infra", rev1[:7], "--reason", "incident 42")
	if err != nil || out != "source infra pinned at "+rev1[:12]+" by anonymous\n" {
		t.Errorf("pin: err %v stdout %q", err, out)
	}
	if pin, err := a.store.SourcePin(ctx, "infra"); err != nil || pin == nil || pin.Revision != rev1 || pin.Reason != "incident 42" {
		t.Errorf("pin stored: %+v %v", pin, err)
	}
	// The syncer records the head it does not apply.
	head := strings.Repeat("e", 40)
	if err := a.store.RecordPending(ctx, "infra", rev1, head, nil); err != nil {
		t.Fatal(err)
	}
	out, _, err = a.run(t, "get", "sources")
	if err != nil || !strings.Contains(out, rev2[:12]+" (PINNED, pending "+head[:12]+")") {
		t.Errorf("get sources shows no pin: err %v\n%s", err, out)
	}
	out, _, err = a.run(t, "describe", "source", "infra")
	if err != nil || !strings.Contains(out, "Pinned:") || !strings.Contains(out, rev1[:12]+" by anonymous") ||
		!strings.Contains(out, ": incident 42; pending "+head[:12]) {
		t.Errorf("describe source shows no pin: err %v\n%s", err, out)
	}
	out, _, err = a.run(t, "source", "history", "infra", "-o", "json")
	if err != nil || !strings.Contains(out, `"pinned": true`) {
		t.Errorf("source history -o json: err %v\n%s", err, out)
	}

	out, _, err = a.run(t, "source", "unpin", "infra", "--reason", "resolved")
	if err != nil || out != "source infra unpinned by anonymous\n" {
		t.Errorf("unpin: err %v stdout %q", err, out)
	}
	if pin, err := a.store.SourcePin(ctx, "infra"); err != nil || pin != nil {
		t.Errorf("after unpin: %+v %v", pin, err)
	}
	if _, _, err := a.run(t, "source", "history", "infra", "--limit", "0"); err == nil {
		t.Error("history --limit 0: no error")
	}
}
