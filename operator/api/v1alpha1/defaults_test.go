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
