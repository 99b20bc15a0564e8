package preview

// admission is what admit decided about an event.
type admission int

const (
	admitted  admission = iota // queued at the end
	replaced                   // took the place of a queued older head of the same pull request
	duplicate                  // the same head is queued or running: nothing to do
	full                       // the queue is full: refused
)

// admit decides what happens to ev given the queue and the preview running now (nil when
// none): a head already queued or running is a duplicate; a newer head of a pull request
// already queued replaces the queued one in place (keeping its turn); otherwise it is
// queued at the end, if there is room. cancel reports that the running preview is of an
// older head of ev's pull request: it is superseded and must be cancelled. The queue
// returned is the new queue (the argument may be reused).
func admit(queue []Event, running *Event, ev Event, max int) (out []Event, a admission, cancel bool) {
	if running != nil && running.Number == ev.Number && running.HeadSHA == ev.HeadSHA {
		return queue, duplicate, false
	}
	cancel = running != nil && running.Number == ev.Number
	for i, q := range queue {
		if q.Number != ev.Number {
			continue
		}
		if q.HeadSHA == ev.HeadSHA {
			return queue, duplicate, cancel
		}
		queue[i] = ev
		return queue, replaced, cancel
	}
	if len(queue) >= max {
		return queue, full, false
	}
	return append(queue, ev), admitted, cancel
}
