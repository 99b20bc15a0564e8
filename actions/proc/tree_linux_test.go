package proc

import "testing"

func TestSigMasks(t *testing.T) {
	t.Parallel()
	const status = "Name:\tbash\nSigQ:\t0/7823\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n" +
		"SigBlk:\t0000000000000000\nSigIgn:\t0000000000004004\nSigCgt:\t000000004b813efb\n"
	caught, ignored, err := sigMasks([]byte(status))
	if err != nil || caught != 0x4b813efb || ignored != 0x4004 {
		t.Fatalf("sigMasks = %#x, %#x, %v", caught, ignored, err)
	}
	for _, bad := range []string{"Name:\tx\n", "SigIgn:\tzz\nSigCgt:\t0\n"} {
		if _, _, err := sigMasks([]byte(bad)); err == nil {
			t.Errorf("sigMasks(%q): err = nil", bad)
		}
	}
}

func TestDiesOfTERM(t *testing.T) {
	t.Parallel()
	const term = 1 << 14 // SIGTERM is 15
	for _, tc := range []struct {
		name            string
		caught, ignored uint64
		want            bool
	}{
		{"default disposition", 0, 0, true},
		{"other signals handled", ^uint64(term), ^uint64(term), true},
		{"handler (trap, Go runtime)", term, 0, false},
		{"ignored (trap '')", 0, term, false},
	} {
		if got := diesOfTERM(tc.caught, tc.ignored); got != tc.want {
			t.Errorf("%s: diesOfTERM = %v, want %v", tc.name, got, tc.want)
		}
	}
}
