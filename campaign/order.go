package campaign

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/gauntlet-dev/gauntlet/inputgen"
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
// the same order.
func orderCases(cases []*inputgen.TestCase, order string, seed int64) ([]*inputgen.TestCase, error) {
	switch order {
	case OrderPlan:
		return cases, nil
	case "", OrderBreadth:
	default:
		return nil, fmt.Errorf("unknown case order %q: use %s or %s", order, OrderBreadth, OrderPlan)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6272656164746821))
	// top-level property -> sub-property -> cases (plan order).
	tops := map[string]map[string][]*inputgen.TestCase{}
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
		queues[i] = interleaveSubs(tops[n], rng)
	}
	out := make([]*inputgen.TestCase, 0, len(cases))
	for len(out) < len(cases) {
		for i := range queues {
			if len(queues[i]) > 0 {
				out = append(out, queues[i][0])
				queues[i] = queues[i][1:]
			}
		}
	}
	return out, nil
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
