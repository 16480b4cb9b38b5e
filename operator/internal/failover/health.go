// Package failover is the operator's Sentinel, as pure functions: health tracking
// from periodic PINGs, the view of a cluster assembled from Kubernetes and from
// the servers, replica selection in Sentinel's order, and the next topology action
// (promote, repoint, move the primary label, switch over, roll). Nothing here
// performs I/O; the reconciler executes one action at a time and observes again.
package failover

import "time"

// Check is the result of one health check (PING) of one pod.
type Check struct {
	At      time.Time
	OK      bool
	Latency time.Duration
	Err     string
}

// Health is what the health checks tell about one pod (at one address).
type Health struct {
	// Addr is the address checked; a pod that changed address starts afresh.
	Addr string
	// Since is when checking this address started.
	Since time.Time
	// LastCheck is when the last check finished.
	LastCheck time.Time
	// LastOK is when a check last succeeded (zero: never).
	LastOK time.Time
	// Latency of the last successful check.
	Latency time.Duration
	// ConsecutiveFailures counts failed checks since the last success.
	ConsecutiveFailures int
	// LastError is the error of the last failed check.
	LastError string
	// Checks counts all checks.
	Checks int
}

// NewHealth starts tracking addr at now.
func NewHealth(addr string, now time.Time) Health {
	return Health{Addr: addr, Since: now}
}

// Record returns h updated with a check.
func (h Health) Record(c Check) Health {
	h.LastCheck = c.At
	h.Checks++
	if c.OK {
		h.LastOK = c.At
		h.Latency = c.Latency
		h.ConsecutiveFailures = 0
		h.LastError = ""
		return h
	}
	h.ConsecutiveFailures++
	h.LastError = c.Err
	return h
}

// DownSince is when the current run of failures started being counted: the last
// success, or the start of tracking if there was none. Zero when the last check
// succeeded (or no check failed).
func (h Health) DownSince() time.Time {
	if h.ConsecutiveFailures == 0 {
		return time.Time{}
	}
	if h.LastOK.IsZero() {
		return h.Since
	}
	return h.LastOK
}

// SubjectivelyDown reports whether the pod has answered no check for downAfter
// (Sentinel's SDOWN): at least one check failed, and the last success (or the start
// of tracking) is downAfter old or more.
func (h Health) SubjectivelyDown(now time.Time, downAfter time.Duration) bool {
	ds := h.DownSince()
	return !ds.IsZero() && now.Sub(ds) >= downAfter
}

// Healthy reports whether the last check succeeded.
func (h Health) Healthy() bool { return h.Checks > 0 && h.ConsecutiveFailures == 0 }
