package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/container"
	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/images"
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
			w.sidecars.Add(1)
			go func() {
				defer w.sidecars.Done()
				w.supervise(c)
			}()
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.supervise(c)
		}()
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

// ---- containers ----

// endReason is why a container instance ended.
type endReason int

const (
	endExited endReason = iota
	endStopped
	endRecreate
	endProbeKill
	endStartFailed
)

// supervise runs a container, restarting it as its kind and the pod's
// restart policy say, until it is done or the pod stops. It reports whether
// the container completed successfully (what init containers need).
func (w *podWorker) supervise(c *ctrRun) bool {
	stop := w.stopCh
	if c.kind == kindSidecar {
		stop = w.appsDone
	}
	cfgDelay, imgDelay := configRetryMin, imageRetryMin
	for {
		select {
		case <-stop:
			return false
		default:
		}
		prep, err := w.prepare(c)
		if err != nil && errors.Is(err, images.ErrUnmapped) {
			// An image nothing maps is one no registry serves: ErrImagePull,
			// then ImagePullBackOff while the kubelet waits to try again.
			w.mu.Lock()
			image := c.spec.Image
			w.mu.Unlock()
			w.setWaiting(c, reasonErrImagePull, err.Error())
			w.eventCtr(c, corev1.EventTypeWarning, "Failed", fmt.Sprintf("Failed to pull image %q: %v", image, err))
			delay := imgDelay
			imgDelay = min(2*imgDelay, imageRetryMax)
			first, t0 := min(delay, 2*time.Second), time.Now()
			if !sleepOrStop(first, stop, c.recreate) {
				return false
			}
			if time.Since(t0) < first {
				imgDelay = imageRetryMin
				continue // the image changed: pull the new one now
			}
			w.setWaiting(c, reasonImagePullBackOff, fmt.Sprintf("Back-off pulling image %q: %v", image, err))
			if !sleepOrStop(delay-first, stop, c.recreate) {
				return false
			}
			continue
		}
		if err != nil {
			reason, delay := reasonConfigError, cfgDelay
			if errors.Is(err, images.ErrNotInstalled) || errors.Is(err, images.ErrNoCommand) {
				reason, delay = reasonImageMappingFailed, imgDelay
				imgDelay = min(2*imgDelay, imageRetryMax)
			} else {
				cfgDelay = min(2*cfgDelay, configRetryMax)
			}
			w.setWaiting(c, reason, err.Error())
			w.eventCtr(c, corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
			if !sleepOrStop(delay, stop, c.recreate) {
				return false
			}
			continue
		}
		cfgDelay, imgDelay = configRetryMin, imageRetryMin

		var exit container.Exit
		var why endReason
		if prep.simulated {
			exit, why = w.runSimulated(c, prep, stop)
		} else {
			exit, why = w.runOnce(c, prep, stop)
		}
		switch why {
		case endStopped:
			return false
		case endRecreate:
			continue
		}
		if !w.shouldRestart(c, exit, why) {
			return exit.Code == 0
		}
		if d := c.bo.wait(exit.FinishedAt, time.Now()); d > 0 {
			w.mu.Lock()
			pod := w.pod
			w.mu.Unlock()
			msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", c.bo.current(), c.name, formatPod(pod))
			w.setWaiting(c, reasonCrashLoopBackOff, msg)
			w.eventCtr(c, corev1.EventTypeWarning, "BackOff", fmt.Sprintf("Back-off restarting failed container %s in pod %s", c.name, formatPod(pod)))
			if !sleepOrStop(d, stop, c.recreate) {
				return false
			}
			c.bo.wait(exit.FinishedAt, time.Now())
		}
	}
}

// shouldRestart applies the restart policy to an ended instance.
func (w *podWorker) shouldRestart(c *ctrRun, exit container.Exit, why endReason) bool {
	w.mu.Lock()
	policy := w.pod.Spec.RestartPolicy
	w.mu.Unlock()
	if c.kind == kindSidecar {
		return true
	}
	if c.kind == kindInit {
		return exit.Code != 0 && policy != corev1.RestartPolicyNever
	}
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exit.Code != 0 || why == endProbeKill
	}
	return true
}

// prepared is what a container instance needs to start.
type prepared struct {
	simulated bool
	message   string
	res       images.Resolution
	spec      container.Spec
	imageID   string
	env       *envList
}

// prepare resolves env, command, image mapping, user and mounts.
func (w *podWorker) prepare(c *ctrRun) (prepared, error) {
	ctx := w.p.ctx
	ec := w.envContext()
	w.mu.Lock()
	spec := c.spec
	pod := w.pod
	mounts := w.mounts
	w.mu.Unlock()

	env, err := w.p.containerEnv(ctx, ec, &spec)
	if err != nil {
		return prepared{}, err
	}
	command := make([]string, len(spec.Command))
	for i, s := range spec.Command {
		command[i] = expand(s, env.Get)
	}
	args := make([]string, len(spec.Args))
	for i, s := range spec.Args {
		args[i] = expand(s, env.Get)
	}
	res, err := w.p.cfg.Images.Resolve(spec.Image, command, args)
	if err != nil {
		return prepared{}, err
	}
	if res.Simulated {
		return prepared{simulated: true, message: res.Message, res: res, imageID: "gauntlet-simulated://" + spec.Image}, nil
	}

	// User and groups: container securityContext over pod over image.
	var uid, gid *int64
	var nonRoot *bool
	if psc := pod.Spec.SecurityContext; psc != nil {
		uid, gid, nonRoot = psc.RunAsUser, psc.RunAsGroup, psc.RunAsNonRoot
	}
	if csc := spec.SecurityContext; csc != nil {
		if csc.RunAsUser != nil {
			uid = csc.RunAsUser
		}
		if csc.RunAsGroup != nil {
			gid = csc.RunAsGroup
		}
		if csc.RunAsNonRoot != nil {
			nonRoot = csc.RunAsNonRoot
		}
	}
	if uid == nil && res.UID != nil {
		uid = res.UID
		if gid == nil {
			gid = res.GID
		}
	}
	if nonRoot != nil && *nonRoot && (uid == nil || *uid == 0) {
		return prepared{}, fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", formatPod(pod), spec.Name)
	}
	dropRoot := res.RootUID != nil && (uid == nil || *uid == 0)
	if dropRoot {
		uid, gid = res.RootUID, res.RootGID
	}
	var cs container.Spec
	if uid != nil {
		u := uint32(*uid)
		cs.UID = &u
		g := uint32(0)
		if gid != nil {
			g = uint32(*gid)
		}
		cs.GID = &g
	} else if gid != nil {
		u, g := uint32(0), uint32(*gid)
		cs.UID, cs.GID = &u, &g
	}
	if psc := pod.Spec.SecurityContext; psc != nil && !dropRoot { // setpriv --clear-groups
		for _, g := range psc.SupplementalGroups {
			cs.SupplementalGroups = append(cs.SupplementalGroups, uint32(g))
		}
		if psc.FSGroup != nil {
			cs.SupplementalGroups = append(cs.SupplementalGroups, uint32(*psc.FSGroup))
		}
	}

	hostname := podHostname(pod)
	full := newEnvList()
	full.Set("PATH", defaultPATH)
	for _, kv := range res.Env {
		k, v, _ := cutEnv(kv)
		full.Set(k, v)
	}
	full.Set("HOSTNAME", hostname)
	if _, ok := full.Get("HOME"); !ok {
		if uid == nil || *uid == 0 {
			full.Set("HOME", "/root")
		} else {
			full.Set("HOME", "/")
		}
	}
	for _, k := range env.keys {
		full.Set(k, env.vals[k])
	}

	var ms []container.Mount
	targets := map[string]bool{}
	for _, vm := range spec.VolumeMounts {
		src, ok := mounts[vm.Name]
		if !ok {
			return prepared{}, fmt.Errorf("volumeMount %q names no volume of the pod", vm.Name)
		}
		hostPath := src.path
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			sub = expand(vm.SubPathExpr, env.Get)
		}
		if sub != "" {
			hostPath, err = subPath(src.path, sub)
			if err != nil {
				return prepared{}, fmt.Errorf("volumeMount %q: %w", vm.Name, err)
			}
		}
		ms = append(ms, container.Mount{Source: hostPath, Target: vm.MountPath, ReadOnly: vm.ReadOnly || src.readOnly})
		targets[filepath.Clean(vm.MountPath)] = true
	}
	if err := makeNestedMountpoints(ms); err != nil {
		return prepared{}, err
	}
	etc := filepath.Join(w.dir, "etc")
	for _, f := range []string{"hosts", "hostname", "resolv.conf"} {
		target := "/etc/" + f
		src := filepath.Join(etc, f)
		if targets[target] {
			continue
		}
		if _, err := os.Stat(src); err != nil {
			continue
		}
		ms = append(ms, container.Mount{Source: src, Target: target})
	}
	for _, a := range res.Aliases {
		if targets[a.Target] {
			continue
		}
		ms = append(ms, container.Mount{Source: a.Path, Target: a.Target, ReadOnly: true})
	}
	argv := append([]string(nil), res.Argv...)
	if hiddenInContainer(argv[0]) || !reachableByAll(argv[0]) {
		// Containers get a private /tmp: a host program there is bound in. So is one
		// in a folder that only its owner may enter (a build cache under /root), which
		// a container running as another user could not execute where it lies.
		target := path.Join(hiddenProgramDir, path.Base(argv[0]))
		ms = append(ms, container.Mount{Source: argv[0], Target: target, ReadOnly: true})
		argv[0] = target
	}
	sortMounts(ms)

	cs.Argv = argv
	cs.Env = full.Strings()
	cs.WorkingDir = spec.WorkingDir
	if cs.WorkingDir == "" {
		cs.WorkingDir = res.WorkingDir
	}
	cs.Hostname = hostname
	cs.Mounts = ms
	if dropRoot {
		if err := chownWorkingDir(ms, cs.WorkingDir, *res.RootUID); err != nil {
			return prepared{}, fmt.Errorf("image %s entrypoint: %w", spec.Image, err)
		}
	}
	return prepared{res: res, spec: cs, imageID: "gauntlet-local://" + res.Argv[0], env: env}, nil
}

// chownWorkingDir does what the valkey and redis images' entrypoint does as
// root before it drops to its service user: `find . \! -user U -exec chown U`
// in the working directory. Only a working directory on a volume is walked (the
// container's own layer holds nothing another user wrote).
func chownWorkingDir(mounts []container.Mount, wd string, uid int64) error {
	if wd == "" {
		return nil
	}
	wd = path.Clean(wd)
	var src string
	for _, m := range mounts {
		t := path.Clean(m.Target)
		if m.ReadOnly || (wd != t && !strings.HasPrefix(wd, t+"/")) {
			continue
		}
		if fi, err := os.Stat(m.Source); err != nil || !fi.IsDir() {
			continue
		}
		src = filepath.Join(m.Source, strings.TrimPrefix(wd, t))
	}
	if src == "" {
		return nil
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && int64(st.Uid) != uid {
			if err := os.Lchown(p, int(uid), -1); err != nil {
				return fmt.Errorf("give %s to uid %d: %w", p, uid, err)
			}
		}
		return nil
	})
}

// hiddenProgramDir is where host programs that containers cannot see at
// their host path are bound.
const hiddenProgramDir = "/.gauntlet/bin"

// hiddenInContainer reports whether a host path is hidden inside containers
// (they get their own /tmp, /dev, /proc and /sys).
func hiddenInContainer(p string) bool {
	for _, d := range []string{"/tmp", "/dev", "/proc", "/sys"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// reachableByAll reports whether every folder above p lets any user through
// (the execute bit for others), so that a container of any uid reaches p.
func reachableByAll(p string) bool {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// runSimulated keeps a simulated container Running and Ready until the pod
// stops or the image changes. Simulated init containers complete at once.
func (w *podWorker) runSimulated(c *ctrRun, prep prepared, stop <-chan struct{}) (container.Exit, endReason) {
	now := time.Now()
	w.mu.Lock()
	c.instances++
	c.restarts = int32(c.instances - 1)
	if c.state.Terminated != nil {
		c.last = c.state
	}
	c.simulated = true
	c.imageID = prep.imageID
	c.id = fmt.Sprintf("gauntlet://%s-%s-%d", w.uid, c.name, c.instances)
	w.simMessages[c.name] = prep.message
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}
	c.started, c.readyProbe, c.ready = true, true, c.kind != kindInit
	logPath := filepath.Join(w.dir, "logs", c.name, strconv.Itoa(c.instances)+".log")
	c.prevLog, c.logPath = c.logPath, logPath
	w.mu.Unlock()
	writeSimulatedLog(logPath, prep.message)
	w.eventCtr(c, corev1.EventTypeNormal, "Simulated", fmt.Sprintf("%s: the container reports Running and Ready without a process", prep.message))
	c.markStarted()
	w.kick()

	why := endStopped
	if c.kind == kindInit {
		why = endExited
	} else {
		select {
		case <-stop:
		case <-c.recreate:
			why = endRecreate
		}
	}
	exit := container.Exit{Code: 0, Reason: "Completed", FinishedAt: time.Now()}
	w.mu.Lock()
	delete(w.simMessages, c.name)
	c.simulated = false
	c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 0, Reason: "Completed", StartedAt: metav1.NewTime(now), FinishedAt: metav1.NewTime(exit.FinishedAt), ContainerID: c.id,
	}}
	c.started, c.ready = false, c.kind == kindInit
	w.mu.Unlock()
	w.kick()
	return exit, why
}

// runOnce starts one instance of a container and waits for its end.
func (w *podWorker) runOnce(c *ctrRun, prep prepared, stop <-chan struct{}) (container.Exit, endReason) {
	w.mu.Lock()
	pod := w.pod
	c.instances++
	instance := c.instances
	// The status moves in one step: the ended instance becomes lastState and the new
	// one waits while it is created, so no snapshot pairs the new restart count and
	// container ID with the old instance's state.
	if c.state.Terminated != nil {
		c.last = c.state
		c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	}
	c.restarts = int32(instance - 1)
	c.id = fmt.Sprintf("gauntlet://%s-%s-%d", w.uid, c.name, instance)
	c.imageID = prep.imageID
	logDir := filepath.Join(w.dir, "logs", c.name)
	logPath := filepath.Join(logDir, strconv.Itoa(instance)+".log")
	if c.prevLog != "" && c.prevLog != c.logPath {
		_ = os.Remove(c.prevLog)
	}
	c.prevLog, c.logPath = c.logPath, logPath
	spec := c.spec
	podIP := w.podIP
	var netns string
	if w.sandbox != nil {
		netns = w.sandbox.NetNSPath
	}
	w.mu.Unlock()

	// The previous instance's private layer is no longer needed.
	ctrDir := filepath.Join(w.dir, "containers", c.name)
	if instance > 1 {
		_ = os.RemoveAll(filepath.Join(ctrDir, strconv.Itoa(instance-1)))
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return w.startFailed(c, err)
	}
	termPath := filepath.Join(w.dir, "termination", fmt.Sprintf("%s-%d", c.name, instance))
	if err := os.WriteFile(termPath, nil, 0o666); err != nil {
		return w.startFailed(c, err)
	}
	_ = os.Chmod(termPath, 0o666)
	cs := prep.spec
	cs.ID = fmt.Sprintf("%s-%s-%d", w.uid, c.name, instance)
	cs.Dir = filepath.Join(ctrDir, strconv.Itoa(instance))
	cs.NetNSPath = netns
	cs.LogPath = logPath
	tmp := spec.TerminationMessagePath
	if tmp == "" {
		tmp = corev1.TerminationMessagePathDefault
	}
	cs.Mounts = append(cs.Mounts, container.Mount{Source: termPath, Target: tmp})
	sortMounts(cs.Mounts)

	if prep.res.Rule != "" {
		w.eventCtr(c, corev1.EventTypeNormal, "Pulled", fmt.Sprintf("Container image %q already present on machine (mapped to the local command %s by rule %q)", spec.Image, prep.res.Argv[0], prep.res.Rule))
	}
	proc, err := container.Start(w.p.ctx, cs)
	if err != nil {
		return w.startFailed(c, err)
	}
	startedAt := proc.StartedAt()
	if startedAt.IsZero() {
		startedAt = time.Now()
	}
	w.mu.Lock()
	if c.state.Terminated != nil {
		c.last = c.state
	}
	c.proc = proc
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}}
	c.started, c.ready = false, false
	c.readyProbe = spec.ReadinessProbe == nil
	w.mu.Unlock()
	w.eventCtr(c, corev1.EventTypeNormal, "Created", "Container created")
	w.eventCtr(c, corev1.EventTypeNormal, "Started", "Container started")
	w.kick()

	probeCtx, stopProbes := context.WithCancel(w.p.ctx)
	defer stopProbes()
	why := endExited
	if h := lifecycleHandler(spec.Lifecycle, true); h != nil {
		hctx, cancel := context.WithTimeout(probeCtx, w.defaultGrace()+time.Minute)
		out, err := w.runHandler(hctx, c, proc, spec, podIP, h)
		cancel()
		if err != nil {
			msg := fmt.Sprintf("PostStartHook failed: %v", err)
			if out != "" {
				msg += ": " + out
			}
			w.eventCtr(c, corev1.EventTypeWarning, "FailedPostStartHook", msg)
			w.eventCtr(c, corev1.EventTypeNormal, "Killing", fmt.Sprintf("FailedPostStartHook: stopping container %s", c.name))
			w.stopProcess(c, proc, spec, w.defaultGrace(), false)
			why = endProbeKill
		}
	}
	if why == endExited {
		w.startProbes(probeCtx, c, proc, spec, podIP, startedAt)
		select {
		case <-proc.Done():
		case <-stop:
			why = endStopped
			w.eventCtr(c, corev1.EventTypeNormal, "Killing", fmt.Sprintf("Stopping container %s", c.name))
			w.stopProcess(c, proc, spec, 0, true)
		case <-c.recreate:
			why = endRecreate
			w.eventCtr(c, corev1.EventTypeNormal, "Killing", fmt.Sprintf("Container %s definition changed, will be restarted", c.name))
			w.stopProcess(c, proc, spec, w.defaultGrace(), true)
		case msg := <-c.probeKill:
			why = endProbeKill
			w.eventCtr(c, corev1.EventTypeNormal, "Killing", msg)
			grace := w.defaultGrace()
			if p := probeGraceOverride(spec); p != nil {
				grace = *p
			}
			w.stopProcess(c, proc, spec, grace, true)
		}
	}
	stopProbes()
	<-proc.Done()
	exit := proc.Exit()
	if exit.FinishedAt.IsZero() {
		exit.FinishedAt = time.Now()
	}
	msg := terminationMessage(termPath, logPath, spec, exit)
	w.mu.Lock()
	c.proc = nil
	c.started, c.ready, c.readyProbe = false, c.kind == kindInit && exit.Code == 0, false
	reason := exit.Reason
	if reason == "" {
		reason = "Error"
		if exit.Code == 0 {
			reason = "Completed"
		}
	}
	c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode:    int32(exit.Code),
		Signal:      int32(exit.Signal),
		Reason:      reason,
		Message:     msg,
		StartedAt:   metav1.NewTime(startedAt),
		FinishedAt:  metav1.NewTime(exit.FinishedAt),
		ContainerID: c.id,
	}}
	w.mu.Unlock()
	w.kick()
	_ = pod
	return exit, why
}

// startFailed records an instance that could not start (as containerd's
// StartError: exit code 128).
func (w *podWorker) startFailed(c *ctrRun, err error) (container.Exit, endReason) {
	now := time.Now()
	w.mu.Lock()
	if c.state.Terminated != nil {
		c.last = c.state
	}
	c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 128, Reason: reasonStartError, Message: err.Error(),
		StartedAt: metav1.NewTime(time.Unix(0, 0)), FinishedAt: metav1.NewTime(now), ContainerID: c.id,
	}}
	c.started, c.ready = false, false
	w.mu.Unlock()
	w.eventCtr(c, corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
	w.kick()
	return container.Exit{Code: 128, Reason: reasonStartError, FinishedAt: now}, endStartFailed
}

// stopProcess stops one container instance: preStop hook (when asked),
// SIGTERM, and SIGKILL after grace (at least minKillGrace). With grace 0 the
// pod's kill deadline applies, which may move earlier while waiting.
func (w *podWorker) stopProcess(c *ctrRun, proc *container.Process, spec corev1.Container, grace time.Duration, preStop bool) {
	usePod := grace == 0
	deadline := time.Now().Add(grace)
	podDeadline := func() (time.Time, <-chan struct{}) {
		at, ch := w.killDeadline()
		if at.IsZero() {
			// Sidecars stopping after the app containers completed on their
			// own: the pod's termination grace period.
			at = time.Now().Add(w.defaultGrace())
		}
		return at, ch
	}
	if usePod {
		deadline, _ = podDeadline()
	}
	if preStop && !w.isSilent() {
		if h := lifecycleHandler(spec.Lifecycle, false); h != nil {
			hctx, cancel := context.WithDeadline(w.p.ctx, deadline)
			w.mu.Lock()
			podIP := w.podIP
			w.mu.Unlock()
			out, err := w.runHandler(hctx, c, proc, spec, podIP, h)
			cancel()
			if err != nil {
				msg := fmt.Sprintf("PreStopHook failed: %v", err)
				if out != "" {
					msg += ": " + out
				}
				w.eventCtr(c, corev1.EventTypeWarning, "FailedPreStopHook", msg)
			}
		}
	}
	_ = proc.Signal(syscall.SIGTERM)
	minGrace := minKillGrace
	if w.isSilent() {
		minGrace = 0
	}
	termAt := time.Now()
	for {
		var changed <-chan struct{}
		if usePod {
			deadline, changed = podDeadline()
		}
		killAt := deadline
		if floor := termAt.Add(minGrace); killAt.Before(floor) {
			killAt = floor
		}
		timer := time.NewTimer(time.Until(killAt))
		select {
		case <-proc.Done():
			timer.Stop()
			return
		case <-changed:
			timer.Stop()
			continue
		case <-timer.C:
		}
		_ = proc.Resume() // a paused process cannot die
		_ = proc.Signal(syscall.SIGKILL)
		<-proc.Done()
		return
	}
}

// setWaiting reports a container as waiting.
func (w *podWorker) setWaiting(c *ctrRun, reason, msg string) {
	w.mu.Lock()
	if c.state.Terminated != nil {
		c.last = c.state
	}
	c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	c.started, c.ready = false, false
	w.mu.Unlock()
	w.kick()
}

// setStarted records that a container passed its startup probe (or has none).
func (w *podWorker) setStarted(c *ctrRun, proc *container.Process) {
	w.mu.Lock()
	current := c.proc == proc && c.state.Running != nil
	if current {
		c.started = true
		c.ready = c.kind != kindInit && c.readyProbe
	}
	w.mu.Unlock()
	if current {
		c.markStarted()
		w.kick()
	}
}

// setReadiness records a readiness probe result.
func (w *podWorker) setReadiness(c *ctrRun, proc *container.Process, ok bool) {
	w.mu.Lock()
	changed := false
	if c.proc == proc && c.state.Running != nil {
		c.readyProbe = ok
		ready := ok && c.started && c.kind != kindInit
		changed = ready != c.ready
		c.ready = ready
	}
	w.mu.Unlock()
	if changed {
		w.kick()
	}
}

// runningProcess returns a container's process, or why there is none.
func (w *podWorker) runningProcess(name string) (*ctrRun, *container.Process, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.ctrs {
		if c.name != name {
			continue
		}
		if c.simulated {
			return c, nil, ErrSimulated
		}
		if c.proc == nil {
			return c, nil, ErrNotRunning
		}
		return c, c.proc, nil
	}
	return nil, nil, fmt.Errorf("container %q: %w", name, ErrNotFound)
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
