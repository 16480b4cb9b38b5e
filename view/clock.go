package view

import (
	"sort"
	"strconv"
	"sync"
	"time"
)

// clock is the lag bookkeeping: when the proxy first saw each resource
// version (in list answers and watch events), so that "the cluster as it was
// T ago" names a resource version the API server can serve exactly.
// Resource versions are read as etcd revisions (decimal integers); others are
// not recorded.
type clock struct {
	mu sync.Mutex
	// seen holds revisions in increasing order with their first-seen time
	// (non-decreasing, since a revision is recorded once, when first seen).
	seen []stamp
	// keep bounds the history by age.
	keep time.Duration
}

type stamp struct {
	rv uint64
	at time.Time
}

func newClock(keep time.Duration) *clock {
	return &clock{keep: keep}
}

// parseRV reads a resource version as a revision; ok is false for anything else.
func parseRV(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil && n > 0
}

// observe records that rv was seen at now unless it is not newer than the
// newest revision recorded (seen before, or an old object's version, which
// says nothing about when it was current).
func (c *clock) observe(rv string, now time.Time) {
	n, ok := parseRV(rv)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.seen) > 0 && n <= c.seen[len(c.seen)-1].rv {
		return
	}
	c.seen = append(c.seen, stamp{n, now})
	c.prune(now)
}

// prune drops revisions older than keep, always keeping the newest one.
func (c *clock) prune(now time.Time) {
	cut := 0
	for cut < len(c.seen)-1 && now.Sub(c.seen[cut].at) > c.keep {
		cut++
	}
	if cut > 0 {
		c.seen = append(c.seen[:0], c.seen[cut:]...)
	}
}

// at is the newest revision first seen at or before t; ok is false when the
// proxy saw none that early (then oldest is the oldest it knows, if any).
func (c *clock) at(t time.Time) (rv string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := sort.Search(len(c.seen), func(i int) bool { return c.seen[i].at.After(t) })
	if i == 0 {
		return "", false
	}
	return strconv.FormatUint(c.seen[i-1].rv, 10), true
}

// reached is when the cluster had reached rv at the latest: the first-seen
// time of the oldest recorded revision at or after rv. ok is false when the
// proxy has seen none that new.
func (c *clock) reached(rv string) (time.Time, bool) {
	n, ok := parseRV(rv)
	if !ok {
		return time.Time{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	i := sort.Search(len(c.seen), func(i int) bool { return c.seen[i].rv >= n })
	if i == len(c.seen) {
		return time.Time{}, false
	}
	return c.seen[i].at, true
}
