package kubelet

import "time"

// backOff is the kubelet's crash-loop back-off for one container: the first
// restart is immediate; after that a restart waits until cur has passed since
// the previous exit, and cur doubles (from base up to max) at each restart.
// After 2×max without a restart the back-off starts over.
type backOff struct {
	base, max  time.Duration
	cur        time.Duration // zero: no entry yet
	lastUpdate time.Time
}

func newBackOff(base, max time.Duration) *backOff { return &backOff{base: base, max: max} }

// expired reports whether the entry is too old to count (event is the exit time).
func (b *backOff) expired(event time.Time) bool {
	return b.cur == 0 || event.Sub(b.lastUpdate) > 2*b.max
}

// wait returns how long to wait before restarting a container that exited at
// finished; zero means restart now (and records the restart).
func (b *backOff) wait(finished, now time.Time) time.Duration {
	if !b.expired(finished) {
		if since := now.Sub(finished); since < b.cur {
			return b.cur - since
		}
	}
	if b.expired(finished) {
		b.cur = b.base
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	b.lastUpdate = now
	return 0
}

// current is the back-off the next wait would use, for messages.
func (b *backOff) current() time.Duration { return b.cur }
