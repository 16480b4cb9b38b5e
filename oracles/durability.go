package oracles

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gauntlet-dev/gauntlet/model"
)

// maxLostKeys bounds the keys a durability finding lists.
const maxLostKeys = 20

// LostWrite is an acknowledged write that the read-back after convergence did
// not return.
type LostWrite struct {
	// Write is the write as recorded. For a write of an earlier transition, of
	// which the history holds only the read-back, it is rebuilt from the
	// read-back: Key, Value and Acks are known, times are zero.
	Write model.Op
	// Verify is the read-back (OpVerify) that missed it: Found false, or a value
	// no write of the key stored.
	Verify model.Op
}

// LostWrites returns the acknowledged writes that h's read-backs (OpVerify)
// miss, in write order. A write is acknowledged when it succeeded (OK) and at
// least h.Required replicas acknowledged it (Acks, the WAIT reply); with
// Required 0 the system promises nothing and nothing is lost. Writes that
// failed or were acknowledged by fewer replicas may be lost.
//
// The last successful read-back of a key judges it; a key with none (the
// read-back failed, or was not made) is not judged. Its value must be the
// acknowledged write's, or that of a later or concurrent write to the key
// (whose outcome is unknown when it failed).
//
// Read-backs of keys that h holds no write of (writes of earlier transitions)
// are judged by the convention that a workload's OpVerify copies the write's
// value into Value and its acknowledgement count into Acks: one with Acks below
// Required is not judged, one without a Value is judged on presence only.
func LostWrites(h *model.History) []LostWrite {
	if h == nil || h.Required <= 0 {
		return nil
	}
	writes := map[string][]model.Op{}
	verify := map[string]model.Op{}
	var verifyOrder []string
	for _, op := range h.Ops {
		switch op.Kind {
		case model.OpWrite:
			writes[op.Key] = append(writes[op.Key], op)
		case model.OpVerify:
			if !op.OK {
				continue
			}
			prev, seen := verify[op.Key]
			if !seen {
				verifyOrder = append(verifyOrder, op.Key)
			}
			if !seen || !op.End.Before(prev.End) {
				verify[op.Key] = op
			}
		}
	}
	var out []LostWrite
	for _, key := range verifyOrder {
		v := verify[key]
		ws := writes[key]
		if len(ws) == 0 {
			if v.Acks < h.Required {
				continue
			}
			if !v.Found || v.Value != "" && v.Got != v.Value {
				out = append(out, LostWrite{Write: model.Op{Kind: model.OpWrite, Key: key, Value: v.Value, OK: true, Acks: v.Acks}, Verify: v})
			}
			continue
		}
		acked := -1
		for i, w := range ws {
			if w.OK && w.Acks >= h.Required {
				acked = i
			}
		}
		if acked < 0 {
			continue
		}
		w := ws[acked]
		if !v.Found {
			out = append(out, LostWrite{Write: w, Verify: v})
			continue
		}
		if w.Value == "" || v.Got == w.Value {
			continue
		}
		possible := false
		for _, o := range ws {
			if o.Value == v.Got && !o.End.Before(w.Start) {
				possible = true // a later or concurrent write stored it
			}
		}
		if !possible {
			out = append(out, LostWrite{Write: w, Verify: v})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Write.Start.Before(out[j].Write.Start) })
	return out
}

// StaleRead is a read that did not see a write acknowledged before it started.
type StaleRead struct {
	Read  model.Op
	Write model.Op
}

// StaleReads returns the reads of h (OpRead) that succeeded and found no value
// for a key whose write had been acknowledged (OK, Acks >= h.Required) before
// the read started: once acknowledged with the promised replication, a write
// must stay visible. Reads that went to a member the monitor saw as a replica
// (in the last of samples taken at or before the read started), or that the
// workload's own writes show answered as one (it refused the last write sent
// to it before the read, and the first after, as a read-only replica: a
// restarted primary comes back fenced, as a replica, between two readings), are
// left out: a replica may lag. With Required 0 nothing is promised and nothing
// is returned.
func StaleReads(h *model.History, samples []model.SystemSample) []StaleRead {
	if h == nil || h.Required <= 0 {
		return nil
	}
	acked := map[string]model.Op{} // the earliest acknowledged write of each key
	for _, op := range h.Ops {
		if op.Kind == model.OpWrite && op.OK && op.Acks >= h.Required {
			if w, ok := acked[op.Key]; !ok || op.End.Before(w.End) {
				acked[op.Key] = op
			}
		}
	}
	smp := make([]*model.SystemSample, 0, len(samples))
	for i := range samples {
		smp = append(smp, &samples[i])
	}
	sort.SliceStable(smp, func(i, j int) bool { return smp[i].Taken.Before(smp[j].Taken) })
	var out []StaleRead
	for _, r := range h.Ops {
		if r.Kind != model.OpRead || !r.OK || r.Found {
			continue
		}
		w, ok := acked[r.Key]
		if !ok || !w.End.Before(r.Start) {
			continue
		}
		if readFromReplica(r, smp) || answeredAsReplica(r, h.Ops) {
			continue
		}
		out = append(out, StaleRead{Read: r, Write: w})
	}
	return out
}

// answeredAsReplica reports whether the last write sent to r's target before r
// started, and the first sent to it after r ended (if any), were refused as
// read-only (Op.ReadOnly): r's target was a replica around r.
func answeredAsReplica(r model.Op, ops []model.Op) bool {
	if r.Target == "" {
		return false
	}
	var before, after *model.Op
	for i := range ops {
		w := &ops[i]
		if w.Kind != model.OpWrite || w.Target != r.Target {
			continue
		}
		if !w.End.After(r.Start) && (before == nil || w.End.After(before.End)) {
			before = w
		}
		if !w.Start.Before(r.End) && (after == nil || w.Start.Before(after.Start)) {
			after = w
		}
	}
	return before != nil && before.ReadOnly && (after == nil || after.ReadOnly)
}

// readFromReplica reports whether r's target was a replica in the last sample
// taken at or before r started.
func readFromReplica(r model.Op, smp []*model.SystemSample) bool {
	if r.Target == "" {
		return false
	}
	i := sort.Search(len(smp), func(i int) bool { return smp[i].Taken.After(r.Start) }) - 1
	if i < 0 {
		return false
	}
	th, tp := splitHostPort(r.Target)
	for _, m := range smp[i].Members {
		mh, mp := splitHostPort(m.Address)
		if mh == "" || !sameHost(th, mh) || tp != "" && mp != "" && tp != mp {
			continue
		}
		return m.Reachable && m.Role == model.RoleReplica
	}
	return false
}

// Durability finds data loss across transitions (docs/architecture.md §3, "availability &
// durability"), after the fact from the workload's history
// (Transition.History):
//
//   - lost writes (LostWrites): a write acknowledged with the replication the
//     system promises (History.Required replicas) that the read-back after
//     convergence does not return. One finding per transition lists up to 20
//     keys with their acknowledgement time, count and target;
//   - acknowledged writes not visible (StaleReads; unless
//     Config.DisableReadVisibility): a read, through the client Service, that
//     returned nothing for a key whose write was acknowledged before the read
//     started. Keys the first check reports lost are left out (the read is
//     mentioned in their evidence instead).
//
// Histories without a replication promise (Required 0) are not judged. A key
// lost in one transition is reported again in every later one whose
// read-backs still miss it (under the same signature): workloads should stop
// reading back keys once found lost.
//
// Create it with NewDurability.
type Durability struct{ visibility bool }

// NewDurability returns the durability oracle configured by cfg.
func NewDurability(cfg Config) *Durability {
	return &Durability{visibility: !cfg.DisableReadVisibility}
}

// Name is "durability".
func (d *Durability) Name() string { return NameDurability }

// Check judges t.History.
func (d *Durability) Check(ctx context.Context, t *model.Transition) []model.Finding {
	if t == nil || t.History == nil || t.History.Required <= 0 || ctx.Err() != nil {
		return nil
	}
	h := t.History
	lost := LostWrites(h)
	var stale []StaleRead
	if d.visibility {
		samples := t.Samples
		if t.Curr != nil && t.Curr.System != nil {
			samples = append(append([]model.SystemSample(nil), samples...), *t.Curr.System)
		}
		stale = StaleReads(h, samples)
	}
	lostKeys := map[string]bool{}
	for _, l := range lost {
		lostKeys[l.Write.Key] = true
	}
	firstMiss := map[string]model.Op{} // a lost key's first read that missed it
	var visible []StaleRead
	for _, s := range stale {
		if lostKeys[s.Read.Key] {
			if _, ok := firstMiss[s.Read.Key]; !ok {
				firstMiss[s.Read.Key] = s.Read
			}
			continue
		}
		visible = append(visible, s)
	}
	fs := newFindingSet(NameDurability)
	promise := fmt.Sprintf("each acknowledged by at least %s", plural(h.Required, "replica"))
	if len(lost) > 0 {
		var keys []string
		for _, l := range lost {
			keys = append(keys, l.Write.Key)
		}
		var ev []model.Evidence
		for i, l := range lost {
			if i == maxLostKeys {
				ev = append(ev, model.Evidence{Detail: fmt.Sprintf("… %d more lost keys", len(lost)-maxLostKeys)})
				break
			}
			ev = append(ev, lostEvidence(l, h.Required, firstMiss))
		}
		summary := fmt.Sprintf("%s lost: %s (%s; the read-back after convergence did not return them)",
			plural(len(lost), "acknowledged write"), strings.Join(limitStrings(keys, 5), ", "), promise)
		if t.Step != nil && t.Step.Unconverged() {
			summary += "; the step did not converge"
		}
		fs.add(model.Finding{Signature: model.Signature(NameDurability, "lost-write"), Summary: summary, Evidence: ev})
	}
	if len(visible) > 0 {
		var keys []string
		for _, s := range visible {
			if !slices.Contains(keys, s.Read.Key) {
				keys = append(keys, s.Read.Key)
			}
		}
		var ev []model.Evidence
		for i, s := range visible {
			if i == maxLostKeys {
				ev = append(ev, model.Evidence{Detail: fmt.Sprintf("… %d more reads", len(visible)-maxLostKeys)})
				break
			}
			ev = append(ev, model.Evidence{
				Expected: orNil(s.Write.Value), Actual: nil,
				Detail: fmt.Sprintf("read of %s at %s (to %s) found nothing; written %s, acknowledged %s by %s (to %s)",
					s.Read.Key, clock(s.Read.Start), orDefault(s.Read.Target, "?"), clock(s.Write.Start), clock(s.Write.End), plural(s.Write.Acks, "replica"), orDefault(s.Write.Target, "?")),
			})
		}
		fs.add(model.Finding{
			Signature: model.Signature(NameDurability, "not-visible"),
			Summary: fmt.Sprintf("acknowledged write not visible: %s returned nothing for %s written and acknowledged (%s) before the read started",
				plural(len(visible), "read"), strings.Join(limitStrings(keys, 5), ", "), promise),
			Evidence: ev,
		})
	}
	return fs.list()
}

func lostEvidence(l LostWrite, required int, firstMiss map[string]model.Op) model.Evidence {
	w, v := l.Write, l.Verify
	var b strings.Builder
	fmt.Fprintf(&b, "key %s: ", w.Key)
	if w.Start.IsZero() {
		fmt.Fprintf(&b, "written in an earlier transition, acknowledged by %s", plural(w.Acks, "replica"))
	} else {
		fmt.Fprintf(&b, "written %s, acknowledged %s by %s of %d required (to %s)", clock(w.Start), clock(w.End), plural(w.Acks, "replica"), required, orDefault(w.Target, "?"))
	}
	if v.Found {
		fmt.Fprintf(&b, "; read back %s (from %s): value %q", clock(v.Start), orDefault(v.Target, "?"), v.Got)
	} else {
		fmt.Fprintf(&b, "; read back %s (from %s): missing", clock(v.Start), orDefault(v.Target, "?"))
	}
	if r, ok := firstMiss[w.Key]; ok {
		fmt.Fprintf(&b, "; a read at %s (to %s) already missed it", clock(r.Start), orDefault(r.Target, "?"))
	}
	var actual any
	if v.Found {
		actual = v.Got
	}
	return model.Evidence{Expected: orNil(w.Value), Actual: actual, Detail: b.String()}
}

// orNil turns "" into nil (so evidence leaves out unknown values).
func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}
