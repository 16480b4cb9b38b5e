package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gauntlet-dev/gauntlet/cluster/internal/images"
	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/container"
)

// Running a pod's containers: supervision, restarts, one run of an instance,
// stopping it, and the container statuses those write.

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
		err := w.runHook(hctx, c, proc, spec, podIP, h, "PostStartHook")
		cancel()
		if err != nil {
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
			_ = w.runHook(hctx, c, proc, spec, podIP, h, "PreStopHook") // the container stops either way
			cancel()
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
