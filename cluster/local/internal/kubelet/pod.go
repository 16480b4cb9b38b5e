package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/container"
	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/podnet"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/mountinfo"
)

// Timings of the pod worker.
const (
	minKillGrace      = 2 * time.Second // the kubelet's minimum grace after SIGTERM
	setupRetryMin     = 500 * time.Millisecond
	setupRetryMax     = 2 * time.Second
	setupEventEvery   = 30 * time.Second
	configRetryMin    = time.Second
	configRetryMax    = 30 * time.Second
	imageRetryMin     = 10 * time.Second
	imageRetryMax     = 5 * time.Minute
	volumeRefresh     = 5 * time.Second
	defaultGraceSecs  = 30
	defaultPATH       = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	terminationMsgMax = 4096
)

// ctrRun is one container of a pod: its spec, its current instance and the
// status the node reports for it. Fields are guarded by the pod's mutex.
type ctrRun struct {
	name  string
	kind  ctrKind
	index int

	spec       corev1.Container
	state      corev1.ContainerState
	last       corev1.ContainerState
	instances  int // instances started (restartCount is instances-1)
	restarts   int32
	started    bool // running and past its startup probe
	readyProbe bool // readiness probe passing (true without one)
	ready      bool
	id         string
	imageID    string
	simulated  bool
	proc       *container.Process
	logPath    string // current instance's log
	prevLog    string // previous instance's log (kubectl logs --previous)
	bo         *backOff

	startedCh   chan struct{} // closed once the container first counts as started (sidecars)
	startedOnce sync.Once
	recreate    chan struct{} // the container's image changed
	probeKill   chan string   // a liveness or startup probe asks for a restart
}

// markStarted closes startedCh once.
func (c *ctrRun) markStarted() { c.startedOnce.Do(func() { close(c.startedCh) }) }

func (c *ctrRun) snapshot() ctrSnapshot {
	return ctrSnapshot{
		name: c.name, kind: c.kind, spec: c.spec, state: c.state, last: c.last,
		restarts: c.restarts, ready: c.ready, started: c.started, id: c.id, imageID: c.imageID,
	}
}

// podWorker runs one pod from creation to deletion.
type podWorker struct {
	p       *provider
	uid     types.UID
	key     string
	created time.Time
	dir     string
	log     *slog.Logger
	vols    *volumeManager

	mu           sync.Mutex
	pod          *corev1.Pod
	startTime    metav1.Time
	sandbox      *podnet.Sandbox
	sandboxReady bool
	podIP        netip.Addr
	initialized  bool
	ctrs         []*ctrRun
	mounts       map[string]mountSource
	reason       string
	message      string
	failed       bool
	terminal     bool
	prevConds    map[corev1.PodConditionType]corev1.PodCondition
	simMessages  map[string]string
	killAt       time.Time
	killCh       chan struct{}
	apiDelete    bool
	silent       bool
	volumesDirty bool
	lastSetupMsg string
	lastSetupAt  time.Time

	stopCh     chan struct{}
	stopOnce   sync.Once
	removeCh   chan struct{}
	removeOnce sync.Once
	appsDone   chan struct{}
	appsOnce   sync.Once
	sidecars   sync.WaitGroup
	done       chan struct{}
	wake       chan struct{}
	quit       chan struct{}
	quitOnce   sync.Once
	writerWG   sync.WaitGroup
	writeMu    sync.Mutex
	lastPatch  []byte
	gone       bool // the API object is gone (or is another pod)
}

func newPodWorker(p *provider, pod *corev1.Pod) *podWorker {
	pod = pod.DeepCopy()
	dir := filepath.Join(podsDir(p.cfg.StateDir), string(pod.UID))
	w := &podWorker{
		p:           p,
		uid:         pod.UID,
		key:         podKey(pod.Namespace, pod.Name),
		created:     time.Now(),
		dir:         dir,
		log:         p.log.With("pod", podKey(pod.Namespace, pod.Name), "uid", pod.UID),
		vols:        &volumeManager{p: p, dir: filepath.Join(dir, "volumes"), tokens: map[string]cachedToken{}},
		pod:         pod,
		startTime:   metav1.Now(),
		prevConds:   map[corev1.PodConditionType]corev1.PodCondition{},
		simMessages: map[string]string{},
		killCh:      make(chan struct{}),
		stopCh:      make(chan struct{}),
		removeCh:    make(chan struct{}),
		appsDone:    make(chan struct{}),
		done:        make(chan struct{}),
		wake:        make(chan struct{}, 1),
		quit:        make(chan struct{}),
	}
	if pod.Status.StartTime != nil {
		w.startTime = *pod.Status.StartTime
	}
	waitReason := reasonContainerCreating
	if len(pod.Spec.InitContainers) > 0 {
		waitReason = reasonPodInitializing
	}
	add := func(c corev1.Container, kind ctrKind, i int) {
		w.ctrs = append(w.ctrs, &ctrRun{
			name: c.Name, kind: kind, index: i, spec: c,
			state:     corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waitReason}},
			bo:        newBackOff(p.cfg.RestartBackOff, p.cfg.MaxRestartBackOff),
			startedCh: make(chan struct{}),
			recreate:  make(chan struct{}, 1),
			probeKill: make(chan string, 1),
		})
	}
	for i, c := range pod.Spec.InitContainers {
		kind := kindInit
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			kind = kindSidecar
		}
		add(c, kind, i)
	}
	for i, c := range pod.Spec.Containers {
		add(c, kindApp, i)
	}
	// A pod that ran before (on this node before it restarted): restart
	// counts go on from the reported ones, as the kubelet's do.
	prev := map[string]corev1.ContainerStatus{}
	for _, cs := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		prev[cs.Name] = cs
	}
	for _, c := range w.ctrs {
		if cs, ok := prev[c.name]; ok && cs.ContainerID != "" {
			c.instances = int(cs.RestartCount) + 1
			c.restarts = cs.RestartCount
		}
	}
	return w
}

// ---- status ----

// snapshotLocked captures what the status is computed from; w.mu is held.
func (w *podWorker) snapshotLocked() podSnapshot {
	s := podSnapshot{
		pod:          w.pod,
		sandboxReady: w.sandboxReady,
		podIP:        w.podIP,
		hostIP:       w.p.cfg.Address,
		startTime:    w.startTime,
		initialized:  w.initialized,
		terminal:     w.terminal,
		failed:       w.failed,
		reason:       w.reason,
		message:      w.message,
		prev:         w.prevConds,
		now:          metav1.Now(),
	}
	if s.message == "" && len(w.simMessages) > 0 {
		var msgs []string
		for _, c := range w.ctrs {
			if m, ok := w.simMessages[c.name]; ok {
				msgs = append(msgs, m)
			}
		}
		s.message = joinUnique(msgs)
	}
	for _, c := range w.ctrs {
		s.ctrs = append(s.ctrs, c.snapshot())
	}
	return s
}

// status computes the pod's status now.
func (w *podWorker) status() (*corev1.Pod, corev1.PodStatus) {
	var apiConds []corev1.PodCondition
	if w.p.podLister != nil {
		if cur, err := w.p.podLister.Pods(w.pod.Namespace).Get(w.pod.Name); err == nil && cur.UID == w.uid {
			apiConds = cur.Status.Conditions
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.snapshotLocked()
	s.apiConds = apiConds
	st := computeStatus(s)
	for _, c := range st.Conditions {
		w.prevConds[c.Type] = c
	}
	return w.pod, st
}

// podWithStatus is the pod as last received, with the current status.
func (w *podWorker) podWithStatus() *corev1.Pod {
	pod, st := w.status()
	out := pod.DeepCopy()
	// Keep conditions the node does not own (PodScheduled, readiness gates…).
	own := map[corev1.PodConditionType]bool{}
	for _, t := range kubeletConditions {
		own[t] = true
	}
	for _, c := range pod.Status.Conditions {
		if !own[c.Type] {
			st.Conditions = append(st.Conditions, c)
		}
	}
	out.Status = st
	return out
}

// kick asks the status writer to report the current status.
func (w *podWorker) kick() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// ---- lifecycle ----

func (w *podWorker) stopping() bool {
	select {
	case <-w.stopCh:
		return true
	default:
		return false
	}
}

// defaultGrace is the pod's terminationGracePeriodSeconds.
func (w *podWorker) defaultGrace() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if g := w.pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return defaultGraceSecs * time.Second
}

// terminate asks the pod's containers to stop within grace; a later call may
// only shorten the grace. remove also ends the pod on the node (sandbox,
// folder) once they stopped; apiDelete then deletes the pod object too.
func (w *podWorker) terminate(grace time.Duration, remove, apiDelete bool) {
	w.mu.Lock()
	if apiDelete {
		w.apiDelete = true
	}
	if remove {
		w.removeOnce.Do(func() { close(w.removeCh) })
	}
	at := time.Now().Add(grace)
	if w.killAt.IsZero() || at.Before(w.killAt) {
		w.killAt = at
		close(w.killCh)
		w.killCh = make(chan struct{})
	}
	w.mu.Unlock()
	w.stopOnce.Do(func() { close(w.stopCh) })
}

// shutdown stops the pod for a node shutdown: short grace, no API writes.
func (w *podWorker) shutdown() {
	w.mu.Lock()
	w.silent = true
	w.mu.Unlock()
	w.terminate(stopGrace, true, false)
}

func (w *podWorker) isSilent() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.silent
}

// killDeadline is when running containers get SIGKILL, and a channel closed
// if that moves earlier.
func (w *podWorker) killDeadline() (time.Time, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.killAt, w.killCh
}

// update applies a new version of the pod from the API.
func (w *podWorker) update(pod *corev1.Pod) {
	w.mu.Lock()
	old := w.pod
	w.pod = pod.DeepCopy()
	if !apiequality.Semantic.DeepEqual(old.Labels, pod.Labels) || !apiequality.Semantic.DeepEqual(old.Annotations, pod.Annotations) {
		w.volumesDirty = true
	}
	var changed []*ctrRun
	for _, c := range w.ctrs {
		var spec *corev1.Container
		if c.kind == kindApp {
			if c.index < len(pod.Spec.Containers) {
				spec = &pod.Spec.Containers[c.index]
			}
		} else if c.index < len(pod.Spec.InitContainers) {
			spec = &pod.Spec.InitContainers[c.index]
		}
		if spec == nil || spec.Name != c.name {
			continue
		}
		if spec.Image != c.spec.Image {
			changed = append(changed, c)
		}
		c.spec = *spec.DeepCopy()
	}
	w.mu.Unlock()
	for _, c := range changed {
		select {
		case c.recreate <- struct{}{}:
		default:
		}
	}
	w.kick()
}

// run is the pod's life: set up, init containers, app containers, then wait
// for deletion.
func (w *podWorker) run() {
	defer close(w.done)
	w.writerWG.Add(1)
	go w.statusLoop()
	w.kick()

	ok := w.setup()
	refreshCtx, stopRefresh := context.WithCancel(w.p.ctx)
	if ok {
		go w.housekeeping(refreshCtx)
		ok = w.runInitContainers()
		if ok {
			w.runApps()
		}
	}
	w.appsOnce.Do(func() { close(w.appsDone) })
	w.sidecars.Wait()
	stopRefresh()
	w.finishContainers()
	// Completed (or past its deadline): report, keep the logs until the pod
	// is deleted.
	w.kick()
	<-w.removeCh
	w.cleanup()
}

// setup materializes volumes and creates the sandbox, retrying until it
// works or the pod is stopped.
func (w *podWorker) setup() bool {
	delay := setupRetryMin
	for {
		if w.stopping() {
			return false
		}
		err := w.trySetup()
		if err == nil {
			return true
		}
		w.log.Debug("pod setup failed; retrying", "err", err, "in", delay)
		if !sleepOrStop(delay, w.stopCh) {
			return false
		}
		delay = min(2*delay, setupRetryMax)
	}
}

func (w *podWorker) trySetup() error {
	ctx := w.p.ctx
	for _, d := range []string{w.dir, filepath.Join(w.dir, "etc"), filepath.Join(w.dir, "logs"), filepath.Join(w.dir, "containers"), filepath.Join(w.dir, "termination")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("pod folder: %w", err)
		}
	}
	w.mu.Lock()
	pod := w.pod
	haveMounts := w.mounts != nil
	haveSandbox := w.sandboxReady
	w.mu.Unlock()

	if !haveMounts {
		mounts, err := w.vols.setupAll(ctx, w.envContext())
		if err != nil {
			w.setupEvent("FailedMount", err.Error())
			return err
		}
		w.mu.Lock()
		w.mounts = mounts
		w.mu.Unlock()
	}
	if !haveSandbox {
		var ip netip.Addr
		var sb *podnet.Sandbox
		if pod.Spec.HostNetwork {
			ip = w.p.cfg.Address
		} else {
			var err error
			sb, err = w.p.cfg.Network.AddSandbox(ctx, string(w.uid))
			if errors.Is(err, podnet.ErrSandboxExists) {
				for _, s := range w.p.cfg.Network.Sandboxes() {
					if s.ID == string(w.uid) {
						s := s
						sb, err = &s, nil
					}
				}
			}
			if err != nil {
				w.setupEvent("FailedCreatePodSandBox", fmt.Sprintf("Failed to create pod sandbox: %v", err))
				return fmt.Errorf("sandbox: %w", err)
			}
			ip = sb.IP
		}
		if err := w.writeEtcFiles(pod, ip); err != nil {
			return err
		}
		w.mu.Lock()
		w.sandbox = sb
		w.podIP = ip
		w.sandboxReady = true
		w.mu.Unlock()
		w.kick()
	}
	return nil
}

// setupEvent reports a setup failure, repeating the same message at most
// every setupEventEvery (setup is retried every few seconds).
func (w *podWorker) setupEvent(reason, msg string) {
	w.mu.Lock()
	same := w.lastSetupMsg == msg && time.Since(w.lastSetupAt) < setupEventEvery
	if !same {
		w.lastSetupMsg, w.lastSetupAt = msg, time.Now()
	}
	w.mu.Unlock()
	if !same {
		w.log.Info("pod setup failed; retrying", "reason", reason, "err", msg)
		w.eventPod(corev1.EventTypeWarning, reason, msg)
	}
}

// envContext is the pod's current context for env and downward API values.
func (w *podWorker) envContext() envContext {
	w.mu.Lock()
	defer w.mu.Unlock()
	return envContext{pod: w.pod, podIP: w.podIP, hostIP: w.p.cfg.Address, allocatable: w.p.cfg.Capacity}
}

// housekeeping refreshes managed volumes, enforces activeDeadlineSeconds and
// re-evaluates readiness gates while the pod runs.
func (w *podWorker) housekeeping(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastRefresh := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.stopCh:
			return
		case <-tick.C:
		}
		w.mu.Lock()
		pod := w.pod
		dirty := w.volumesDirty
		w.volumesDirty = false
		w.mu.Unlock()
		if ads := pod.Spec.ActiveDeadlineSeconds; ads != nil && time.Since(w.startTime.Time) > time.Duration(*ads)*time.Second {
			w.mu.Lock()
			w.failed = true
			w.reason = reasonDeadlineExceeded
			w.message = "Pod was active on the node longer than the specified deadline"
			w.mu.Unlock()
			w.eventPod(corev1.EventTypeWarning, reasonDeadlineExceeded, "Pod was active on the node longer than the specified deadline")
			w.terminate(w.defaultGrace(), false, false)
			return
		}
		if len(pod.Spec.ReadinessGates) > 0 {
			w.kick()
		}
		if dirty || time.Since(lastRefresh) >= volumeRefresh {
			lastRefresh = time.Now()
			ec := w.envContext()
			for i := range pod.Spec.Volumes {
				v := &pod.Spec.Volumes[i]
				if v.ConfigMap == nil && v.Secret == nil && v.DownwardAPI == nil && v.Projected == nil {
					continue
				}
				if err := w.vols.refreshManaged(ctx, ec, v); err != nil {
					w.log.Debug("volume refresh failed", "volume", v.Name, "err", err)
				}
			}
		}
	}
}

// runInitContainers runs regular init containers to completion in order and
// starts sidecars; false means the pod stops here (stopped or failed).
func (w *podWorker) runInitContainers() bool {
	for _, c := range w.ctrs {
		switch c.kind {
		case kindSidecar:
			w.sidecars.Go(func() {
				w.supervise(c)
			})
			select {
			case <-c.startedCh:
			case <-w.stopCh:
				return false
			}
		case kindInit:
			if !w.supervise(c) {
				return false
			}
		}
	}
	w.mu.Lock()
	w.initialized = true
	for _, c := range w.ctrs {
		if c.kind == kindApp && c.state.Waiting != nil && c.state.Waiting.Reason == reasonPodInitializing {
			c.state.Waiting.Reason = reasonContainerCreating
		}
	}
	w.mu.Unlock()
	w.kick()
	return true
}

// runApps supervises the app containers until none will run again.
func (w *podWorker) runApps() {
	var wg sync.WaitGroup
	for _, c := range w.ctrs {
		if c.kind != kindApp {
			continue
		}
		wg.Go(func() {
			w.supervise(c)
		})
	}
	wg.Wait()
}

// finishContainers settles the containers once nothing runs any more: on
// deletion, containers that never ran are reported as the kubelet does;
// the sandbox is removed.
func (w *podWorker) finishContainers() {
	stopped := w.stopping()
	w.mu.Lock()
	if stopped {
		w.terminal = true
		for _, c := range w.ctrs {
			if c.state.Terminated == nil {
				if c.state.Waiting != nil && c.last.Terminated != nil {
					c.state = corev1.ContainerState{Terminated: c.last.Terminated.DeepCopy()}
					continue
				}
				c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137,
					Reason:   reasonStatusUnknown,
					Message:  "The container could not be located when the pod was terminated",
				}}
			}
			c.ready, c.started = false, false
		}
	}
	sb := w.sandbox
	w.sandbox = nil
	w.sandboxReady = false
	w.mu.Unlock()
	if sb != nil {
		if err := w.p.cfg.Network.RemoveSandbox(context.WithoutCancel(w.p.ctx), sb.ID); err != nil {
			w.log.Error("remove sandbox", "err", err)
		}
	}
	w.kick()
}

// cleanup ends the pod: final status, API deletion, folder removal.
func (w *podWorker) cleanup() {
	w.mu.Lock()
	silent, apiDelete := w.silent, w.apiDelete
	pod := w.pod
	w.mu.Unlock()
	w.quitOnce.Do(func() { close(w.quit) })
	w.writerWG.Wait()
	if !silent {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(w.p.ctx), 10*time.Second)
		w.writeStatusWithRetry(ctx)
		if apiDelete {
			zero := int64(0)
			err := w.p.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
				GracePeriodSeconds: &zero,
				Preconditions:      metav1.NewUIDPreconditions(string(w.uid)),
			})
			if err != nil && !isGone(err) {
				w.log.Warn("delete pod object", "err", err)
			}
		}
		cancel()
		if err := removePodDir(w.dir); err != nil {
			w.log.Error("remove pod folder", "err", err)
		}
	}
	w.p.forget(w)
	w.log.Debug("pod finished")
}

// removePodDir deletes a pod's folder, refusing if anything is mounted in it
// (so that a leaked bind mount never takes volume data with it).
func removePodDir(dir string) error {
	if mps, err := mountinfo.MountPoints(dir); err == nil && len(mps) > 0 {
		return fmt.Errorf("not removing %s: %s is mounted inside it", dir, mps[0])
	}
	return os.RemoveAll(dir)
}

// ---- events ----

func (w *podWorker) eventPod(typ, reason, msg string) {
	if w.isSilent() {
		return
	}
	w.mu.Lock()
	pod := w.pod
	w.mu.Unlock()
	w.p.recorder.Event(pod, typ, reason, msg)
}

func (w *podWorker) eventCtr(c *ctrRun, typ, reason, msg string) {
	if w.isSilent() {
		return
	}
	w.mu.Lock()
	pod := w.pod
	w.mu.Unlock()
	field := fmt.Sprintf("spec.containers{%s}", c.name)
	if c.kind != kindApp {
		field = fmt.Sprintf("spec.initContainers{%s}", c.name)
	}
	ref := &corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		ResourceVersion: pod.ResourceVersion, FieldPath: field,
	}
	w.p.recorder.Event(ref, typ, reason, msg)
}

// formatPod is the kubelet's pod reference in messages: name_namespace(uid).
func formatPod(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// ---- helpers ----

// sleepOrStop waits d; false if a stop channel closed first. Extra channels
// (such as a recreate request) end the wait early with true.
func sleepOrStop(d time.Duration, stop <-chan struct{}, wake ...<-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	var w <-chan struct{}
	if len(wake) > 0 {
		w = wake[0]
	}
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	case <-w:
		return true
	}
}

func cutEnv(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

func joinUnique(msgs []string) string {
	seen := map[string]bool{}
	out := ""
	for _, m := range msgs {
		if seen[m] {
			continue
		}
		seen[m] = true
		if out != "" {
			out += "; "
		}
		out += m
	}
	return out
}
