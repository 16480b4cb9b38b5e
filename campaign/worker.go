package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/faults"
	"github.com/gauntlet-dev/gauntlet/internal/atomicfile"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/monitors"
	"github.com/gauntlet-dev/gauntlet/oracles"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// env is one cluster with the operator deployed.
type env struct {
	cluster cluster.Cluster
	kube    *kube
	// inj injects faults (nil when the campaign injects none).
	inj    faults.Injector
	nsSeq  atomic.Int64
	prefix string
	// operatorFaulted is set once the campaign has crashed the operator or
	// cut it off its API server in this cluster: a crash back-off of the
	// operator's container is then (at least partly) the harness's doing.
	operatorFaulted atomic.Bool
}

// runner executes steps; it is shared by workers, differential runs,
// calibration and reproducer replays.
type runner struct {
	// publishesGen: the target's CR has shown status.observedGeneration in some
	// session; convergence then waits for it even when a new or re-created CR
	// has no status yet.
	publishesGen *atomic.Bool
	cfg          Config
	target       *targets.Target
	oracles      []oracles.Oracle
	journal      *Journal // nil for replays that record nothing
	dir          string   // results folder ("" records no files)
	masks        []string
	// base is the seed desired state D0.
	base model.Object
	// faultKinds are the fault kinds drawn from (supported by the back end).
	faultKinds []string
	// lastAppend is the duration of the last journal append (ms).
	lastAppend *atomic.Int64
	// budget says whether workers may start another iteration (Config.Budget,
	// signals); nil for replays.
	budget *budget
	// prior is how long the earlier runs of a resumed campaign ran.
	prior time.Duration
	// val validates test cases on the state they land on (nil for replays).
	val *validator
	// generated are the fields found generated anew on every creation (nil
	// for replays: they learn none).
	generated *generatedMasks
	// images are the images the target vouches for (nil for replays).
	images *knownImages
	// views are the plans derived from reference steps' view records (nil
	// for replays: viewplan.go).
	views *viewPlans
}

// session is one namespace in which desired states are declared in sequence.
type session struct {
	r     *runner
	env   *env
	ns    string
	watch *nsWatch
	crKey string
	// last is when the previous snapshot was taken (events and logs since).
	last time.Time
	// wl is the target's workload, started once the seed converged.
	wl monitors.WorkloadRun
	// isolated are pods a partition currently cuts off from their peers (with why).
	isoMu    sync.Mutex
	isolated map[string]string
	// misop is set while a step known to be a misoperation runs (its
	// convergence waits at most Config.MisoperationTimeout).
	misop bool
	// baseline is the state the seed reached and baselineD the seed (see
	// model.Transition.Baseline).
	baseline  *model.Snapshot
	baselineD model.Object
	// clock splits the step under way's wall time into phases (nil between steps).
	clock *stepClock
}

// newSession creates a fresh namespace and starts watching it.
func (r *runner) newSession(ctx context.Context, e *env, tag string) (*session, error) {
	return r.openSession(ctx, e, fmt.Sprintf("%s-%s%d", e.prefix, tag, e.nsSeq.Add(1)), r.target.Fixtures)
}

// openSession creates namespace ns (unless it exists), applies the fixture
// files in it and starts watching it.
func (r *runner) openSession(ctx context.Context, e *env, ns string, fixtures []string) (*session, error) {
	if err := e.kube.createNamespace(ctx, ns); err != nil {
		return nil, err
	}
	if err := e.kube.applyFixtures(ctx, fixtures, ns); err != nil {
		e.kube.deleteNamespace(ctx, ns)
		return nil, err
	}
	w, err := e.kube.watchNamespace(ctx, ns)
	if err != nil {
		e.kube.deleteNamespace(ctx, ns)
		return nil, err
	}
	return &session{r: r, env: e, ns: ns, watch: w, last: time.Now()}, nil
}

// close stops watching and deletes the namespace.
func (s *session) close(ctx context.Context) {
	s.stopWorkload(ctx)
	s.watch.close()
	s.env.kube.deleteNamespace(context.WithoutCancel(ctx), s.ns)
}

// crObject is the desired state placed in the session's namespace.
func (s *session) crObject(d model.Object) model.Object {
	o := jsonv.CopyMap(d)
	md, _ := o["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		o["metadata"] = md
	}
	md["namespace"] = s.ns
	delete(o, "status")
	return o
}

// dangling names the objects d refers to that do not exist in the session's
// namespace ("" when every reference resolves).
func (s *session) dangling(ctx context.Context, d model.Object) string {
	var missing []string
	for _, ref := range s.r.target.ReferencesIn(d) {
		if ref.Named != "" {
			if ref.Unavailable {
				missing = append(missing, fmt.Sprintf("%s names the %s %q, which the test cluster does not have", ref.Path, ref.Named, ref.Name))
			}
			continue
		}
		obj, err := s.env.kube.lookup(ctx, ref.APIVersion, ref.Kind, s.ns, ref.Name)
		switch {
		case err != nil:
			s.r.cfg.Logger.Warn("reference check", "path", ref.Path, "err", err)
		case obj == nil:
			missing = append(missing, fmt.Sprintf("%s names %s %q, which does not exist", ref.Path, ref.Kind, ref.Name))
		case ref.Key != "" && !hasDataKey(obj, ref.Key):
			missing = append(missing, fmt.Sprintf("%s names key %q of %s %q, which has no such key", ref.KeyPath, ref.Key, ref.Kind, ref.Name))
		}
	}
	missing = append(missing, nodeLocalProfiles(d)...)
	missing = append(missing, unknownSchedulers(d)...)
	return strings.Join(missing, "; ")
}

// hasDataKey: a Secret or ConfigMap holds key (in data, stringData or binaryData).
func hasDataKey(obj map[string]any, key string) bool {
	for _, f := range []string{"data", "stringData", "binaryData"} {
		if m, ok := obj[f].(map[string]any); ok {
			if _, ok := m[key]; ok {
				return true
			}
		}
	}
	return false
}

// declare applies d (deleting and re-creating the CR when recreate) and waits for convergence.
func (s *session) declare(ctx context.Context, d model.Object, recreate bool) (started, converged time.Time, notReady []string, err error) {
	obj := s.crObject(d)
	started = time.Now()
	// replay.Kube.Declare: re-created when asked, applied again while the
	// operator's own admission webhook cannot be called (its pod restarting
	// after a lost lease) for up to replay.WebhookSettle.
	if err := s.env.kube.Declare(ctx, obj, s.ns, recreate); err != nil {
		return started, time.Time{}, nil, err
	}
	// The quiet window starts when the apply returned, not when it was sent:
	// an apply retried while the operator's webhook came back (CloudNativePG
	// seed 1, 3.2 s after an operator crash) had already "been quiet" for
	// the whole window, and the step converged at once, before the operator
	// had seen the change.
	s.actionDone()
	applied := time.Now()
	if s.crKey == "" {
		m, err := s.env.kube.mapping(obj)
		if err == nil {
			s.crKey = objectKey(obj, m.GroupVersionKind.Group, m.GroupVersionKind.Version, m.GroupVersionKind.Kind)
		}
	}
	converged, notReady, err = s.wait(ctx, started)
	if err == nil {
		// An operator that elects a leader must have renewed its Lease since
		// the apply: one restarted by an earlier fault may still be waiting
		// for the old Lease to expire (CloudNativePG seed 3: a crash during a
		// refused apply, and the next step was judged before the new
		// operator led).
		converged, notReady, err = s.operatorBack(ctx, nil, applied, converged, notReady, true)
	}
	return started, converged, notReady, err
}

// previousLog is the tail of the previous instance's log of a container of
// the session's namespace ("" when it cannot be read).
func (s *session) previousLog(ctx context.Context, pod, container string) string {
	if s.env.kube == nil || s.env.kube.cs == nil {
		return ""
	}
	tail := int64(200)
	b, err := s.env.kube.cs.CoreV1().Pods(s.ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: true, TailLines: &tail}).DoRaw(ctx)
	if err != nil {
		return ""
	}
	return string(b)
}

// actionDone restarts the quiet window: the harness's own action (an apply
// that returned, a fault healed) is a change the system may still react to,
// so convergence is never declared on quiet that ended before it.
func (s *session) actionDone() { s.watch.q.Touch(time.Now()) }

// snapshot records S: objects from the watch caches, events and operator log since the last
// snapshot, monitors.
func (s *session) snapshot(ctx context.Context) *model.Snapshot {
	now := time.Now()
	snap := &model.Snapshot{
		Taken:       now.UTC(),
		Objects:     s.watch.objects(),
		CR:          s.crKey,
		Events:      s.env.kube.events(ctx, s.ns, s.last),
		OperatorLog: s.env.kube.operatorLog(ctx, s.last),
	}
	if s.r.cfg.Monitor != nil {
		t := time.Now()
		m, err := s.r.cfg.Monitor(ctx, s.env.cluster, s.ns)
		if err != nil {
			m = map[string]any{"error": err.Error()}
		}
		snap.Monitors = m
		s.clock.monitor(time.Since(t))
	}
	s.last = now
	return snap
}

// stability watches for the stability window from the moment the snapshot
// read the objects (from; the events, log, monitors and the workload's
// read-back read since count towards it) and returns a sample taken at its end.
func (s *session) stability(ctx context.Context, from time.Time) *model.Snapshot {
	t := time.NewTimer(time.Until(from.Add(s.r.cfg.Stability)))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return &model.Snapshot{Taken: time.Now().UTC(), Objects: s.watch.objects(), CR: s.crKey}
}

// stepInput is one transition to execute.
type stepInput struct {
	worker, index int
	kind          model.StepKind
	testCase      string
	misop         bool
	// cause says why the step is a misoperation when the harness finds no
	// reason of its own (a test case labelled so by design).
	cause string
	// recovering is, on a rollback after a misoperation, that misoperation's
	// cause: the rollback is a valid step, which the harness never judges a
	// misoperation (its failure is the operator's).
	recovering  string
	changed     []string
	desired     model.Object
	prevDesired model.Object
	prev        *model.Snapshot
	recreate    bool
	// reference is S(i-1) for rollbacks (recovery oracle) or the fresh run's state (differential).
	reference *model.Snapshot
	// refusal is, for a differential step, the API server's refusal of D in the fresh run.
	refusal  error
	caseBase model.Object
	cursor   Cursor
	prevID   string
	// noJudge skips oracles (seed steps of replays).
	noJudge bool
	// fault is injected with the step (fault steps; persistent faults and operator
	// crashes during a new desired state).
	fault *FaultPlan
	// began is when a differential re-run began (its step's time).
	began time.Time
}

// harnessJudges reports whether the harness's misoperation rules (an operator
// refusal, an unpullable image, …) may find the step a misoperation: not one
// labelled so already, nor a rollback after a misoperation.
func (in stepInput) harnessJudges() bool { return !in.misop && in.recovering == "" }

// run executes one step: declare, converge, snapshot, stability window, oracles, record.
func (s *session) run(ctx context.Context, in stepInput) (*StepRecord, *model.Snapshot, error) {
	rec := &StepRecord{
		Step: model.Step{Worker: in.worker, Index: in.index, Kind: in.kind, TestCase: in.testCase, Misoperation: in.misop,
			Changed: in.changed, Desired: in.desired},
		CaseBase: in.caseBase, Current: in.desired, Cursor: in.cursor, Namespace: s.ns, Prev: in.prevID, Recreated: in.recreate,
		FaultPlan: in.fault,
	}
	if !in.misop && in.kind != model.StepSeed {
		if why := s.dangling(ctx, in.desired); why != "" {
			in.misop = true
			rec.Misoperation, rec.MisoperationReason = true, why
		} else if in.kind == model.StepApply || in.kind == model.StepRecreate {
			if why := generatedImage(s.r.images, in.prevDesired, in.desired, in.changed); why != "" {
				in.misop = true
				rec.Misoperation, rec.MisoperationReason = true, why
			}
		}
	}
	s.misop = in.misop
	s.clock = newStepClock(time.Now())
	defer func() { s.misop = false; s.clock.stop(); s.clock = nil }()
	if in.recreate {
		// Deleting the custom resource deletes the system: what was written
		// to it is not promised to survive. The workload starts afresh once
		// the new system converged.
		s.stopWorkload(ctx)
	}
	sp := s.startSampling(ctx, in.desired)
	if s.wl != nil {
		s.wl.Update(s.crObject(in.desired))
	}
	started, converged, notReady, err := s.drive(ctx, in, rec)
	s.clock.drove()
	samples := sp.finish()
	rec.Started = started.UTC()
	rec.NotReady = notReady
	findings := rec.Findings
	// refusal is the API server's refusal of D. A step that carried a fault
	// waited for convergence after it all the same (refusedApply): it is then
	// judged, against D(i-1), once the system settled.
	var refusal error
	if ra := (*refusedApply)(nil); errors.As(err, &ra) {
		refusal, err = ra.Err, ra.Wait
	}
	switch {
	case err == nil:
		rec.Converged = converged.UTC()
		rec.Timing.Converge = converged.Sub(started).Milliseconds()
	case errors.Is(err, ErrConvergenceTimeout):
		rec.TimedOut = true
		rec.Timing.Converge = time.Since(started).Milliseconds()
		findings = append(findings, model.Finding{
			Oracle: "convergence", Severity: model.SeverityError,
			Signature: model.Signature("convergence", "timeout"),
			Summary:   fmt.Sprintf("the system did not converge within %s", s.convergeOptions().Timeout),
			Evidence:  evidenceLines(notReady),
		})
	case errors.Is(err, ErrStuck):
		rec.Stuck = true
		rec.Timing.Converge = time.Since(started).Milliseconds()
		findings = append(findings, model.Finding{
			Oracle: "stuck", Severity: model.SeverityError,
			Signature: model.Signature("stuck", string(in.kind)),
			Summary:   fmt.Sprintf("the step made no progress towards readiness for %s and ended early (the hard timeout is %s)", s.r.cfg.Converge.Stuck, s.convergeOptions().Timeout),
			Evidence:  append(evidenceLines(notReady), model.Evidence{Detail: err.Error()}),
		})
	case ctx.Err() != nil:
		return nil, nil, ctx.Err()
	default:
		refusal = err
	}
	if refusal != nil {
		// The API server rejected the desired state: not an operator bug, but recorded.
		findings = append(findings, model.Finding{
			Oracle: "apply", Severity: model.SeverityWarning,
			Signature: model.Signature("apply", "rejected", string(in.kind)),
			Summary:   "the API server rejected the desired state",
			Evidence:  []model.Evidence{{Detail: refusal.Error()}},
		})
		rec.Current = in.prevDesired
		if retriedLater(in, s.baselineD) || (in.recreate && in.kind != model.StepRollback) {
			// (A refused re-creation of a test case left no CR, by the
			// harness's own delete: its rollback re-creates D(i-1) and is judged.)
			in.noJudge = true
		}
	}
	var system *model.SystemSample
	if err == nil {
		// The objects stopped changing; the system inside may still be resyncing.
		t := time.Now()
		var settled bool
		system, settled = s.settleSystem(ctx, in.desired, s.r.cfg.Converge.Quiet/2, time.Minute, samples, converged)
		rec.Timing.SystemSettle = time.Since(t).Milliseconds()
		if !settled {
			rec.NotReady = append(rec.NotReady, "the system monitor's readings kept changing for a minute after the objects settled")
		}
	}
	if (in.kind == model.StepSeed || in.recreate) && err == nil && refusal == nil {
		s.startWorkload(ctx, in.desired)
	}

	t0 := time.Now()
	snap := s.snapshot(ctx)
	if system == nil {
		system = s.sampleSystem(ctx, in.desired)
	}
	snap.System = system
	if in.kind == model.StepSeed && err == nil && refusal == nil {
		s.baseline, s.baselineD = snap, in.desired
	}
	th := time.Now()
	hist := s.history(ctx)
	s.clock.monitor(time.Since(th))
	rec.Timing.Snapshot = time.Since(t0).Milliseconds()
	var stab []*model.Snapshot
	if !in.noJudge && err == nil {
		t1 := time.Now()
		stab = []*model.Snapshot{s.stability(ctx, t0)}
		rec.Timing.Stability = time.Since(t1).Milliseconds()
	}
	t2 := time.Now()
	if !in.noJudge {
		tr := &model.Transition{Step: &rec.Step, PrevDesired: in.prevDesired, Desired: in.desired, Prev: in.prev, Curr: snap,
			Stability: stab, Reference: in.reference, Masks: s.r.masksNow(), Samples: samples, History: hist,
			Baseline: s.baseline, BaselineDesired: s.baselineD}
		tr.Step, tr.Desired = declared(&rec.Step, rec.Current, in.desired)
		tr.OperatorView = s.operatorView(rec.Faults)
		if in.recreate && err == nil && refusal == nil {
			if f := s.learnGenerated(ctx, tr); f != nil {
				findings = append(findings, *f)
			}
		}
		findings = append(findings, s.answerFresh(ctx, tr, oracles.Run(ctx, s.r.oracles, tr))...)
		if rate, n := oracles.Availability(tr); n > 0 {
			rec.Availability = &AvailabilityFigure{Rate: rate, Requests: n}
		}
	}
	logOf := s.logCache(ctx)
	if in.harnessJudges() && refusal == nil && (err == nil || rec.Stuck || rec.TimedOut) && len(findings) > 0 && in.kind != model.StepSeed {
		why := misoperationWhy(rec.TimedOut, []func() string{
			// An input the operator validates and refuses, keeping the previous
			// state, is a misoperation it caught, not an inconsistency.
			func() string { return operatorRejected(snap.CRObject(), in.desired, in.changed) },
			func() string {
				return userChangeOverData(in.prevDesired, in.desired, in.changed, snap, func(pod, container string) string {
					return s.previousLog(ctx, pod, container)
				})
			},
			func() string { return rootRefused(in.prevDesired, in.desired, in.changed, snap) },
			func() string { return missingReferenced(in.prevDesired, in.desired, in.changed, snap) },
			func() string {
				var operator map[string]string
				if s.env != nil && s.env.kube != nil {
					operator = s.env.kube.opLabels
				}
				return operandRefusedInvented(in.prevDesired, in.desired, in.changed, snap, operator, logOf)
			},
			func() string { return unplaceable(in.prevDesired, in.desired, in.changed, snap) },
		}, []func() string{
			func() string { return unpullable(in.desired, in.changed, snap) },
			func() string { return nodeRefused(in.desired, in.changed, snap) },
		})
		if why != "" {
			in.misop = true
			rec.Misoperation, rec.MisoperationReason = true, why
		}
	}
	if !in.misop && len(findings) > 0 && in.kind != model.StepSeed {
		// A limit of the test environment, whatever the step: not the operator's doing.
		if why := hostLimited(snap, logOf, hostInotifyLimit()); why != "" {
			in.misop = true
			rec.Misoperation, rec.MisoperationReason = true, why
		}
	}
	cause := rec.MisoperationReason
	if in.misop && cause == "" {
		cause = in.cause
	}
	if in.misop && cause == "" {
		cause = fmt.Sprintf("test case %s is labelled a misoperation", in.testCase)
	}
	for i := range findings {
		findings[i].Step = rec.ID()
		findings[i].Misoperation = in.misop
		if in.misop {
			// One group per cause, not one per oracle and field.
			findings[i].Cause = cause
			findings[i].Signature = model.CauseSignature(cause)
		}
		if findings[i].Severity == "" {
			findings[i].Severity = model.SeverityError
		}
	}
	if !in.misop && in.recovering == "" && refusal == nil && (in.kind == model.StepApply || in.kind == model.StepRecreate) {
		// The operator said it did not carry the desired state out: what the
		// state does not reflect is its refusal (health findings stay alarms).
		labelRefused(findings, operatorReported(in.prev.CRObject(), snap.CRObject()))
	}
	rec.Findings = findings
	rec.Timing.Oracles = time.Since(t2).Milliseconds()
	t3 := time.Now()
	if s.r.dir != "" {
		rel := filepath.Join("steps", fmt.Sprintf("w%d", in.worker), fmt.Sprintf("s%d", in.index))
		rec.Snapshot = filepath.ToSlash(rel)
		if err := writeStepFiles(filepath.Join(s.r.dir, rel), rec, snap); err != nil {
			return nil, nil, err
		}
		if err := writeSystemFiles(filepath.Join(s.r.dir, rel), samples, hist); err != nil {
			return nil, nil, err
		}
		if err := writeContainerLogs(filepath.Join(s.r.dir, rel), snap, logOf); err != nil {
			return nil, nil, err
		}
		if err := s.env.kube.writeViewRecord(filepath.Join(s.r.dir, rel)); err != nil {
			return nil, nil, err
		}
	}
	files := time.Since(t3)
	// The journal append is timed before the record is written: its own figure is the
	// previous append's (appends are uniform fsyncs).
	rec.Timing.Journal = s.r.lastAppend.Load()
	rec.Timing.Overhead = rec.Timing.Snapshot + rec.Timing.Oracles + rec.Timing.Journal + files.Milliseconds()
	rec.Time = s.clock.phases(in.kind, rec.Timing, rec.Converged, time.Now().Add(time.Duration(rec.Timing.Journal)*time.Millisecond))
	if s.r.journal != nil {
		t4 := time.Now()
		typ := RecStep
		if in.kind == model.StepDifferential {
			typ = RecDifferential
		}
		if err := s.r.journal.Append(Record{Type: typ, Step: rec}); err != nil {
			return nil, nil, err
		}
		s.r.lastAppend.Store(time.Since(t4).Milliseconds())
	}
	return rec, snap, nil
}

// retriedLater reports whether step in, refused by the API server, is a
// rollback that rollBack retries: by deleting and re-creating the custom
// resource, or, when that re-creation is refused too, by re-creating it from
// seed (fallBackToSeed). Such a step is not judged: what it declared never
// took effect, so judging it would only repeat the failed step's findings and
// report a recovery never attempted. The last attempt is judged.
func retriedLater(in stepInput, seed model.Object) bool {
	if in.kind != model.StepRollback {
		return false
	}
	return !in.recreate || (seed != nil && !jsonEqual(seed, in.desired))
}

// declared is the step and desired state a transition is judged against: the
// step's own, unless the API server refused D — then the CR still holds
// current (D(i-1)) and nothing was changed (a refused immutable field is not
// an ignored one).
func declared(st *model.Step, current, desired model.Object) (*model.Step, model.Object) {
	if jsonEqual(current, desired) {
		return st, desired
	}
	cp := *st
	cp.Changed = nil
	return &cp, current
}

func evidenceLines(lines []string) []model.Evidence {
	var ev []model.Evidence
	for _, l := range lines {
		ev = append(ev, model.Evidence{Detail: l})
	}
	return ev
}

// writeSystemFiles writes samples.json (the system monitor's readings during the
// transition) and history.json (the workload's requests), when there are any.
func writeSystemFiles(dir string, samples []model.SystemSample, hist *model.History) error {
	if len(samples) > 0 {
		if err := writeJSON(filepath.Join(dir, "samples.json"), samples); err != nil {
			return err
		}
	}
	if hist != nil {
		if err := writeJSON(filepath.Join(dir, "history.json"), hist); err != nil {
			return err
		}
	}
	return nil
}

// stateFile is state.json: the snapshot without events and log (kept in their own files).
type stateFile struct {
	Taken    time.Time               `json:"taken"`
	CR       string                  `json:"cr"`
	Objects  map[string]model.Object `json:"objects"`
	Monitors map[string]any          `json:"monitors,omitempty"`
	System   *model.SystemSample     `json:"system,omitempty"`
}

type verdictFile struct {
	Step      string         `json:"step"`
	Kind      model.StepKind `json:"kind"`
	TestCase  string         `json:"testCase,omitempty"`
	Changed   []string       `json:"changed,omitempty"`
	Started   time.Time      `json:"started"`
	Converged time.Time      `json:"converged,omitempty"`
	TimedOut  bool           `json:"timedOut,omitempty"`
	Stuck     bool           `json:"stuck,omitempty"`
	NotReady  []string       `json:"notReady,omitempty"`
	Faults    []model.Fault  `json:"faults,omitempty"`
	// Availability is the workload's success rate during the transition.
	Availability *AvailabilityFigure `json:"availability,omitempty"`
	Findings     []model.Finding     `json:"findings"`
	Timing       Timing              `json:"timing"`
}

// writeStepFiles writes cr.yaml, state.json, events.json, operator.log and verdict.json.
func writeStepFiles(dir string, rec *StepRecord, snap *model.Snapshot) error {
	if snap == nil {
		snap = &model.Snapshot{} // nothing was observed (a differential run refused)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("step folder: %w", err)
	}
	cr, err := yaml.Marshal(rec.Desired)
	if err != nil {
		return fmt.Errorf("encode cr.yaml: %w", err)
	}
	findings := rec.Findings
	if findings == nil {
		findings = []model.Finding{}
	}
	files := []struct {
		name string
		v    any
		raw  []byte
	}{
		{name: "cr.yaml", raw: cr},
		{name: "state.json", v: stateFile{Taken: snap.Taken, CR: snap.CR, Objects: snap.Objects, Monitors: snap.Monitors, System: snap.System}},
		{name: "events.json", v: nonNil(snap.Events)},
		{name: "operator.log", raw: []byte(snap.OperatorLog)},
		{name: "verdict.json", v: verdictFile{Step: rec.ID(), Kind: rec.Kind, TestCase: rec.TestCase, Changed: rec.Changed, Started: rec.Started,
			Converged: rec.Converged, TimedOut: rec.TimedOut, Stuck: rec.Stuck, NotReady: rec.NotReady, Faults: rec.Faults, Availability: rec.Availability,
			Findings: findings, Timing: rec.Timing}},
	}
	for _, f := range files {
		b := f.raw
		if f.v != nil {
			if b, err = json.MarshalIndent(f.v, "", "  "); err != nil {
				return fmt.Errorf("encode %s: %w", f.name, err)
			}
		}
		if err := atomicfile.Write(filepath.Join(dir, f.name), b, 0o644); err != nil {
			return fmt.Errorf("write step file: %w", err)
		}
	}
	return nil
}

func nonNil(e []model.Event) []model.Event {
	if e == nil {
		return []model.Event{}
	}
	return e
}

// loadSnapshot reads a step's recorded snapshot back (state, events, log).
func loadSnapshot(dir string) (*model.Snapshot, error) {
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return nil, fmt.Errorf("read recorded state: %w", err)
	}
	var sf stateFile
	if err := json.Unmarshal(b, &sf); err != nil {
		return nil, fmt.Errorf("decode %s: %w", filepath.Join(dir, "state.json"), err)
	}
	s := &model.Snapshot{Taken: sf.Taken, CR: sf.CR, Objects: sf.Objects, Monitors: sf.Monitors, System: sf.System}
	if b, err := os.ReadFile(filepath.Join(dir, "events.json")); err == nil {
		_ = json.Unmarshal(b, &s.Events)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "operator.log")); err == nil {
		s.OperatorLog = string(b)
	}
	return s, nil
}

// changedPaths lists the dotted paths (keys that are not plain names quoted,
// as the oracles read them) whose values differ between two desired states'
// specs: maps are compared key by key, lists and scalars whole; a field set to
// null counts as absent.
func changedPaths(a, b model.Object) []string {
	var out []string
	spec := jsonv.KeyPath("spec")
	for _, c := range jsonv.DiffWith(get(a, "spec"), get(b, "spec"), jsonv.DiffOptions{Lists: jsonv.ListsWhole}) {
		if c.A == nil && c.B == nil {
			continue
		}
		out = append(out, spec.Join(c.Path).String())
	}
	sort.Strings(out)
	return out
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// leftWithoutCR reports whether step in, which ended in rec, left the session
// with no custom resource: a re-creation (the CR deleted, then D created) the
// API server refused. The worker must re-create D(i-1) (the seed when that is
// refused too, see rollBack) before the next test case, which would otherwise
// build the system from scratch instead of testing a change.
func leftWithoutCR(in stepInput, rec *StepRecord) bool {
	return in.recreate && !jsonEqual(rec.Current, in.desired)
}
