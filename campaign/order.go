package campaign

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/reports"
)

// Case orders (Config.Order).
const (
	// OrderBreadth interleaves properties so that the first steps of any budget
	// touch as many distinct properties as possible (the default).
	OrderBreadth = "breadth"
	// OrderPlan keeps the plan's order (alphabetical by property).
	OrderPlan = "plan"
)

// heavyFields are the top-level properties whose changes make the operator do
// the most (roll, resize, re-wire): they come first in the breadth order.
var heavyFields = []string{"replicas", "image", "config", "persistence", "storage", "auth", "tls", "resources"}

// orderCases returns the test cases in the given order. The breadth order is a
// round-robin over top-level properties (the operation-heavy ones first, the
// rest in a seeded shuffle); within one top-level property, a round-robin over
// its sub-properties (shallowest first) in a seeded shuffle. The same seed gives
// the same order. It is budget-aware: the first round gives every top-level
// property one valid case that changes something the operator reads (no
// misoperation, no boundary value), so a short budget is not spent on cases
// whose outcome is known; cases asking for more pods than the test cluster
// holds (capacity; 0 is inputgen.DefaultPodCapacity) run last.
func orderCases(cases []*inputgen.TestCase, order string, seed int64, capacity int) ([]*inputgen.TestCase, error) {
	switch order {
	case OrderPlan:
		return cases, nil
	case "", OrderBreadth:
	default:
		return nil, fmt.Errorf("unknown case order %q: use %s or %s", order, OrderBreadth, OrderPlan)
	}
	if capacity <= 0 {
		capacity = inputgen.DefaultPodCapacity
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6272656164746821))
	// top-level property -> sub-property -> cases (plan order).
	tops := map[string]map[string][]*inputgen.TestCase{}
	var beyond []*inputgen.TestCase
	for _, tc := range cases {
		top := topLevel(tc.Property)
		if tops[top] == nil {
			tops[top] = map[string][]*inputgen.TestCase{}
		}
		tops[top][tc.Property] = append(tops[top][tc.Property], tc)
	}
	var names []string
	for n := range tops {
		names = append(names, n)
	}
	sort.Strings(names)
	rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	sort.SliceStable(names, func(i, j int) bool { return heavyRank(names[i]) < heavyRank(names[j]) })

	queues := make([][]*inputgen.TestCase, len(names))
	for i, n := range names {
		q := interleaveSubs(tops[n], rng)
		// Beyond capacity: last, in breadth order among themselves.
		kept := q[:0:0]
		for _, tc := range q {
			if tc.Pods > capacity {
				beyond = append(beyond, tc)
			} else {
				kept = append(kept, tc)
			}
		}
		queues[i] = kept
	}
	// The first round: per top-level property its best opening case.
	var head []*inputgen.TestCase
	for i := range queues {
		best, rank := -1, openRankNone
		for j, tc := range queues[i] {
			if r := openRank(tc); r < rank {
				best, rank = j, r
			}
		}
		if best >= 0 {
			head = append(head, queues[i][best])
			queues[i] = append(queues[i][:best:best], queues[i][best+1:]...)
		}
	}
	var rest []*inputgen.TestCase
	for more := true; more; {
		more = false
		for i := range queues {
			if len(queues[i]) > 0 {
				rest = append(rest, queues[i][0])
				queues[i] = queues[i][1:]
				more = true
			}
		}
	}
	// A property with no opening case leaves the first round short: fill it with
	// the next valid cases, so no misoperation runs before the round's end.
	for i := 0; i < len(rest) && len(head) < len(names); {
		if openRank(rest[i]) < openRankNone {
			head = append(head, rest[i])
			rest = append(rest[:i:i], rest[i+1:]...)
			continue
		}
		i++
	}
	out := make([]*inputgen.TestCase, 0, len(cases))
	out = append(append(append(out, head...), rest...), beyond...)
	return out, nil
}

// Opening ranks (openRank): lower opens a top-level property sooner.
const (
	openSets     = iota // a valid update setting a value the operator reads
	openOther           // a valid removal, or one that re-creates the object
	openRankNone        // not an opening case
)

// openRank says how well a test case opens its top-level property's breadth
// round: only valid, non-boundary cases that change an effective value do.
func openRank(tc *inputgen.TestCase) int {
	if tc.Label != inputgen.Valid || IsBoundary(tc) || (tc.Effective == nil && len(tc.Covers) == 0) {
		return openRankNone
	}
	if tc.Effective != nil && len(tc.Effective) == 0 {
		return openRankNone
	}
	if tc.Recreate || isRemoval(tc) {
		return openOther
	}
	return openSets
}

// IsBoundary reports whether a test case sets a schema bound or an extreme
// (the minimum or maximum of a number, more replicas or storage than a cluster
// has): its outcome is mostly known, so it waits for the first breadth round.
func IsBoundary(tc *inputgen.TestCase) bool {
	g := tc.Generator
	return strings.HasSuffix(g, "/min") || strings.HasSuffix(g, "/max") || strings.Contains(g, "boundary") ||
		strings.HasSuffix(g, "/beyond-capacity") || strings.HasSuffix(g, "/exceed")
}

// isRemoval reports whether a test case's generator removes or nulls a value.
func isRemoval(tc *inputgen.TestCase) bool {
	g := tc.Generator
	return strings.HasSuffix(g, "/remove") || strings.HasSuffix(g, "/remove-last") || strings.HasSuffix(g, "/remove-key") || strings.HasSuffix(g, "/null")
}

// HeldBack is a test case the breadth order runs late, with why.
type HeldBack = reports.HeldBack

// HeldBackCases lists the cases the breadth order holds back to its end:
// those asking for more pods than the test cluster holds (they run once, as
// misoperations, with the misoperation convergence bound).
func HeldBackCases(plan *inputgen.Plan, cases []*inputgen.TestCase) []HeldBack {
	capacity := plan.PodCapacity
	if capacity <= 0 {
		capacity = inputgen.DefaultPodCapacity
	}
	var out []HeldBack
	for _, tc := range cases {
		if tc.Pods > capacity {
			out = append(out, HeldBack{ID: tc.ID, Reason: inputgen.BeyondCapacityReason(tc.Pods, capacity) +
				": runs last, once, as a misoperation with the short convergence bound"})
		}
	}
	return out
}

// interleaveSubs orders one top-level property's cases: a round-robin over its
// sub-properties, shallowest first, each one's cases shuffled.
func interleaveSubs(subs map[string][]*inputgen.TestCase, rng *rand.Rand) []*inputgen.TestCase {
	var paths []string
	for p := range subs {
		paths = append(paths, p)
	}
	sort.Strings(paths) // the random draws happen in a fixed order
	for _, p := range paths {
		cs := subs[p]
		rng.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
	}
	rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	sort.SliceStable(paths, func(i, j int) bool { return strings.Count(paths[i], ".") < strings.Count(paths[j], ".") })
	var out []*inputgen.TestCase
	for more := true; more; {
		more = false
		for _, p := range paths {
			if cs := subs[p]; len(cs) > 0 {
				out = append(out, cs[0])
				subs[p] = cs[1:]
				more = true
			}
		}
	}
	return out
}

// topLevel is the first field under spec of a property path ("spec.config{*}"
// -> "config").
func topLevel(property string) string {
	p := strings.TrimPrefix(property, "spec.")
	if i := strings.IndexAny(p, ".[{#"); i >= 0 {
		p = p[:i]
	}
	return p
}

func heavyRank(top string) int {
	for i, h := range heavyFields {
		if top == h {
			return i
		}
	}
	return len(heavyFields)
}
