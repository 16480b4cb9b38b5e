package replay

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"sync"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/internal/readiness"
	"github.com/gauntlet-dev/gauntlet/model"
)

// ErrConvergenceTimeout is returned when the system keeps changing (or never
// reports the new generation) past the hard timeout: the operator did not settle.
var ErrConvergenceTimeout = errors.New("convergence timeout: the namespace's objects kept changing or the CR's status never reported the new generation")

// ErrStuck is returned when a step makes no progress for the stuck window
// while it is not converged: its workloads stay unready (or the CR keeps
// lagging its generation) and nothing that readiness depends on changes (a
// crash-looping container's restarts are not progress). The step ends early
// instead of waiting for the hard timeout.
var ErrStuck = errors.New("stuck: no progress towards readiness for the stuck window")

// QuietTracker remembers when the watched objects last changed. Watch handlers
// call Touch; waiters read Since.
type QuietTracker struct {
	mu   sync.Mutex
	last time.Time
	n    uint64
	ch   chan struct{} // closed and replaced on every change
}

func NewQuietTracker(now time.Time) *QuietTracker {
	return &QuietTracker{last: now, ch: make(chan struct{})}
}

// Touch records a change at t.
func (q *QuietTracker) Touch(t time.Time) {
	q.mu.Lock()
	if t.After(q.last) {
		q.last = t
	}
	q.n++
	close(q.ch)
	q.ch = make(chan struct{})
	q.mu.Unlock()
}

// State returns the last change time, the change count and a channel closed on the next change.
func (q *QuietTracker) State() (time.Time, uint64, <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.last, q.n, q.ch
}

// ConvergeOptions tune convergence detection.
type ConvergeOptions struct {
	// Quiet is how long nothing may change before the system counts as converged (default 3s).
	Quiet time.Duration
	// QuietUnobserved replaces Quiet when it is longer, for a CR whose status has never
	// reported which generation the operator saw (default 10s): without that evidence,
	// quiet is all that says the operator has acted, and an operator may take seconds
	// to start (CloudNativePG rolled a pod 3–5 s after a change: judged before it).
	QuietUnobserved time.Duration
	// Settle is how long nothing may change before a system whose workloads are not all ready
	// counts as settled (the health oracle then judges it; default 30s).
	Settle time.Duration
	// Timeout is the hard limit (default 5m); reaching it is a finding.
	Timeout time.Duration
	// Stuck is the stuck window (default 1m; negative turns stuck detection
	// off): a step that is not converged and whose progress fingerprint (see
	// progressPrint) has not changed for this long ends with ErrStuck.
	Stuck time.Duration
	// SettleRefused is set for a step known to be a misoperation (the harness
	// sets it; it is not a user setting): the step settles once nothing changed
	// for Quiet while the CR's status reports its generation observed and its
	// Ready condition False for it, with the operator's pods up — the
	// operator's own verdict on a state it is not expected to reach — instead
	// of waiting for Settle.
	SettleRefused bool `json:"-"`
}

func (o ConvergeOptions) WithDefaults() ConvergeOptions {
	if o.Quiet <= 0 {
		o.Quiet = 3 * time.Second
	}
	if o.QuietUnobserved <= 0 {
		o.QuietUnobserved = 10 * time.Second
	}
	if o.Settle <= 0 {
		o.Settle = 30 * time.Second
	}
	if o.Settle < o.Quiet {
		o.Settle = o.Quiet
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Stuck == 0 {
		o.Stuck = time.Minute
	}
	return o
}

// Verdict is the decision of one convergence check.
type Verdict int

// The verdicts.
const (
	// KeepWaiting: not converged yet.
	KeepWaiting Verdict = iota
	// Converged: quiet, ready, generation observed.
	Converged
	// Settled: quiet for Settle, generation observed, not everything ready.
	Settled
)

// Decide is the pure convergence rule: quiet is how long nothing changed,
// notReady the readiness problems, genOK whether the CR's status reports its generation.
func Decide(o ConvergeOptions, quiet time.Duration, notReady []string, genOK bool) Verdict {
	if !genOK {
		return KeepWaiting
	}
	if quiet >= o.Quiet && len(notReady) == 0 {
		return Converged
	}
	if quiet >= o.Settle {
		return Settled
	}
	return KeepWaiting
}

// awaitingKubelet names a pod the scheduler placed whose kubelet has not
// taken it up yet (no status.startTime, which a kubelet sets on its first
// pass), or "" when there is none. Such a pod waits on the test cluster, not
// on the operator: on a loaded host the embedded cluster's kubelet can take
// longer than the settle window to start a StatefulSet's replacement pod
// (bundled operator, untuned seed 1: a replica killed while it was still
// starting, its replacement Pending for 33 s with PodScheduled=True alone).
func awaitingKubelet(objs map[string]model.Object) string {
	for key, o := range objs {
		if o["kind"] != "Pod" || jsonv.At(o, "metadata", "deletionTimestamp") != nil {
			continue
		}
		if phase, _ := jsonv.At(o, "status", "phase").(string); phase != "Pending" || jsonv.At(o, "status", "startTime") != nil {
			continue
		}
		conds, _ := jsonv.At(o, "status", "conditions").([]any)
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "PodScheduled" && m["status"] == "True" {
				return key
			}
		}
	}
	return ""
}

// WaitConverged blocks until the system converges or settles, the timeout
// expires, or the step is stuck (no progress for the stuck window). objects
// returns the current objects (the informer caches); it is called after quiet
// periods, and at most once a second (a quarter of the stuck window when that
// is shorter) while the objects change, to follow progress. requireGen waits for the CR's status.observedGeneration even while
// it is absent (the operator is known to publish it: a re-created CR has none
// until the operator's first pass). It returns the time of the last change (the
// convergence time) and the readiness problems left when it settled, got stuck
// or timed out. operatorDown, when not nil, lists the operator's pods that are
// not ready (restarting, in the kubelet's crash back-off after a fault): the
// step is not converged while there are any, and its stuck clock does not run
// (waiting for the kubelet to restart the operator is not the operator being
// stuck; the hard timeout still applies). So it is while a pod the scheduler
// placed awaits its kubelet (awaitingKubelet): neither settles the step.
func WaitConverged(ctx context.Context, o ConvergeOptions, q *QuietTracker, start time.Time, objects func() (map[string]model.Object, string), operatorDown func() []string, requireGen bool) (time.Time, []string, error) {
	o = o.WithDefaults()
	deadline := start.Add(o.Timeout)
	var (
		print      uint64
		progressAt = start // when the progress fingerprint last changed
		progressN  uint64  // the tracker's change count then
		checked    time.Time
	)
	for {
		last, n, changed := q.State()
		if last.Before(start) {
			last = start
		}
		now := time.Now()
		quiet := now.Sub(last)
		var notReady []string
		genOK := true
		if quiet >= o.Quiet || (o.Stuck > 0 && now.Sub(checked) >= min(time.Second, o.Stuck/4)) {
			checked = now
			objs, cr := objects()
			notReady, genOK = Readiness(objs, cr, requireGen)
			var down []string
			if operatorDown != nil {
				down = operatorDown()
				notReady = append(notReady, down...)
			}
			waitingKubelet := awaitingKubelet(objs)
			if quiet >= o.Quiet {
				v := Decide(o, quiet, notReady, genOK)
				if v == KeepWaiting && o.SettleRefused && genOK && len(down) == 0 && Refused(objs[cr]) {
					v = Settled
				}
				if v == Settled && waitingKubelet != "" {
					// The test cluster has not started a pod it placed: its
					// own lag (a loaded host), not the system settling.
					v = KeepWaiting
				}
				switch v {
				case Converged:
					return last, nil, nil
				case Settled:
					return last, notReady, nil
				}
			}
			if p := progressPrint(objs, cr, notReady, genOK); p != print || len(down) > 0 || waitingKubelet != "" {
				print, progressAt, progressN = p, now, n
			}
			if o.Stuck > 0 && now.Sub(progressAt) >= o.Stuck {
				if !genOK {
					notReady = append(notReady, "custom resource status.observedGeneration lags metadata.generation (or is not published yet)")
				}
				return time.Time{}, notReady, fmt.Errorf("after %s without progress (%d changes of no consequence; not ready: %v): %w",
					now.Sub(progressAt).Round(time.Second), n-progressN, notReady, ErrStuck)
			}
		}
		if now.After(deadline) {
			objs, cr := objects()
			notReady, genOK = Readiness(objs, cr, requireGen)
			if !genOK {
				notReady = append(notReady, "custom resource status.observedGeneration lags metadata.generation (or is not published yet)")
			}
			return time.Time{}, notReady, fmt.Errorf("after %s (last change %s ago; not ready: %v): %w", o.Timeout, quiet.Round(time.Millisecond), notReady, ErrConvergenceTimeout)
		}
		wait := o.Quiet - quiet
		if quiet >= o.Quiet {
			wait = 250 * time.Millisecond // quiet but not ready: re-check readiness periodically
		}
		if rest := time.Until(deadline); wait > rest {
			wait = rest + time.Millisecond
		}
		if o.Stuck > 0 {
			if rest := time.Until(progressAt.Add(o.Stuck)); wait > rest {
				wait = max(rest, 0) + time.Millisecond
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return time.Time{}, nil, ctx.Err()
		case <-changed:
			t.Stop()
		case <-t.C:
		}
	}
}

// progressPrint fingerprints what counts as progress towards convergence: the
// set of objects (by identity, so a replaced pod is progress) and their
// metadata.generation (a changed spec), each pod's phase and readiness, the
// CR's observed generation, phase and condition types, statuses and reasons,
// and the readiness problems themselves. Restart counts, container states,
// timestamps and messages are left out: a crash loop changes them for ever
// without getting anywhere.
func progressPrint(objs map[string]model.Object, cr string, notReady []string, genOK bool) uint64 {
	keys := make([]string, 0, len(objs))
	for k := range objs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := fnv.New64a()
	w := func(parts ...any) {
		fmt.Fprintln(h, parts...)
	}
	for _, k := range keys {
		o := objs[k]
		w(k, get(o, "metadata", "uid"), get(o, "metadata", "generation"), Deleting(o))
		if mk, ok := model.ParseObjectKey(k); ok && mk.Group == "" && mk.Kind == "Pod" {
			w(get(o, "status", "phase"), CondTrue(o, "Ready"))
		}
		if k == cr {
			w(get(o, "status", "observedGeneration"), get(o, "status", "phase"))
			conds, _ := get(o, "status", "conditions").([]any)
			for _, c := range conds {
				m, _ := c.(map[string]any)
				w(m["type"], m["status"], m["reason"])
			}
		}
	}
	w(genOK)
	for _, n := range notReady {
		w(n)
	}
	return h.Sum64()
}

// ConditionsObservedGeneration is the highest observedGeneration among the
// status conditions of o (the Kubernetes API convention for an operator that
// records per condition which generation it judged), and whether any condition
// carries one.
func ConditionsObservedGeneration(o model.Object) (int64, bool) {
	conds, _ := get(o, "status", "conditions").([]any)
	var best int64
	found := false
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if g, ok := jsonv.AsInt(m["observedGeneration"]); ok && (!found || g > best) {
			best, found = g, true
		}
	}
	return best, found
}

// ObservedGeneration is the generation the CR's status says the operator
// has seen: status.observedGeneration, or for operators that publish it per
// condition only (cert-manager's Certificate) the newest condition's.
func ObservedGeneration(o model.Object) (int64, bool) {
	if og, ok := jsonv.AsInt(get(o, "status", "observedGeneration")); ok {
		return og, true
	}
	return ConditionsObservedGeneration(o)
}

// Readiness lists what is not ready among objs (pods, Deployments,
// StatefulSets, DaemonSets) and whether the CR (key cr) reports its current
// generation, where its status publishes observedGeneration at all (always,
// with requireGen).
func Readiness(objs map[string]model.Object, cr string, requireGen bool) ([]string, bool) {
	var out []string
	genOK := true
	for key, o := range objs {
		k, ok := model.ParseObjectKey(key)
		if !ok {
			continue
		}
		if Deleting(o) {
			out = append(out, key+": being deleted")
			continue
		}
		if key == cr {
			gen, _ := jsonv.AsInt(get(o, "metadata", "generation"))
			og, ok := ObservedGeneration(o)
			if (ok && og < gen) || (!ok && requireGen) {
				genOK = false
			}
			// The operator's own Verdict: a CR that says it is not Ready is
			// not converged yet (its status may lag while the operator
			// restarts and waits for its lease); a CR that stays so settles
			// and the health oracle judges it.
			if st, reason := Condition(o, "Ready"); st == "False" {
				out = append(out, fmt.Sprintf("%s: condition Ready=False (%s)", key, reason))
			}
			continue
		}
		switch {
		case k.Group == "batch" && k.Kind == "Job":
			// A Job still running is the operator's work in progress
			// (CloudNativePG's initdb and join): a differential re-run was
			// judged converged while its initdb ran, its pod Ready and quiet.
			if active, _ := jsonv.AsInt(get(o, "status", "active")); active > 0 && !jobFinished(o) {
				out = append(out, fmt.Sprintf("%s: %d pod(s) still running", key, active))
			}
		case k.Group == "" && k.Kind == "Pod", k.Group == "apps" && (k.Kind == "Deployment" || k.Kind == "StatefulSet" || k.Kind == "DaemonSet"):
			for _, p := range readiness.Check(k.Group, k.Kind, o) {
				out = append(out, key+": "+p.Message)
			}
			if msg := notYetAvailable(k.Kind, o); msg != "" {
				out = append(out, key+": "+msg)
			}
		}
	}
	sort.Strings(out)
	return out, genOK
}

// notYetAvailable says, for a StatefulSet or DaemonSet whose spec sets
// minReadySeconds, how many of its ready pods do not count as available yet:
// its controller counts a pod available only once it has been ready for
// minReadySeconds, and a step judged converged on readiness alone saw
// status.availableReplicas "drift" 0 → 1 during the stability window (the
// Prometheus operator's minReadySeconds: 10). A Deployment's readiness
// already waits for its available replicas. Empty when none is pending.
func notYetAvailable(kind string, o model.Object) string {
	var readyF, availF string
	switch kind {
	case "StatefulSet":
		readyF, availF = "readyReplicas", "availableReplicas"
	case "DaemonSet":
		readyF, availF = "numberReady", "numberAvailable"
	default:
		return ""
	}
	minReady, _ := jsonv.AsInt(get(o, "spec", "minReadySeconds"))
	if minReady <= 0 {
		return ""
	}
	ready, _ := jsonv.AsInt(get(o, "status", readyF))
	avail, _ := jsonv.AsInt(get(o, "status", availF))
	if avail >= ready {
		return ""
	}
	return fmt.Sprintf("%d of %d ready pods available (minReadySeconds %d)", avail, ready, minReady)
}

// Refused reports whether the CR's Ready condition is False for its current
// generation: the condition carries no observedGeneration, or one no older
// than metadata.generation.
func Refused(o model.Object) bool {
	if o == nil {
		return false
	}
	gen, _ := jsonv.AsInt(get(o, "metadata", "generation"))
	conds, _ := get(o, "status", "conditions").([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		if m["status"] != "False" {
			return false
		}
		og, ok := jsonv.AsInt(m["observedGeneration"])
		return !ok || og >= gen
	}
	return false
}

// jobFinished reports whether a Job has a Complete or Failed condition that is True.
func jobFinished(o model.Object) bool {
	return CondTrue(o, "Complete") || CondTrue(o, "Failed")
}

func Deleting(o model.Object) bool {
	ts, _ := get(o, "metadata", "deletionTimestamp").(string)
	return ts != ""
}

func CondTrue(o model.Object, typ string) bool {
	conds, _ := get(o, "status", "conditions").([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}

// condition returns the status and reason of the condition of type typ, if any.
func Condition(o model.Object, typ string) (status, reason string) {
	conds, _ := get(o, "status", "conditions").([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			status, _ = m["status"].(string)
			reason, _ = m["reason"].(string)
			return status, reason
		}
	}
	return "", ""
}

// get walks nested maps (jsonv.At).
func get(o map[string]any, path ...string) any { return jsonv.At(o, path...) }
