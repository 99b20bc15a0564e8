package store

import (
	"errors"
	"slices"
	"testing"
)

// TestPhaseStepAfterWalk: the step a page filtered by phase takes once its walk has run, and
// which of the two reads it made to choose (a read it does not need costs the list a
// statement).
func TestPhaseStepAfterWalk(t *testing.T) {
	t.Parallel()
	failed := errors.New("read failed")
	for _, c := range []struct {
		name      string
		full      bool
		pastWalk  bool
		pastErr   error
		ids       int
		idsErr    error
		want      phaseStep
		wantErr   error
		wantReads []string
	}{
		{name: "the walk filled the page", full: true, pastWalk: true, ids: 10, want: phaseDone},
		{name: "no row past the walk: its rows are the page", pastWalk: false, ids: 10, want: phaseDone,
			wantReads: []string{"past"}},
		{name: "none of the phase", pastWalk: true, ids: 0, want: phaseByID, wantReads: []string{"past", "ids"}},
		{name: "fewer ids than the cap", pastWalk: true, ids: 20, want: phaseByID, wantReads: []string{"past", "ids"}},
		{name: "as many ids as the cap", pastWalk: true, ids: 100, want: phaseByID, wantReads: []string{"past", "ids"}},
		{name: "more ids than the cap", pastWalk: true, ids: 101, want: phasePlanned, wantReads: []string{"past", "ids"}},
		{name: "past the walk unknown", pastErr: failed, ids: 10, want: phaseDone, wantErr: failed,
			wantReads: []string{"past"}},
		{name: "a row past the walk, then a failed read", pastWalk: true, pastErr: failed, ids: 10, want: phaseDone,
			wantErr: failed, wantReads: []string{"past"}},
		{name: "ids unknown", pastWalk: true, idsErr: failed, want: phaseDone, wantErr: failed,
			wantReads: []string{"past", "ids"}},
	} {
		var reads []string
		got, err := phaseStepAfterWalk(c.full, func() (bool, error) {
			reads = append(reads, "past")
			return c.pastWalk, c.pastErr
		}, func() (int, error) {
			reads = append(reads, "ids")
			return c.ids, c.idsErr
		}, 100)
		if got != c.want || !errors.Is(err, c.wantErr) || (err == nil) != (c.wantErr == nil) {
			t.Errorf("%s: step %d, err %v; want %d, %v", c.name, got, err, c.want, c.wantErr)
		}
		if !slices.Equal(reads, c.wantReads) {
			t.Errorf("%s: read %v; want %v", c.name, reads, c.wantReads)
		}
	}
}
