package v1alpha1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A user's security context is merged over the default one: what the user sets
// wins, the rest (the non-root user above all) stays.
func TestSecurityContextsMergeOverDefaults(t *testing.T) {
	always := corev1.FSGroupChangeAlways
	tr, uid := true, int64(1234)
	c := &ValkeyCluster{Spec: ValkeyClusterSpec{
		PodSecurityContext: &corev1.PodSecurityContext{FSGroupChangePolicy: &always, RunAsGroup: &uid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}},
		ContainerSecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &tr},
	}}
	d := c.Defaulted().Spec
	pod, ctr := d.PodSecurityContext, d.ContainerSecurityContext
	switch {
	case pod.FSGroupChangePolicy == nil || *pod.FSGroupChangePolicy != always:
		t.Errorf("fsGroupChangePolicy = %v, want the user's Always", pod.FSGroupChangePolicy)
	case pod.RunAsGroup == nil || *pod.RunAsGroup != uid:
		t.Errorf("runAsGroup = %v, want the user's %d", pod.RunAsGroup, uid)
	case pod.RunAsUser == nil || *pod.RunAsUser != DefaultUID:
		t.Errorf("runAsUser = %v, want the default %d kept (a container with runAsNonRoot is refused without it)", pod.RunAsUser, DefaultUID)
	case pod.FSGroup == nil || *pod.FSGroup != DefaultUID:
		t.Errorf("fsGroup = %v, want the default %d kept", pod.FSGroup, DefaultUID)
	case pod.SeccompProfile == nil || pod.SeccompProfile.Type != corev1.SeccompProfileTypeUnconfined:
		t.Errorf("seccompProfile = %+v, want the user's Unconfined", pod.SeccompProfile)
	}
	switch {
	case ctr.AllowPrivilegeEscalation == nil || !*ctr.AllowPrivilegeEscalation:
		t.Errorf("allowPrivilegeEscalation = %v, want the user's true", ctr.AllowPrivilegeEscalation)
	case ctr.RunAsNonRoot == nil || !*ctr.RunAsNonRoot:
		t.Errorf("runAsNonRoot = %v, want the default true kept", ctr.RunAsNonRoot)
	case ctr.Capabilities == nil || len(ctr.Capabilities.Drop) != 1:
		t.Errorf("capabilities = %+v, want the default drop ALL kept", ctr.Capabilities)
	}
	// Unset: the defaults themselves.
	d = (&ValkeyCluster{}).Defaulted().Spec
	if d.PodSecurityContext.RunAsUser == nil || *d.PodSecurityContext.RunAsUser != DefaultUID || d.ContainerSecurityContext.ReadOnlyRootFilesystem == nil {
		t.Errorf("defaults not applied: %+v %+v", d.PodSecurityContext, d.ContainerSecurityContext)
	}
}

// What the user chose at pod level is not overridden by a container-level
// default (a container's setting wins over its pod's): `runAsUser: 0,
// runAsNonRoot: false` left every pod refused ("container has runAsNonRoot
// and image will run as root") in an untuned campaign (seed 2).
func TestPodLevelChoicesNotOverriddenByContainerDefaults(t *testing.T) {
	root, f := int64(0), false
	c := &ValkeyCluster{Spec: ValkeyClusterSpec{PodSecurityContext: &corev1.PodSecurityContext{
		RunAsUser: &root, RunAsGroup: &root, RunAsNonRoot: &f,
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}}}
	ctr := c.Defaulted().Spec.ContainerSecurityContext
	if ctr.RunAsNonRoot != nil {
		t.Errorf("container runAsNonRoot = %v, want unset so the pod's false governs", *ctr.RunAsNonRoot)
	}
	if ctr.SeccompProfile != nil {
		t.Errorf("container seccompProfile = %+v, want unset so the pod's Unconfined governs", ctr.SeccompProfile)
	}
	if ctr.ReadOnlyRootFilesystem == nil || ctr.Capabilities == nil {
		t.Errorf("the other container defaults are lost: %+v", ctr)
	}
	// A container-level choice of the user still wins.
	tr := true
	c.Spec.ContainerSecurityContext = &corev1.SecurityContext{RunAsNonRoot: &tr}
	if got := c.Defaulted().Spec.ContainerSecurityContext.RunAsNonRoot; got == nil || !*got {
		t.Errorf("the user's container runAsNonRoot = %v, want true", got)
	}
}
