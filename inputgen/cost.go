package inputgen

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/semantic"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// DefaultPodCapacity is how many operand pods a test cluster is assumed to hold (Options.PodCapacity):
// a single-node embedded cluster shared by the operator, its operand and the harness runs a couple
// of dozen pods; a case asking for more is a misoperation (it only tests how the operator copes with
// pods that never schedule or start), run late, once, with the short misoperation bound.
const DefaultPodCapacity = 24

// maxPodEstimate caps estimates so products of large counts do not overflow.
const maxPodEstimate = 1 << 20

// shardRE names the integer fields that count groups of pods (shards, primaries), each group running
// one pod plus the replica-like count beside it (nodes × (1 + replicas) on a sharded operator).
var shardRE = regexp.MustCompile(`(?i)^(shards|shardcount|numshards|.+shards|nodes|masters|primaries|numprimaries)$`)

// podGroup is the replica-like integer fields of one object: their values give the pods of one
// workload.
type podGroup struct {
	// parent is the object holding the fields (a JSON pointer; "/spec" for top-level fields).
	parent string
	// shards are the shard-like fields, replicas the other replica-like ones.
	shards, replicas []*crd.Property
}

// podGroups finds the replica-like integer fields (not inside lists) grouped by the object that
// holds them.
func podGroups(s *crd.Schema) []podGroup {
	by := map[string]*podGroup{}
	for _, p := range s.Properties() {
		if p.Type != crd.TypeInteger || p.Semantic == nil || p.Semantic.Hint != semantic.HintReplicas || p.InsideList() || p.Parent == nil {
			continue
		}
		if p.Path.String() == "" || !strings.HasPrefix(p.Path.String(), "spec.") {
			continue
		}
		ptr, ok := pointerOf(p.Parent.Path)
		if !ok {
			continue
		}
		g := by[ptr]
		if g == nil {
			g = &podGroup{parent: ptr}
			by[ptr] = g
		}
		if shardRE.MatchString(p.Name()) {
			g.shards = append(g.shards, p)
		} else {
			g.replicas = append(g.replicas, p)
		}
	}
	out := make([]podGroup, 0, len(by))
	for _, g := range by {
		if len(g.replicas) == 0 {
			// Shard-like names alone ("nodes" of a database) count pods themselves.
			g.replicas, g.shards = g.shards, nil
		}
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].parent < out[j].parent })
	return out
}

// countOf is the effective value of an integer count field in state: its value, else its default,
// else its minimum, else absent (a group member the operator adds nothing for).
func countOf(state map[string]any, parent string, p *crd.Property, absent int64) int64 {
	v, ok := jsonv.Get(state, parent+jsonv.Pointer([]jsonv.Token{p.Name()}))
	if !ok || v == nil {
		switch {
		case p.HasDefault:
			v = p.Default
		case p.Minimum != nil:
			return int64(*p.Minimum)
		default:
			return absent
		}
	}
	n, ok := jsonv.AsInt(v)
	if !ok || n < 0 {
		return 0
	}
	return min(n, maxPodEstimate)
}

// PodsOf estimates the operand pods a desired state asks for: per object holding replica-like
// fields, shards × (1 + replicas) when a shard-like field sits beside a replica-like one, else the
// sum of the replica-like fields; an absent object asks for none. It returns 0 when the schema names
// no such field.
func podsOf(groups []podGroup, state map[string]any) int {
	total := int64(0)
	for _, g := range groups {
		if g.parent != "/spec" {
			if v, ok := jsonv.Get(state, g.parent); !ok || v == nil {
				continue
			}
		}
		var pods int64
		if len(g.shards) > 0 {
			per := int64(1)
			for _, r := range g.replicas {
				per += countOf(state, g.parent, r, 0)
			}
			pods = per
			for _, s := range g.shards {
				pods = min(pods*countOf(state, g.parent, s, 1), maxPodEstimate)
			}
		} else {
			for _, r := range g.replicas {
				pods += countOf(state, g.parent, r, 1)
			}
		}
		total = min(total+pods, maxPodEstimate)
	}
	return int(total)
}

// podCapacity is the capacity the generator judges cases against.
func (g *Generator) podCapacity() int {
	if g.opts.PodCapacity > 0 {
		return g.opts.PodCapacity
	}
	return DefaultPodCapacity
}

// checkPodEstimate drops the pod estimate when it says the seed alone is beyond the test
// cluster's capacity: the seed must run there (the campaign stops if it does not), so the fields
// the estimate reads do not count pods (cert-manager's spec.privateKey.size: 2048, a key size
// named like a replica count, made every Certificate case "beyond capacity, about 256 pods"). The
// seed's warnings say so, and no case is held back for capacity.
func (g *Generator) checkPodEstimate() {
	if len(g.pods) == 0 {
		return
	}
	n, capacity := podsOf(g.pods, g.base), g.podCapacity()
	if n <= capacity {
		return
	}
	w := fmt.Sprintf("pod estimate dropped: %s would make the seed alone about %d pods, more than the test cluster's %d, yet the seed runs there; those fields do not count pods, so no case is held back for capacity",
		strings.Join(g.PodFields(), ", "), n, capacity)
	g.seedWarnings = append(g.seedWarnings, w)
	g.log.Warn("seed", "warning", w)
	g.pods = nil
}

// estimatePods sets the test case's peak pod estimate over its states and makes a valid case
// that asks for more pods than the test cluster holds a misoperation: it cannot converge there.
func (g *Generator) estimatePods(tc *TestCase, states []map[string]any) {
	if len(g.pods) == 0 {
		return
	}
	peak := 0
	for _, st := range states {
		peak = max(peak, podsOf(g.pods, st))
	}
	tc.Pods = peak
	if capacity := g.podCapacity(); peak > capacity && tc.Label == Valid {
		tc.Label = Misoperation
		tc.Description += misoperationMarker + BeyondCapacityReason(peak, capacity)
	}
}

// BeyondCapacityReason says why a case asking for pods beyond the test cluster's capacity is held
// back.
func BeyondCapacityReason(pods, capacity int) string {
	return fmt.Sprintf("beyond the test cluster's capacity (about %d pods, more than the %d it holds)", pods, capacity)
}

// PodFields names the fields pod estimates multiply or add (for reports), e.g.
// "spec.nodes × (1 + spec.replicas)".
func (g *Generator) PodFields() []string {
	var out []string
	for _, gr := range g.pods {
		var rs []string
		for _, r := range gr.replicas {
			rs = append(rs, r.Path.String())
		}
		if len(gr.shards) == 0 {
			out = append(out, strings.Join(rs, " + "))
			continue
		}
		var ss []string
		for _, s := range gr.shards {
			ss = append(ss, s.Path.String())
		}
		out = append(out, strings.Join(ss, " × ")+" × (1 + "+strings.Join(rs, " + ")+")")
	}
	return out
}
