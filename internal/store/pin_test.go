package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// rev40 is a 40-character revision starting with prefix.
func rev40(prefix string) string { return prefix + strings.Repeat("0", 40-len(prefix)) }

func TestPinSource(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	a, b, c := rev40("aaaa111"), rev40("aaaa112"), rev40("bbbb111")
	for _, r := range []string{a, b, c} {
		if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: r, Set: widgets(1, func(int) int { return 1 })}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		rev     string
		want    string
		wantErr error
	}{
		{rev: "BBBB111", want: c},
		{rev: a, want: a},
		{rev: rev40("cccc"), wantErr: ErrNotFound}, // a full hash the source never applied
		{rev: "aaaa11", wantErr: ErrBadRequest},    // shorter than 7
		{rev: "main", wantErr: ErrBadRequest},
		{rev: "aaaa111", want: a},
		{rev: "aaaa110", wantErr: ErrNotFound},
	} {
		pin, err := st.PinSource(ctx, "s", tc.rev, "alice", "incident 7")
		if !errors.Is(err, tc.wantErr) || pin.Revision != tc.want {
			t.Errorf("PinSource(%q) = %q, %v; want %q, %v", tc.rev, pin.Revision, err, tc.want, tc.wantErr)
		}
	}
	// A prefix naming two revisions is ambiguous.
	if _, err := st.pool.Exec(ctx, `INSERT INTO source_revisions (source, revision) VALUES ('s', $1)`, rev40("aaaa1110")+"x"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PinSource(ctx, "s", "aaaa111", "alice", "x"); !errors.Is(err, ErrAmbiguous) {
		t.Errorf("ambiguous prefix: %v, want ErrAmbiguous", err)
	}
	if _, err := st.pool.Exec(ctx, `DELETE FROM source_revisions WHERE revision LIKE '%x'`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PinSource(ctx, "nope", a, "alice", "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown source: %v, want ErrNotFound", err)
	}

	pin, err := st.PinSource(ctx, "s", "aaaa112", "alice", "incident 7")
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.SourcePin(ctx, "s")
	if err != nil || got == nil || got.Revision != b || got.Actor != "alice" || got.Reason != "incident 7" || !got.At.Equal(pin.At) {
		t.Fatalf("SourcePin = %+v, %v; want %+v", got, err, pin)
	}
	src, err := st.GetSource(ctx, "s")
	if err != nil || src.Pin == nil || src.Pin.Revision != b {
		t.Fatalf("GetSource pin = %+v, %v", src.Pin, err)
	}
	evs, err := st.ListEvents(ctx, Everything, EventFilter{Source: "s", Limit: 1})
	if err != nil || len(evs) != 1 || evs[0].Reason != ReasonPinned || evs[0].Message != "source pinned at "+b[:12]+" by alice: incident 7" {
		t.Fatalf("pin event = %+v, %v", evs, err)
	}

	// An apply under another pin than the source's applies nothing.
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: c, Set: widgets(2, func(int) int { return 2 })}); !errors.Is(err, ErrPinChanged) {
		t.Fatalf("apply unpinned while pinned: %v, want ErrPinChanged", err)
	}
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: b, Pinned: b, Set: widgets(1, func(int) int { return 1 })}); err != nil {
		t.Fatal(err)
	}

	// The head it does not apply is its pending revision, with one event per revision.
	for range 2 {
		if err := st.RecordPending(ctx, "s", b, c, nil); err != nil {
			t.Fatal(err)
		}
	}
	src, _ = st.GetSource(ctx, "s")
	evs, _ = st.ListEvents(ctx, Everything, EventFilter{Source: "s", Limit: 2})
	if src.PendingRevision != c || evs[0].Reason != ReasonRevisionPending || evs[1].Reason == ReasonRevisionPending {
		t.Errorf("pending %q, events %+v; want %s and one RevisionPending", src.PendingRevision, evs, c)
	}

	// History: the last applied first, a revision applied again counted from then.
	hist, err := st.SourceHistory(ctx, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, h := range hist {
		order = append(order, h.Revision[:7])
	}
	if strings.Join(order, " ") != "aaaa112 bbbb111 aaaa111" || !hist[0].Current || !hist[0].Pinned || hist[1].Current || hist[1].Pinned {
		t.Errorf("history %v (%+v), want aaaa112 (current, pinned) bbbb111 aaaa111", order, hist)
	}
	if hist, _ := st.SourceHistory(ctx, "s", 1); len(hist) != 1 {
		t.Errorf("history limit 1: %d revisions", len(hist))
	}

	if err := st.UnpinSource(ctx, "s", "bob", "over"); err != nil {
		t.Fatal(err)
	}
	if got, err := st.SourcePin(ctx, "s"); got != nil || err != nil {
		t.Errorf("after unpin SourcePin = %+v, %v", got, err)
	}
	src, _ = st.GetSource(ctx, "s")
	evs, _ = st.ListEvents(ctx, Everything, EventFilter{Source: "s", Limit: 1})
	if src.Pin != nil || src.PendingRevision != "" || evs[0].Reason != ReasonUnpinned || evs[0].Message != "source unpinned by bob: over" {
		t.Errorf("after unpin: pin %+v, pending %q, event %+v", src.Pin, src.PendingRevision, evs[0])
	}
	if err := st.UnpinSource(ctx, "nope", "bob", ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("unpin unknown source: %v", err)
	}
	// Unpinning a source that is not pinned records nothing.
	if err := st.UnpinSource(ctx, "s", "bob", "again"); !errors.Is(err, ErrNotPinned) || err.Error() != "unpin source: source s is not pinned" {
		t.Errorf("unpin a source not pinned: %v, want ErrNotPinned", err)
	}
	if again, _ := st.ListEvents(ctx, Everything, EventFilter{Source: "s", Limit: 1}); len(again) != 1 || again[0].ID != evs[0].ID {
		t.Errorf("unpin a source not pinned wrote an event: %+v", again)
	}
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: c, Set: widgets(2, func(int) int { return 2 })}); err != nil {
		t.Errorf("apply once unpinned: %v", err)
	}
}

// A digest revision (an OCI artifact's) is pinned by its abbreviation, sha256:<hex prefix>.
func TestPinDigestPrefix(t *testing.T) {
	t.Parallel()
	st := openTest(t, "o")
	ctx := context.Background()
	d := "sha256:0123456789ab" + strings.Repeat("c", 52)
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "o", Revision: d, Set: widgets(1, func(int) int { return 1 })}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rev     string
		wantErr error
	}{{"sha256:0123456789ab", nil}, {d, nil}, {"SHA256:0123456", nil}, {"sha256:012345", ErrBadRequest}, {"sha256:0123457", ErrNotFound}} {
		pin, err := st.PinSource(ctx, "o", tc.rev, "alice", "x")
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && pin.Revision != d) {
			t.Errorf("PinSource(%q) = %q, %v; want %v", tc.rev, pin.Revision, err, tc.wantErr)
		}
	}
}
