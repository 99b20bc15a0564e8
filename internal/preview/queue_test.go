package preview

import (
	"reflect"
	"testing"
)

func TestAdmit(t *testing.T) {
	t.Parallel()
	ev := func(n int, sha string) Event { return Event{Number: n, HeadSHA: sha} }
	run := func(n int, sha string) *Event { e := ev(n, sha); return &e }
	for _, tc := range []struct {
		name      string
		queue     []Event
		running   *Event
		ev        Event
		want      []Event
		admission admission
		cancel    bool
	}{
		{"empty", nil, nil, ev(7, "a"), []Event{ev(7, "a")}, admitted, false},
		{"another PR queued", []Event{ev(1, "x")}, nil, ev(7, "a"), []Event{ev(1, "x"), ev(7, "a")}, admitted, false},
		{"same head queued", []Event{ev(7, "a")}, nil, ev(7, "a"), []Event{ev(7, "a")}, duplicate, false},
		{"newer head replaces queued", []Event{ev(1, "x"), ev(7, "a"), ev(2, "y")}, nil, ev(7, "b"),
			[]Event{ev(1, "x"), ev(7, "b"), ev(2, "y")}, replaced, false},
		{"same head running", nil, run(7, "a"), ev(7, "a"), nil, duplicate, false},
		{"newer head cancels running", nil, run(7, "a"), ev(7, "b"), []Event{ev(7, "b")}, admitted, true},
		{"newer head cancels running, replaces queued", []Event{ev(7, "b")}, run(7, "a"), ev(7, "c"), []Event{ev(7, "c")}, replaced, true},
		{"another PR running", nil, run(1, "x"), ev(7, "a"), []Event{ev(7, "a")}, admitted, false},
		{"full", []Event{ev(1, "x"), ev(2, "y")}, nil, ev(7, "a"), []Event{ev(1, "x"), ev(2, "y")}, full, false},
		{"full but replaces", []Event{ev(1, "x"), ev(7, "y")}, nil, ev(7, "a"), []Event{ev(1, "x"), ev(7, "a")}, replaced, false},
		{"full does not cancel", []Event{ev(1, "x"), ev(2, "y")}, run(7, "a"), ev(7, "b"), []Event{ev(1, "x"), ev(2, "y")}, full, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, a, cancel := admit(append([]Event(nil), tc.queue...), tc.running, tc.ev, 2)
			if !reflect.DeepEqual(got, tc.want) || a != tc.admission || cancel != tc.cancel {
				t.Errorf("admit = %v, %v, %v; want %v, %v, %v", got, a, cancel, tc.want, tc.admission, tc.cancel)
			}
		})
	}
}
