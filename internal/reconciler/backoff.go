package reconciler

import "time"

// Backoff is the delay before retry number attempt (1 for the first retry): initial doubled
// per attempt up to max, with ±20% jitter that stays inside [initial·0.8, max], so that
// resources failing together do not retry together and the cap is a real cap. r is a random
// number in [0, 1).
func Backoff(attempt int, initial, maxDelay time.Duration, r float64) time.Duration {
	if maxDelay < initial {
		maxDelay = initial
	}
	d := initial
	for i := 1; i < attempt && d < maxDelay; i++ {
		d *= 2
	}
	d = min(d, maxDelay)
	lo := time.Duration(float64(d) * 0.8)
	hi := min(time.Duration(float64(d)*1.2), maxDelay)
	return lo + time.Duration(float64(hi-lo)*r)
}
