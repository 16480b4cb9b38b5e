package kubelet

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ctrKind tells regular init containers, sidecars (init containers with
// restartPolicy Always) and app containers apart.
type ctrKind int

const (
	kindInit ctrKind = iota
	kindSidecar
	kindApp
)

// Waiting reasons the nodes report (the kubelet's, plus ImageMappingFailed).
const (
	reasonContainerCreating  = "ContainerCreating"
	reasonPodInitializing    = "PodInitializing"
	reasonCrashLoopBackOff   = "CrashLoopBackOff"
	reasonConfigError        = "CreateContainerConfigError"
	reasonImageMappingFailed = "ImageMappingFailed"
	reasonErrImagePull       = "ErrImagePull"
	reasonImagePullBackOff   = "ImagePullBackOff"
	reasonStartError         = "StartError"
	reasonStatusUnknown      = "ContainerStatusUnknown"
	reasonDeadlineExceeded   = "DeadlineExceeded"
)

// The pod conditions the kubelet owns; other conditions in the API are left alone.
var kubeletConditions = []corev1.PodConditionType{
	corev1.PodReadyToStartContainers,
	corev1.PodInitialized,
	corev1.ContainersReady,
	corev1.PodReady,
}

// ctrSnapshot is one container's state at a point in time.
type ctrSnapshot struct {
	name     string
	kind     ctrKind
	spec     corev1.Container
	state    corev1.ContainerState
	last     corev1.ContainerState
	restarts int32
	ready    bool
	started  bool
	id       string
	imageID  string
}

// podSnapshot is everything the pod status is computed from.
type podSnapshot struct {
	pod          *corev1.Pod
	ctrs         []ctrSnapshot
	sandboxReady bool
	podIP        netip.Addr
	hostIP       netip.Addr
	startTime    metav1.Time
	// initialized is sticky: once every init container is done it stays true.
	initialized bool
	// terminal: the pod's containers will not be started again (the pod was
	// deleted or its deadline passed, and everything stopped).
	terminal bool
	// failed forces phase Failed (deadline exceeded).
	failed          bool
	reason, message string
	// apiConds are the conditions in the API, for readiness gates.
	apiConds []corev1.PodCondition
	// prev are the conditions last computed, for lastTransitionTime.
	prev map[corev1.PodConditionType]corev1.PodCondition
	now  metav1.Time
}

// computeStatus is the pod status the node reports. Conditions carry the
// previous lastTransitionTime when their status did not change.
func computeStatus(s podSnapshot) corev1.PodStatus {
	pod := s.pod
	st := corev1.PodStatus{
		Reason:             s.reason,
		Message:            s.message,
		QOSClass:           qosClass(pod),
		ObservedGeneration: pod.Generation,
	}
	if !s.startTime.IsZero() {
		t := s.startTime
		st.StartTime = &t
	}
	if s.hostIP.IsValid() {
		st.HostIP = s.hostIP.String()
		st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
	}
	if s.podIP.IsValid() {
		st.PodIP = s.podIP.String()
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	}
	for _, c := range s.ctrs {
		cs := containerStatus(c)
		if c.kind == kindApp {
			st.ContainerStatuses = append(st.ContainerStatuses, cs)
		} else {
			st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
		}
	}
	st.Phase = podPhase(s)
	if s.failed {
		st.Phase = corev1.PodFailed
	}

	cond := func(t corev1.PodConditionType, ok bool, reason, msg string) corev1.PodCondition {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: pod.Generation}
		if ok {
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, "", ""
		}
		if prev, found := s.prev[t]; found && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
		} else {
			c.LastTransitionTime = s.now
		}
		return c
	}

	sandbox := s.sandboxReady && st.Phase != corev1.PodSucceeded && st.Phase != corev1.PodFailed
	st.Conditions = append(st.Conditions, cond(corev1.PodReadyToStartContainers, sandbox, "", ""))

	var incomplete []string
	for _, c := range s.ctrs {
		switch {
		case c.kind == kindInit && !(c.state.Terminated != nil && c.state.Terminated.ExitCode == 0):
			incomplete = append(incomplete, c.name)
		case c.kind == kindSidecar && !c.started && !s.initialized:
			incomplete = append(incomplete, c.name)
		}
	}
	initialized := s.initialized || len(incomplete) == 0
	initMsg := ""
	if !initialized {
		initMsg = fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " "))
	}
	st.Conditions = append(st.Conditions, cond(corev1.PodInitialized, initialized, "ContainersNotInitialized", initMsg))

	var unready []string
	for _, c := range s.ctrs {
		if c.kind != kindInit && !c.ready {
			unready = append(unready, c.name)
		}
	}
	ready := len(unready) == 0 && st.Phase != corev1.PodSucceeded && st.Phase != corev1.PodFailed
	reason, msg := "ContainersNotReady", ""
	if len(unready) > 0 {
		msg = fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	}
	if st.Phase == corev1.PodSucceeded {
		reason, msg = "PodCompleted", ""
	} else if st.Phase == corev1.PodFailed && len(unready) == 0 {
		reason, msg = "PodFailed", ""
	}
	st.Conditions = append(st.Conditions, cond(corev1.ContainersReady, ready, reason, msg))

	podReady, podReason, podMsg := ready, reason, msg
	if ready {
		var gateMsgs []string
		for _, g := range pod.Spec.ReadinessGates {
			found := false
			for _, c := range s.apiConds {
				if c.Type == g.ConditionType {
					found = true
					if c.Status != corev1.ConditionTrue {
						gateMsgs = append(gateMsgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, c.Status))
					}
				}
			}
			if !found {
				gateMsgs = append(gateMsgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
			}
		}
		if len(gateMsgs) > 0 {
			podReady, podReason, podMsg = false, "ReadinessGatesNotReady", strings.Join(gateMsgs, ", ")
		}
	}
	st.Conditions = append(st.Conditions, cond(corev1.PodReady, podReady, podReason, podMsg))
	return st
}

// containerStatus renders one container's status.
func containerStatus(c ctrSnapshot) corev1.ContainerStatus {
	started := c.started && c.state.Running != nil
	cs := corev1.ContainerStatus{
		Name:                 c.name,
		State:                *c.state.DeepCopy(),
		LastTerminationState: *c.last.DeepCopy(),
		Ready:                c.ready,
		RestartCount:         c.restarts,
		Image:                c.spec.Image,
		ImageID:              c.imageID,
		ContainerID:          c.id,
		Started:              &started,
	}
	if c.state.Running != nil {
		if len(c.spec.Resources.Limits) > 0 || len(c.spec.Resources.Requests) > 0 {
			cs.Resources = c.spec.Resources.DeepCopy()
			cs.Resources.Claims = nil
		}
	}
	for _, vm := range c.spec.VolumeMounts {
		vs := corev1.VolumeMountStatus{Name: vm.Name, MountPath: vm.MountPath, ReadOnly: vm.ReadOnly}
		if vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly != corev1.RecursiveReadOnlyDisabled && vm.ReadOnly {
			// A read-only bind mount of a folder is read-only all the way down
			// only if its submounts are too; the nodes mount no submounts.
			rro := corev1.RecursiveReadOnlyEnabled
			vs.RecursiveReadOnly = &rro
		}
		cs.VolumeMounts = append(cs.VolumeMounts, vs)
	}
	return cs
}

// podPhase follows the kubelet's rules: failed regular init containers fail a
// pod that never restarts; pending initialization or never-started
// containers keep it Pending; a running container makes it Running; when all
// have stopped, the restart policy decides.
func podPhase(s podSnapshot) corev1.PodPhase {
	policy := s.pod.Spec.RestartPolicy
	var pendingInit, pendingSidecars, failedInit int
	var running, waiting, stopped, succeeded, unknown int
	for _, c := range s.ctrs {
		switch c.kind {
		case kindSidecar:
			if !c.started {
				pendingSidecars++
			}
		case kindInit:
			switch {
			case c.state.Running != nil:
				pendingInit++
			case c.state.Terminated != nil:
				if c.state.Terminated.ExitCode != 0 {
					failedInit++
				}
			case c.state.Waiting != nil:
				if c.last.Terminated != nil {
					if c.last.Terminated.ExitCode != 0 {
						failedInit++
					}
				} else {
					pendingInit++
				}
			default:
				pendingInit++
			}
		case kindApp:
			switch {
			case c.state.Running != nil:
				running++
			case c.state.Terminated != nil:
				stopped++
				if c.state.Terminated.ExitCode == 0 {
					succeeded++
				}
			case c.state.Waiting != nil:
				if c.last.Terminated != nil {
					stopped++
				} else {
					waiting++
				}
			default:
				unknown++
			}
		}
	}
	if failedInit > 0 && policy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	if s.terminal && running == 0 && waiting == 0 && unknown == 0 && stopped > 0 {
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	}
	switch {
	case pendingInit > 0 || (pendingSidecars > 0 && !s.initialized):
		return corev1.PodPending
	case waiting > 0:
		return corev1.PodPending
	case running > 0 && unknown == 0:
		return corev1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if policy == corev1.RestartPolicyAlways {
			return corev1.PodRunning
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		if policy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

// qosClass is the pod's quality-of-service class (the API server sets it at
// creation; this is the fallback): BestEffort without cpu or memory requests
// and limits, Guaranteed when every container's cpu and memory limits equal
// its requests, Burstable otherwise.
func qosClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	any, guaranteed := false, true
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[name]
			lim, hasLim := c.Resources.Limits[name]
			if (hasReq && !req.IsZero()) || (hasLim && !lim.IsZero()) {
				any = true
			}
			if !hasLim || lim.IsZero() || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// conditionsByType indexes conditions.
func conditionsByType(cs []corev1.PodCondition) map[corev1.PodConditionType]corev1.PodCondition {
	m := make(map[corev1.PodConditionType]corev1.PodCondition, len(cs))
	for _, c := range cs {
		m[c.Type] = c
	}
	return m
}
