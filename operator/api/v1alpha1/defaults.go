package v1alpha1

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// Labels the operator puts on what it creates. The pods' selector is
// {LabelName: "valkey", LabelInstance: <cluster name>}; the client Service adds
// LabelRole: RolePrimary.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelComponent = "app.kubernetes.io/component"
	// LabelRole is the pod label the operator moves on failover; the client
	// Service selects RolePrimary.
	LabelRole = "valkey.gauntlet.dev/role"

	// AppName is the value of LabelName.
	AppName = "valkey"
	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "valkey-operator"

	// RolePrimary labels the one pod that reports role master and is the recorded primary.
	RolePrimary = "primary"
	// RoleReplica labels every other pod.
	RoleReplica = "replica"
)

// Defaults of fields that the CRD also defaults (so objects built in Go, without
// an API server, behave the same).
const (
	DefaultReplicas            = 3
	DefaultImage               = "valkey/valkey:8.1"
	DefaultExporterImage       = "oliver006/redis_exporter:v1.67.0"
	DefaultStorageSize         = "1Gi"
	DefaultHealthCheckInterval = time.Second
	DefaultHealthCheckTimeout  = 500 * time.Millisecond
	DefaultDownAfter           = 5 * time.Second
	DefaultTerminationGrace    = int64(30)
	// DefaultUID is the valkey user of the official image.
	DefaultUID = int64(999)
)

// Defaulted returns a deep copy of c with every defaultable field set, as the
// CRD's structural defaults and the operator's documented defaults would.
func (c *ValkeyCluster) Defaulted() *ValkeyCluster {
	out := c.DeepCopy()
	s := &out.Spec
	if s.Replicas == 0 {
		s.Replicas = DefaultReplicas
	}
	if s.Image == "" {
		s.Image = DefaultImage
	}
	if s.Persistence.Size.IsZero() {
		s.Persistence.Size = resource.MustParse(DefaultStorageSize)
	}
	if s.Persistence.WhenScaled == "" {
		s.Persistence.WhenScaled = PVCRetain
	}
	if s.Persistence.WhenDeleted == "" {
		s.Persistence.WhenDeleted = PVCRetain
	}
	if s.Exporter.Image == "" {
		s.Exporter.Image = DefaultExporterImage
	}
	if s.PodDisruptionBudget.Enabled == nil {
		t := true
		s.PodDisruptionBudget.Enabled = &t
	}
	if s.Failover.HealthCheckInterval.Duration <= 0 {
		s.Failover.HealthCheckInterval = metav1.Duration{Duration: DefaultHealthCheckInterval}
	}
	if s.Failover.Timeout.Duration <= 0 {
		s.Failover.Timeout = metav1.Duration{Duration: DefaultHealthCheckTimeout}
	}
	if s.Failover.DownAfter.Duration <= 0 {
		s.Failover.DownAfter = metav1.Duration{Duration: DefaultDownAfter}
	}
	if s.Service.Type == "" {
		s.Service.Type = corev1.ServiceTypeClusterIP
	}
	if s.TerminationGracePeriodSeconds == nil {
		g := DefaultTerminationGrace
		s.TerminationGracePeriodSeconds = &g
	}
	userPod := s.PodSecurityContext
	s.PodSecurityContext = overDefault(DefaultPodSecurityContext(), s.PodSecurityContext)
	s.ContainerSecurityContext = overDefault(containerDefaultUnder(userPod), s.ContainerSecurityContext)
	return out
}

// overDefault returns the user's security context merged over the default one
// with the API server's strategic merge: the fields the user sets win (nested
// objects such as seccompProfile merge field by field), the ones left unset keep
// the default. Replacing the whole default dropped the non-root user while the
// container's runAsNonRoot stayed: `podSecurityContext: {fsGroupChangePolicy:
// Always}` left every pod refused by the kubelet ("container has runAsNonRoot
// and image will run as root"), found by an untuned Gauntlet campaign.
func overDefault[T any](def, user *T) *T {
	if user == nil {
		return def
	}
	base, err := json.Marshal(def)
	if err != nil {
		return user
	}
	patch, err := json.Marshal(user)
	if err != nil {
		return user
	}
	merged, err := strategicpatch.StrategicMergePatch(base, patch, new(T))
	if err != nil {
		return user
	}
	out := new(T)
	if err := json.Unmarshal(merged, out); err != nil {
		return user
	}
	return out
}

// DefaultPodSecurityContext meets the "restricted" Pod Security profile: the
// official image's valkey user (999), fsGroup 999 so the data volume is writable,
// and the runtime's default seccomp profile.
func DefaultPodSecurityContext() *corev1.PodSecurityContext {
	uid := DefaultUID
	nonRoot := true
	policy := corev1.FSGroupChangeOnRootMismatch
	return &corev1.PodSecurityContext{
		RunAsUser:           &uid,
		RunAsGroup:          &uid,
		RunAsNonRoot:        &nonRoot,
		FSGroup:             &uid,
		FSGroupChangePolicy: &policy,
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// containerDefaultUnder is the default container security context without the
// settings the user chose at pod level: a container-level value overrides the
// pod's, so a default runAsNonRoot under the user's `runAsUser: 0,
// runAsNonRoot: false` made every pod refused ("container has runAsNonRoot and
// image will run as root"), and a default seccomp profile overrode the user's
// pod-wide one — found by an untuned Gauntlet campaign (seed 2).
func containerDefaultUnder(userPod *corev1.PodSecurityContext) *corev1.SecurityContext {
	def := DefaultContainerSecurityContext()
	if userPod == nil {
		return def
	}
	if userPod.RunAsNonRoot != nil || userPod.RunAsUser != nil {
		def.RunAsNonRoot = nil
	}
	if userPod.SeccompProfile != nil {
		def.SeccompProfile = nil
	}
	return def
}

// DefaultContainerSecurityContext meets the "restricted" Pod Security profile.
func DefaultContainerSecurityContext() *corev1.SecurityContext {
	f, t := false, true
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: &f,
		ReadOnlyRootFilesystem:   &t,
		RunAsNonRoot:             &t,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// Defaulted returns a deep copy of b with every defaultable field set.
func (b *ValkeyBackup) Defaulted() *ValkeyBackup {
	out := b.DeepCopy()
	if out.Spec.Storage.Size.IsZero() {
		out.Spec.Storage.Size = resource.MustParse(DefaultStorageSize)
	}
	return out
}

// SelectorLabels are the labels that select a cluster's Valkey pods.
func SelectorLabels(clusterName string) map[string]string {
	return map[string]string{LabelName: AppName, LabelInstance: clusterName}
}
