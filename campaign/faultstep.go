package campaign

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/faults"
	"github.com/gauntlet-dev/gauntlet/internal/readiness"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/replay"
)

// Campaign fault kinds (what FaultOptions.Kinds names): replay's.
const (
	FaultContainerCrash    = replay.FaultContainerCrash
	FaultPodKill           = replay.FaultPodKill
	FaultPodFailure        = replay.FaultPodFailure
	FaultPartition         = replay.FaultPartition
	FaultOperatorCrash     = replay.FaultOperatorCrash
	FaultOperatorPartition = replay.FaultOperatorPartition
)

// DefaultFaultKinds are the kinds a fault campaign draws from by default.
var DefaultFaultKinds = slices.Clone(replay.FaultKinds)

// ParseFaultKinds reads a --faults value: "none" (or nothing) turns faults off
// (nil, false), "all" draws from DefaultFaultKinds, otherwise each entry must be
// a known kind.
func ParseFaultKinds(v []string) ([]string, bool, error) {
	switch {
	case len(v) == 0 || (len(v) == 1 && v[0] == "none"):
		return nil, false, nil
	case len(v) == 1 && v[0] == "all":
		return slices.Clone(DefaultFaultKinds), true, nil
	}
	var out []string
	for _, k := range v {
		if _, ok := backendKind(k); !ok && !viewKind(k) {
			return nil, false, fmt.Errorf("unknown fault kind %q: use all, none, or kinds from %v, or of the operator's view (with --operator-view) %v", k, DefaultFaultKinds, model.ViewFaultKinds())
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, true, nil
}

// backendKind maps a campaign fault kind to the injector's.
func backendKind(kind string) (faults.Kind, bool) { return replay.BackendKind(kind) }

// lasting kinds hold until removed (they can be held while a new desired state is declared).
func lasting(kind string) bool { return replay.Lasting(kind) }

// FaultOptions turns on the OAT strategies: after converged desired states, a
// transient fault on the converged system (which must return to D), or a
// persistent fault held while the next desired state is declared (which must
// be reached once it is removed), or an operator crash mid-reconcile. Kinds,
// targets and timing come from the campaign's seed and are recorded.
type FaultOptions struct {
	// Every injects after every Nth converged desired state of a worker (default 1).
	Every int `json:"every,omitempty"`
	// Kinds are the campaign fault kinds to draw from (default DefaultFaultKinds); kinds the
	// back end cannot inject are reported in Result.UnsupportedFaults, never silently dropped.
	Kinds []string `json:"kinds,omitempty"`
	// Persistent is the share of lasting faults held across the next desired state (default 0.3;
	// operator partitions always are).
	Persistent float64 `json:"persistent,omitempty"`
	// Hold is how long a lasting fault holds (default 8s: longer than the usual failure detection).
	Hold time.Duration `json:"hold,omitempty"`
	// Script, when set, replaces the random draw: the faults are taken in order (cycling),
	// each still targeted on the live system (Role, Pick) and recorded.
	Script []FaultPlan `json:"script,omitempty"`
	// Injector returns the back end for a cluster (default faults.For).
	Injector func(ctx context.Context, c cluster.Cluster) (faults.Injector, error) `json:"-"`
}

func (o *FaultOptions) withDefaults() *FaultOptions {
	if o == nil {
		return nil
	}
	c := *o
	if c.Every <= 0 {
		c.Every = 1
	}
	if len(c.Kinds) == 0 {
		c.Kinds = slices.Clone(DefaultFaultKinds)
	}
	if c.Persistent <= 0 {
		c.Persistent = 0.3
	}
	if c.Hold <= 0 {
		c.Hold = 8 * time.Second
	}
	if c.Injector == nil {
		c.Injector = func(ctx context.Context, cl cluster.Cluster) (faults.Injector, error) { return faults.For(ctx, cl) }
	}
	return &c
}

// FaultPlan is one fault drawn by the seeded source; the journal records it and
// replays re-inject it (replay.FaultPlan).
type FaultPlan = replay.FaultPlan

// planFault draws the fault following step index of worker w (deterministic in
// the campaign's seed); kinds are the supported ones.
func planFault(seed int64, w, index int, o *FaultOptions, kinds []string, monitored bool) FaultPlan {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(w)<<32|uint64(index)))
	p := FaultPlan{Kind: kinds[rng.IntN(len(kinds))], Pick: rng.IntN(1 << 16), Hold: o.Hold}
	if viewKind(p.Kind) {
		planView(rng, &p)
		return p
	}
	switch {
	case p.Kind == FaultOperatorCrash || p.Kind == FaultOperatorPartition:
		p.Role = "operator"
	case !monitored:
		p.Role = "pod"
	case rng.Float64() < 0.6:
		p.Role = model.RolePrimary
	default:
		p.Role = model.RoleReplica
	}
	switch p.Kind {
	case FaultOperatorCrash:
		p.Persistent, p.Delay, p.Hold = true, time.Duration(rng.IntN(1500))*time.Millisecond, 0
	case FaultOperatorPartition:
		p.Persistent = true
	default:
		p.Persistent = lasting(p.Kind) && rng.Float64() < o.Persistent
		if !lasting(p.Kind) {
			p.Hold = 0
		}
	}
	return p
}

// nextFault is the fault following step index: the script's next entry, or a seeded draw.
func (r *runner) nextFault(w, index, drawn int) FaultPlan {
	o := r.cfg.Faults
	if len(o.Script) > 0 {
		p := o.Script[drawn%len(o.Script)]
		if p.Hold <= 0 && lasting(p.Kind) {
			p.Hold = o.Hold
		}
		if p.Then != nil && p.Then.Hold <= 0 && lasting(p.Then.Kind) {
			then := *p.Then
			then.Hold = o.Hold
			p.Then = &then
		}
		return p
	}
	return r.viewPlanFor(planFault(r.cfg.Seed, w, index, o, r.faultKinds, r.target.SystemMonitor != nil))
}

// supportedKinds splits the wanted kinds into those inj can inject and the others (with why).
func supportedKinds(inj faults.Injector, want []string, outOfCluster, viewOn bool) (ok []string, unsupported []string) {
	for _, k := range want {
		bk, known := backendKind(k)
		switch {
		case viewKind(k):
			if why := supportedView(k, viewOn, outOfCluster); why != "" {
				unsupported = append(unsupported, why)
			} else {
				ok = append(ok, k)
			}
		case !known:
			unsupported = append(unsupported, k+": unknown fault kind (known: "+fmt.Sprint(DefaultFaultKinds)+")")
		case !faults.Supports(inj, bk):
			unsupported = append(unsupported, k+": the cluster back end cannot inject "+string(bk))
		case outOfCluster && (k == FaultOperatorCrash || k == FaultOperatorPartition):
			unsupported = append(unsupported, k+": the operator runs out of cluster (target operator.command)")
		default:
			ok = append(ok, k)
		}
	}
	return ok, unsupported
}

// activeFault is an injected fault and how to end it.
type activeFault = replay.ActiveFault

// inject resolves the plan's targets on the live system and starts the fault.
func (s *session) inject(ctx context.Context, p FaultPlan, d model.Object, seq int) (*activeFault, error) {
	if viewKind(p.Kind) {
		return s.injectView(ctx, p)
	}
	spec, err := s.env.kube.FaultSpec(ctx, p, s.ns, fmt.Sprintf("%s-f%d", s.ns, seq), func(ctx context.Context, p FaultPlan) (string, []string, error) {
		return s.pickPod(ctx, p, d)
	})
	if err != nil {
		return nil, err
	}
	if p.Role == replay.RoleOperator {
		s.env.operatorFaulted.Store(true)
	}
	if spec.Kind == faults.Partition {
		s.isolate(spec.Pods, "isolated from its peers by the injected partition "+spec.Name)
	}
	af, err := replay.Inject(ctx, s.env.inj, p, spec)
	if err != nil || af.Rec.Unsupported != "" {
		s.isolate(spec.Pods, "")
	}
	return af, err
}

// acquireMargin is how long before an apply a Lease must have been acquired
// for its holder to count as leading through it (leadersKept).
const acquireMargin = time.Second

// leadersKept reports whether any of leases was renewed after since, and
// whether each one that was is held by a holder that acquired it before since
// (client-go keeps acquireTime while the same elector stays leader; a
// restarted operator process acquires anew). A Lease without an acquire time
// proves nothing, and one acquired less than acquireMargin before since is
// not taken as earlier (a writer that keeps whole seconds, a skewed clock).
func leadersKept(leases []coordinationv1.Lease, since time.Time) (renewed, held bool) {
	held = true
	for _, l := range leases {
		if l.Spec.RenewTime == nil || !l.Spec.RenewTime.After(since) {
			continue
		}
		renewed = true
		if l.Spec.AcquireTime == nil || !l.Spec.AcquireTime.Time.Before(since.Add(-acquireMargin)) {
			held = false
		}
	}
	return renewed, renewed && held
}

// heal removes a lasting fault.
func (s *session) heal(ctx context.Context, af *activeFault) error {
	if af == nil || !af.Lasting || af.Rec.Unsupported != "" {
		return nil
	}
	if viewKind(af.Rec.Kind) {
		return s.healView(ctx, af)
	}
	err := replay.Heal(ctx, s.env.inj, af)
	s.actionDone()
	if af.Spec.Kind == faults.Partition {
		s.isolate(af.Spec.Pods, "")
	}
	return err
}

// afterOperatorBack makes sure the operator is back at work after a fault of
// its own that ended at since (a crash, a healed partition) before the step
// counts as converged at c: an operator that elects a leader through a Lease
// in its namespace is back once a Lease is renewed after since, and the quiet
// window is waited again from then. A pod that is Ready says nothing about it:
// after a healed partition, CloudNativePG's requests stayed hung until it lost
// its lease and restarted, 5–45 s later, and its pods were judged before it
// had seen the change (seed 1). Operators without a Lease are judged on the
// quiet window alone; one whose Lease is not renewed within the convergence
// timeout gets a warning (on rec, when not nil) and is judged as it is.
// Every declared desired state goes through it too, since the apply.
func (s *session) afterOperatorBack(ctx context.Context, rec *StepRecord, since, c time.Time, nr []string) (time.Time, []string, error) {
	return s.operatorBack(ctx, rec, since, c, nr, false)
}

// operatorBack is afterOperatorBack; with kept (a declared desired state, no
// fault of the step's own on the operator), a Lease renewed after since by a
// holder that acquired it no later than since shows that the same operator
// process led throughout (a restarted operator has a new identity and a new
// acquire time): the quiet window that ended at c was waited while it led, so
// it is not waited again. Waiting it again cost every declared step a second
// quiet window.
func (s *session) operatorBack(ctx context.Context, rec *StepRecord, since, c time.Time, nr []string, kept bool) (time.Time, []string, error) {
	if since.IsZero() {
		return c, nr, nil
	}
	limit := s.convergeOptions().Timeout
	at, ok, err := s.awaitOperatorLease(ctx, since, limit, kept)
	switch {
	case err != nil:
		return c, nr, err
	case !ok:
		return c, nr, nil
	case at.IsZero():
		if rec != nil {
			rec.Findings = append(rec.Findings, model.Finding{Oracle: "fault", Severity: model.SeverityWarning,
				Signature: model.Signature("fault", "operator", "lease"),
				Summary:   fmt.Sprintf("the operator did not renew its leader lease within %s after the fault ended: it may not be reconciling", limit)})
		}
		return c, nr, nil
	case !at.After(c):
		return c, nr, nil
	}
	s.watch.q.Touch(at)
	return s.wait(ctx, at)
}

// awaitOperatorLease waits, for at most limit, until a Lease in the operator's
// namespace is renewed after since, and returns when it saw that (zero when
// the wait ran out). With kept, when every Lease renewed after since was
// acquired no later than since (leadersKept), it returns since: the leaders
// were already leading then. ok is false when the operator holds no Lease
// there (no leader election to go by).
func (s *session) awaitOperatorLease(ctx context.Context, since time.Time, limit time.Duration, kept bool) (at time.Time, ok bool, err error) {
	k := s.env.kube
	if k == nil || k.cs == nil || k.opNS == "" {
		return time.Time{}, false, nil
	}
	deadline := time.Now().Add(limit)
	for {
		list, err := k.cs.CoordinationV1().Leases(k.opNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return time.Time{}, true, ctx.Err()
			}
			s.r.cfg.Logger.Warn("operator lease", "namespace", k.opNS, "err", err)
		} else if len(list.Items) == 0 {
			return time.Time{}, false, nil
		} else if renewed, held := leadersKept(list.Items, since); renewed {
			if kept && held {
				return since, true, nil
			}
			return time.Now(), true, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, true, nil
		}
		t := time.NewTimer(500 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return time.Time{}, true, ctx.Err()
		case <-t.C:
		}
	}
}

// operatorDown lists the operator's pods that are not ready, as readiness
// problems ("operator pod X: not ready (CrashLoopBackOff)"); nil when the
// target names no operator pods or they cannot be listed.
//
// Once the campaign has faulted the operator in this cluster, an operator pod
// waiting in the kubelet's crash back-off is replaced (deleted; its
// Deployment makes a fresh pod with no back-off): each injected crash, and
// each exit after an injected partition cost it its lease, doubles the
// back-off up to 5 minutes, and waiting for it judges nothing about the
// operator. A genuinely crash-looping operator keeps crashing in the new pod
// and the step still ends at its hard timeout.
func (s *session) operatorDown(ctx context.Context) []string {
	k := s.env.kube
	if k.opNS == "" || len(k.opLabels) == 0 {
		return nil
	}
	list, err := k.cs.CoreV1().Pods(k.opNS).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(k.opLabels).String()})
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil || readiness.Pod(&p) {
			continue
		}
		why := string(p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil && w.Reason != "" {
				why = w.Reason
			}
		}
		if why == "CrashLoopBackOff" && s.env.operatorFaulted.Load() {
			zero := int64(0)
			if err := k.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
				Preconditions: &metav1.Preconditions{UID: &p.UID}}); err == nil {
				s.r.cfg.Logger.Info("replaced the operator's pod: it waited in the crash back-off that the campaign's operator faults grew", "pod", p.Namespace+"/"+p.Name)
				why += ", replaced: the back-off came from the campaign's operator faults"
			}
		}
		out = append(out, fmt.Sprintf("operator pod %s/%s: not ready (%s)", p.Namespace, p.Name, why))
	}
	sort.Strings(out)
	return out
}

// pickPod chooses the system pod the plan targets and the other pods (the peers of a partition).
func (s *session) pickPod(ctx context.Context, p FaultPlan, d model.Object) (string, []string, error) {
	var cands, all []string
	if smp := s.sampleSystem(ctx, d); smp != nil && p.Role != "pod" {
		for _, m := range smp.Members {
			all = append(all, m.Pod)
			if m.Reachable && m.Role == p.Role {
				cands = append(cands, m.Pod)
			}
		}
		if len(cands) == 0 {
			return "", nil, fmt.Errorf("no %s among the system's members to inject %s into", p.Role, p.Kind)
		}
	} else {
		list, err := s.env.kube.cs.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", nil, fmt.Errorf("list pods: %w", err)
		}
		for _, x := range list.Items {
			if x.DeletionTimestamp == nil && x.Status.PodIP != "" {
				all = append(all, x.Name)
			}
		}
		sort.Strings(all)
		cands = all
		if len(cands) == 0 {
			return "", nil, fmt.Errorf("no running pod in %s to inject %s into", s.ns, p.Kind)
		}
	}
	pod := cands[p.Pick%len(cands)]
	var peers []string
	for _, x := range all {
		if x != pod {
			peers = append(peers, x)
		}
	}
	if p.Kind == FaultPartition && len(peers) == 0 {
		return "", nil, fmt.Errorf("a partition needs at least two pods; %s has one", s.ns)
	}
	return pod, peers, nil
}

// wait blocks until the session's namespace converges after start.
func (s *session) wait(ctx context.Context, start time.Time) (time.Time, []string, error) {
	s.clock.waiting(s.watch.q)
	opts := s.convergeOptions()
	opts.SettleRefused = s.misop
	if !s.r.publishesGen.Load() {
		opts.Quiet = max(opts.Quiet, opts.QuietUnobserved)
		opts.Settle = max(opts.Settle, opts.Quiet)
	}
	at, notReady, err := waitConverged(ctx, opts, s.watch.q, start, func() (map[string]model.Object, string) {
		objs := s.watch.objects()
		if _, ok := replay.ObservedGeneration(objs[s.crKey]); ok {
			s.r.publishesGen.Store(true)
		}
		return objs, s.crKey
	}, func() []string { return s.operatorDown(ctx) }, s.r.publishesGen.Load())
	return at, notReady, err
}

// convergeOptions are the convergence options of the step under way: a
// misoperation is not expected to converge, and what it does shows within the
// misoperation timeout.
func (s *session) convergeOptions() ConvergeOptions {
	opts := s.r.cfg.Converge.withDefaults()
	if s.misop {
		opts.Timeout = min(opts.Timeout, s.r.cfg.MisoperationTimeout)
	}
	return opts
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// drive executes a step's action and waits for convergence: declare D; or, for a
// fault step, inject (hold, heal); or declare D while a persistent fault holds or
// while the operator crashes mid-reconcile. The faults are recorded on rec.
func (s *session) drive(ctx context.Context, in stepInput, rec *StepRecord) (time.Time, time.Time, []string, error) {
	p := in.fault
	if p == nil || s.env.inj == nil {
		return s.declare(ctx, in.desired, in.recreate)
	}
	if q, why := s.retarget(ctx, *p); why != "" {
		p = &q
		s.r.cfg.Logger.Info("fault retargeted to the operator", "step", in.index, "why", why)
		n := len(rec.Faults)
		defer func() {
			for i := n; i < len(rec.Faults); i++ {
				rec.Faults[i].Retargeted = why
			}
		}()
	}
	return driveFault(ctx, s, in, rec, p)
}

// stepActions are what a step carrying a fault does to the cluster (a
// session; tests replay recorded steps through them).
type stepActions interface {
	declare(ctx context.Context, d model.Object, recreate bool) (started, converged time.Time, notReady []string, err error)
	inject(ctx context.Context, p FaultPlan, d model.Object, seq int) (*activeFault, error)
	heal(ctx context.Context, af *activeFault) error
	wait(ctx context.Context, start time.Time) (time.Time, []string, error)
	afterOperatorBack(ctx context.Context, rec *StepRecord, since, c time.Time, nr []string) (time.Time, []string, error)
}

// refusedApply is the API server's refusal of the desired state of a step
// that carried a fault. The fault shook the system all the same, so the step
// waited for it to converge once the fault was removed: Wait is that wait's
// outcome (nil when it converged). A step is never judged the moment its fault
// ends (seed 1 on the bundled operator: a refused apply with a pod-failure on
// the primary, judged at convergeMs 0 mid-failover: "2 primaries").
type refusedApply struct {
	Err, Wait error
}

func (r *refusedApply) Error() string { return r.Err.Error() }
func (r *refusedApply) Unwrap() error { return r.Err }

// driveFault runs a step that carries fault p through a (see drive).
func driveFault(ctx context.Context, a stepActions, in stepInput, rec *StepRecord, p *FaultPlan) (time.Time, time.Time, []string, error) {
	seq := in.index
	warn := func(err error) {
		rec.Findings = append(rec.Findings, model.Finding{Oracle: "fault", Severity: model.SeverityWarning,
			Signature: model.Signature("fault", "inject", p.Kind), Summary: "the fault could not be injected: " + err.Error()})
	}
	switch {
	case in.kind == model.StepFault:
		started := time.Now()
		af, err := a.inject(ctx, *p, in.desired, seq)
		if err != nil {
			warn(err)
			c, nr, err := a.wait(ctx, started)
			return started, c, nr, err
		}
		var second *activeFault
		if p.Then != nil {
			sleep(ctx, p.After)
			if second, err = a.inject(ctx, *p.Then, in.desired, seq*100+1); err != nil {
				warn(err)
			}
		}
		if af.Lasting {
			sleep(ctx, p.Hold-time.Since(started))
			if err := a.heal(ctx, af); err != nil {
				warn(err)
			}
		}
		rec.Faults = append(rec.Faults, af.Rec)
		if second != nil {
			if second.Lasting {
				sleep(ctx, p.Then.Hold)
				if err := a.heal(ctx, second); err != nil {
					warn(err)
				}
			}
			rec.Faults = append(rec.Faults, second.Rec)
		}
		c, nr, err := a.wait(ctx, started)
		return started, c, nr, err
	case p.Kind == FaultOperatorCrash:
		done := make(chan *activeFault, 1)
		go func() {
			sleep(ctx, p.Delay)
			af, err := a.inject(ctx, *p, in.desired, seq)
			if err != nil {
				warn(err)
				done <- nil
				return
			}
			done <- af
		}()
		started, c, nr, err := a.declare(ctx, in.desired, in.recreate)
		af := <-done
		if af == nil {
			return started, c, nr, err
		}
		rec.Faults = append(rec.Faults, af.Rec)
		var derr error
		if refused(ctx, err) {
			// The crash still struck: wait for the restarted operator.
			derr, c, err = err, time.Time{}, nil
		}
		if !c.After(af.Rec.Injected) && err == nil {
			// Converged before (or as) the operator crashed: wait for the restarted
			// operator to settle too.
			c, nr, err = a.wait(ctx, af.Rec.Injected)
		}
		if err == nil {
			c, nr, err = a.afterOperatorBack(ctx, rec, af.Rec.Injected, c, nr)
		}
		if derr != nil {
			return started, c, nr, &refusedApply{Err: derr, Wait: err}
		}
		return started, c, nr, err
	default:
		// A persistent fault: injected, D declared while it holds (convergence awaited at most
		// for the hold time), healed, then D must be reached.
		af, ierr := a.inject(ctx, *p, in.desired, seq)
		if ierr != nil {
			warn(ierr)
			return a.declare(ctx, in.desired, in.recreate)
		}
		hctx, cancel := context.WithTimeout(ctx, p.Hold)
		started, _, _, derr := a.declare(hctx, in.desired, in.recreate)
		cancel()
		if rest := p.Hold - time.Since(started); rest > 0 {
			sleep(ctx, rest)
		}
		if err := a.heal(ctx, af); err != nil {
			warn(err)
		}
		rec.Faults = append(rec.Faults, af.Rec)
		c, nr, err := a.wait(ctx, started)
		if err == nil && (p.Kind == FaultOperatorPartition || p.Kind == FaultCrashAfterWrite) {
			c, nr, err = a.afterOperatorBack(ctx, rec, af.Rec.Removed, c, nr)
		}
		if refused(ctx, derr) {
			// The API server refused D (not the fault's doing); the system was
			// still awaited after the fault, as every faulted step is.
			return started, c, nr, &refusedApply{Err: derr, Wait: err}
		}
		return started, c, nr, err
	}
}

// retarget turns a plan aimed at the system's pods into the matching operator fault when the
// test namespace holds no pod at all — an operator that manages only API objects
// (cert-manager's Certificates and Secrets): a partition becomes operator-partition, a crash,
// kill or failure operator-crash (its delay drawn from the plan's Pick, so a replay repeats
// it). Without that, half of such a campaign's fault steps injected nothing (cert-manager
// on kind, seed 1: 35 of 60 steps "could not be injected"). It returns why, or "" when the
// plan stands: it targets the operator already, the namespace has pods, or the campaign
// does not draw the operator kind.
func (s *session) retarget(ctx context.Context, p FaultPlan) (FaultPlan, string) {
	if p.Role == "operator" {
		return p, ""
	}
	to := FaultOperatorCrash
	if p.Kind == FaultPartition {
		to = FaultOperatorPartition
	}
	if !slices.Contains(s.r.faultKinds, to) {
		return p, ""
	}
	list, err := s.env.kube.cs.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || len(list.Items) > 0 {
		return p, ""
	}
	q := FaultPlan{Kind: to, Role: "operator", Pick: p.Pick, Persistent: p.Persistent, Hold: p.Hold}
	if to == FaultOperatorCrash {
		q.Delay, q.Hold = time.Duration(p.Pick%1500)*time.Millisecond, 0
	}
	return q, fmt.Sprintf("drawn %s for the system's pods, but %s holds no pod (an operator of API objects only): its operator got %s instead", p.Kind, s.ns, to)
}
