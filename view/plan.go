package view

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// Reference is what the proxy's record of a step that converged cleanly says
// about the operator (Sieve's reference run): the writes it made, the kinds it
// read before writing, and the watch events it reacted to, each distinct kind
// once, in order of first appearance.
type Reference struct {
	// Writes are the distinct writes (verb, resource, subresource).
	Writes []WriteMatch
	// Reads are the resources the operator read (a get, a list, or a watch
	// event delivered) before one of its writes.
	Reads []Resource
	// Events are the distinct watch events (resource, type) delivered to the
	// operator before one of its writes.
	Events []EventMatch
}

// Empty reports whether the record showed no write of the operator's.
func (r Reference) Empty() bool { return len(r.Writes) == 0 }

// bookkeeping are resources whose writes and events are the operator's own
// bookkeeping rather than its reconcile: events it reports and leader leases.
var bookkeeping = map[Resource]bool{
	{Resource: "events"}:                               true,
	{Group: "events.k8s.io", Resource: "events"}:       true,
	{Group: "coordination.k8s.io", Resource: "leases"}: true,
}

// ReadRecord reads a proxy record (JSON lines, as SetRecord writes them).
func ReadRecord(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("view record line %d: %w", n, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("view record: %w", err)
	}
	return out, nil
}

// Analyze derives the reference from a step's records, keeping what concerns
// namespace ns (reads of the whole cluster count as reads of ns): writes that
// succeeded, and the reads and delivered events that came before a later one.
func Analyze(recs []Record, ns string) Reference {
	var ref Reference
	lastWrite := -1
	for i, r := range recs {
		if r.isWrite(ns) {
			lastWrite = i
		}
	}
	seenW := map[WriteMatch]bool{}
	seenR := map[Resource]bool{}
	seenE := map[EventMatch]bool{}
	for i, r := range recs {
		res := Resource{Group: r.Group, Resource: r.Resource}
		if res.Resource == "" || bookkeeping[res] {
			continue
		}
		switch {
		case r.isWrite(ns):
			w := WriteMatch{Verb: r.Verb, Group: r.Group, Resource: r.Resource, Subresource: r.Subresource}
			if !seenW[w] {
				seenW[w] = true
				ref.Writes = append(ref.Writes, w)
			}
		case i < lastWrite && r.What == "request" && (r.Verb == "get" || r.Verb == "list") && r.Subresource == "" && (r.Namespace == ns || r.Namespace == "") && r.Status/100 == 2:
			if !seenR[res] {
				seenR[res] = true
				ref.Reads = append(ref.Reads, res)
			}
		case i < lastWrite && r.What == "watch-event" && (r.Action == "passed" || r.Action == "delayed") && r.Namespace == ns && r.Type != "ERROR" && r.Type != "BOOKMARK":
			if !seenR[res] {
				seenR[res] = true
				ref.Reads = append(ref.Reads, res)
			}
			e := EventMatch{Group: r.Group, Resource: r.Resource, Type: r.Type}
			if !seenE[e] {
				seenE[e] = true
				ref.Events = append(ref.Events, e)
			}
		}
	}
	return ref
}

// isWrite reports whether r is a write of the operator's in ns that the API
// server accepted.
func (r Record) isWrite(ns string) bool {
	return r.What == "request" && writeVerbs[r.Verb] && r.Namespace == ns && r.Status/100 == 2
}

// Plan is one perturbed re-run derived from a reference: a fault of the
// operator's view and its target.
type Plan struct {
	Kind   model.FaultKind
	Target FaultTarget
}

// Key identifies a plan for de-duplication: its kind and target.
func (p Plan) Key() string {
	b, _ := json.Marshal(p.Target)
	return string(p.Kind) + " " + string(b)
}

// String says what the plan does.
func (p Plan) String() string { return p.Target.String(p.Kind) }

// PlanLag is how far behind a derived stale-read view is.
const PlanLag = 5 * time.Second

// Plans derives perturbed re-runs from a reference, as Sieve does: a crash
// after each distinct write, a stale view of each kind read before writing,
// the loss of each event kind reacted to. The three lists are interleaved so
// that a small budget (at most max plans; 0: no bound) still tries every kind
// of fault.
func Plans(ref Reference, max int) []Plan {
	var crash, stale, missed []Plan
	for _, w := range ref.Writes {
		crash = append(crash, Plan{Kind: model.FaultCrashAfterWrite, Target: FaultTarget{Verb: w.Verb, Group: w.Group, Resource: w.Resource, Subresource: w.Subresource, N: 1}})
	}
	for _, r := range ref.Reads {
		stale = append(stale, Plan{Kind: model.FaultStaleRead, Target: FaultTarget{Lag: PlanLag, Group: r.Group, Resource: r.Resource}})
	}
	for _, e := range ref.Events {
		missed = append(missed, Plan{Kind: model.FaultMissedEvent, Target: FaultTarget{Group: e.Group, Resource: e.Resource, Type: e.Type}})
	}
	var out []Plan
	for i := 0; i < len(crash) || i < len(stale) || i < len(missed); i++ {
		for _, l := range [][]Plan{crash, stale, missed} {
			if i < len(l) && (max <= 0 || len(out) < max) {
				out = append(out, l[i])
			}
		}
	}
	return out
}
