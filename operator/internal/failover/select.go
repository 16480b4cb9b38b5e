package failover

import (
	"sort"
	"strings"
)

// Candidate is a replica considered for promotion.
type Candidate struct {
	Name string
	// Priority is replica-priority: lower is preferred; 0 never promotes.
	Priority int
	// Offset is the replication offset the replica processed.
	Offset int64
	// RunID is the server's run id (a random 40-character hex string).
	RunID string
}

// Better reports whether a is preferred to b in Sentinel's order: lower
// replica-priority, then higher replication offset, then lexicographically
// smaller run id (case-insensitive, as Sentinel's strcasecmp); the pod name breaks
// what remains, so the order is total.
func Better(a, b Candidate) bool {
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	if a.Offset != b.Offset {
		return a.Offset > b.Offset
	}
	ra, rb := strings.ToLower(a.RunID), strings.ToLower(b.RunID)
	if ra != rb {
		return ra < rb
	}
	return a.Name < b.Name
}

// Select returns the candidate Sentinel would promote: candidates with priority
// 0 (or less) are excluded, then the best by Better. ok is false when none is left.
// The result does not depend on the order of cs.
func Select(cs []Candidate) (best Candidate, ok bool) {
	for _, c := range cs {
		if c.Priority <= 0 {
			continue
		}
		if !ok || Better(c, best) {
			best, ok = c, true
		}
	}
	return best, ok
}

// Rank returns the eligible candidates (priority > 0) best first.
func Rank(cs []Candidate) []Candidate {
	out := make([]Candidate, 0, len(cs))
	for _, c := range cs {
		if c.Priority > 0 {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return Better(out[i], out[j]) })
	return out
}
