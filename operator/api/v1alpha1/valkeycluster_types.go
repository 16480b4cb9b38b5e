package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ValkeyClusterSpec is the desired state of a primary/replica Valkey set.
//
// +kubebuilder:validation:XValidation:rule="!has(self.podDisruptionBudget) || !has(self.podDisruptionBudget.maxUnavailable) || self.replicas <= 1 || self.podDisruptionBudget.maxUnavailable < self.replicas",message="podDisruptionBudget.maxUnavailable must be less than replicas: at least one pod must survive a voluntary disruption"
// +kubebuilder:validation:XValidation:rule="has(self.restoreFrom) == has(oldSelf.restoreFrom) && (!has(self.restoreFrom) || self.restoreFrom == oldSelf.restoreFrom)",message="restoreFrom can only be set when the ValkeyCluster is created"
type ValkeyClusterSpec struct {
	// Replicas is the number of Valkey pods: one primary and replicas-1 replicas.
	// Scaling in removes replicas only; the primary is switched over first when its
	// ordinal goes away.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=3
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Image is the Valkey server image (the official valkey/valkey image or one
	// compatible with it: valkey-server and valkey-cli on the PATH, and sh).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:default="valkey/valkey:8.1"
	// +optional
	Image string `json:"image,omitempty"`

	// ImagePullPolicy of the Valkey and exporter containers.
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// ImagePullSecrets are used to pull the images.
	// +optional
	// +listType=atomic
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// Config holds valkey.conf directives (key: value). Keys that Valkey can change
	// at runtime are applied live with CONFIG SET and written to the configuration
	// only once the server accepted them; keys that need a restart (databases,
	// io-threads, tcp-backlog, aclfile, ...) roll the pods one at a time, replicas
	// first, the primary after a planned switchover. Keys the operator owns (port,
	// dir, replicaof, requirepass, TLS files, ...) are rejected.
	// +kubebuilder:validation:MaxProperties=128
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[a-z][a-z0-9-]{0,63}$'))",message="config keys are lowercase valkey.conf directive names (letters, digits, '-'), at most 64 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['port', 'tls-port', 'bind', 'unixsocket', 'dir', 'daemonize', 'supervised', 'pidfile', 'logfile', 'include', 'replicaof', 'slaveof', 'replica-announce-ip', 'slave-announce-ip', 'replica-announce-port', 'slave-announce-port', 'requirepass', 'masterauth', 'masteruser', 'protected-mode', 'rename-command', 'tls-cert-file', 'tls-key-file', 'tls-ca-cert-file', 'tls-ca-cert-dir', 'tls-replication', 'tls-client-cert-file', 'tls-client-key-file']))",message="config sets a key the operator owns (port, dir, replicaof, auth, TLS files, ...): use the dedicated spec fields instead"
	// +optional
	Config map[string]string `json:"config,omitempty"`

	// Persistence gives each pod a PersistentVolumeClaim for /data.
	// +kubebuilder:default={}
	// +optional
	Persistence PersistenceSpec `json:"persistence,omitempty"`

	// Resources of the Valkey container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Exporter adds a Prometheus exporter sidecar.
	// +kubebuilder:default={}
	// +optional
	Exporter ExporterSpec `json:"exporter,omitempty"`

	// Scheduling constrains where the pods run.
	// +optional
	Scheduling SchedulingSpec `json:"scheduling,omitempty"`

	// PodDisruptionBudget protects the set against voluntary disruptions.
	// +kubebuilder:default={}
	// +optional
	PodDisruptionBudget PodDisruptionBudgetSpec `json:"podDisruptionBudget,omitempty"`

	// TLS serves clients and replication over TLS.
	// +kubebuilder:default={}
	// +optional
	TLS TLSSpec `json:"tls,omitempty"`

	// Auth protects the servers with a password; the operator's own connections
	// and replication authenticate with it.
	// +optional
	Auth AuthSpec `json:"auth,omitempty"`

	// Failover tunes health checking and automatic failover.
	// +kubebuilder:default={}
	// +optional
	Failover FailoverSpec `json:"failover,omitempty"`

	// PodSecurityContext is merged over the default pod security context (non-root
	// user 999, fsGroup 999, RuntimeDefault seccomp: the "restricted" Pod Security
	// profile): the fields set here win, the others keep the default.
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`

	// ContainerSecurityContext is merged over the default container security
	// context (no privilege escalation, all capabilities dropped, read-only root
	// filesystem, non-root: the "restricted" Pod Security profile): the fields set
	// here win, the others keep the default.
	// +optional
	ContainerSecurityContext *corev1.SecurityContext `json:"containerSecurityContext,omitempty"`

	// Service configures the client Service, whose selector always targets the primary.
	// +kubebuilder:default={}
	// +optional
	Service ServiceSpec `json:"service,omitempty"`

	// TerminationGracePeriodSeconds of the pods.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=30
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`

	// RestoreFrom creates the cluster from a completed ValkeyBackup in the same
	// namespace. Set at creation only.
	// +optional
	RestoreFrom *RestoreSource `json:"restoreFrom,omitempty"`
}

// PVCRetention says what happens to a PersistentVolumeClaim.
// +kubebuilder:validation:Enum=Retain;Delete
type PVCRetention string

// PVC retention policies.
const (
	// PVCRetain keeps the claim (and its data).
	PVCRetain PVCRetention = "Retain"
	// PVCDelete deletes the claim.
	PVCDelete PVCRetention = "Delete"
)

// PersistenceSpec describes the pods' data volumes.
//
// +kubebuilder:validation:XValidation:rule="(has(self.enabled) && self.enabled) == (has(oldSelf.enabled) && oldSelf.enabled)",message="persistence.enabled is immutable: create a new ValkeyCluster (restoreFrom a backup) to change it"
// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",message="persistence.storageClassName is immutable"
// +kubebuilder:validation:XValidation:rule="!has(self.size) || !has(oldSelf.size) || quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) >= 0",message="persistence.size may not shrink"
type PersistenceSpec struct {
	// Enabled gives each pod a PersistentVolumeClaim; otherwise /data is an emptyDir
	// and a pod that restarts comes back empty. Immutable.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// Size of each claim. It may grow (when the storage class allows expansion) but
	// not shrink.
	// +kubebuilder:default="1Gi"
	// +optional
	Size resource.Quantity `json:"size,omitempty"`

	// StorageClassName of the claims; empty means the cluster's default class. Immutable.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`

	// WhenScaled says what happens to a pod's claim when scaling in removes the pod.
	// +kubebuilder:default=Retain
	// +optional
	WhenScaled PVCRetention `json:"whenScaled,omitempty"`

	// WhenDeleted says what happens to the claims when the ValkeyCluster is deleted.
	// +kubebuilder:default=Retain
	// +optional
	WhenDeleted PVCRetention `json:"whenDeleted,omitempty"`
}

// ExporterSpec describes the Prometheus exporter sidecar.
type ExporterSpec struct {
	// Enabled adds the sidecar (port 9121, named "metrics").
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// Image of the exporter.
	// +kubebuilder:default="oliver006/redis_exporter:v1.67.0"
	// +optional
	Image string `json:"image,omitempty"`

	// Resources of the exporter container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// SchedulingSpec constrains where the pods run.
type SchedulingSpec struct {
	// Affinity of the pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// Tolerations of the pods.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// NodeSelector of the pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// TopologySpreadConstraints of the pods. A constraint without a label selector
	// gets the cluster's pod selector.
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// PriorityClassName of the pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// PodDisruptionBudgetSpec describes the PodDisruptionBudget.
type PodDisruptionBudgetSpec struct {
	// Enabled creates a PodDisruptionBudget (never for a single pod, which it would
	// either not protect or make undrainable).
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// MaxUnavailable pods during voluntary disruptions; by default the largest
	// number that keeps a majority of the copies: max(1, (replicas-1)/2).
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`
}

// TLSSpec configures TLS.
//
// +kubebuilder:validation:XValidation:rule="!has(self.enabled) || !self.enabled || (has(self.secretName) && size(self.secretName) > 0)",message="tls.secretName is required when TLS is enabled"
type TLSSpec struct {
	// Enabled serves clients and replication over TLS only (on port 6379).
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// SecretName names a kubernetes.io/tls Secret with tls.crt, tls.key and ca.crt;
	// the certificate must be valid for the pods' IP addresses or the operator must
	// be able to verify it against ca.crt.
	// +optional
	SecretName string `json:"secretName,omitempty"`
}

// AuthSpec configures password authentication.
//
// +kubebuilder:validation:XValidation:rule="!has(self.passwordSecret) || (has(self.passwordSecret.name) && size(self.passwordSecret.name) > 0 && size(self.passwordSecret.key) > 0)",message="auth.passwordSecret needs the name of a Secret in the cluster's namespace and a key in it"
// +kubebuilder:validation:XValidation:rule="!has(self.passwordSecret) || !has(self.passwordSecret.optional) || !self.passwordSecret.optional",message="auth.passwordSecret.optional: true is not supported: the operator never runs the servers without the password the Secret holds; create the Secret (until it exists the cluster reports PasswordSecretMissing)"
type AuthSpec struct {
	// PasswordSecret selects the key of a Secret that holds the password. The
	// Secret must exist: optional: true is refused (a cluster is never run
	// without the password it names).
	// +optional
	PasswordSecret *corev1.SecretKeySelector `json:"passwordSecret,omitempty"`
}

// FailoverSpec tunes health checking and automatic failover.
//
// +kubebuilder:validation:XValidation:rule="!has(self.timeout) || !has(self.healthCheckInterval) || duration(self.timeout) <= duration(self.healthCheckInterval)",message="failover.timeout must not exceed failover.healthCheckInterval"
// +kubebuilder:validation:XValidation:rule="!has(self.downAfter) || !has(self.healthCheckInterval) || duration(self.downAfter) >= duration(self.healthCheckInterval)",message="failover.downAfter must be at least failover.healthCheckInterval"
type FailoverSpec struct {
	// HealthCheckInterval is how often the operator PINGs each pod.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:default="1s"
	// +optional
	HealthCheckInterval metav1.Duration `json:"healthCheckInterval,omitempty"`

	// Timeout of one health check.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:default="500ms"
	// +optional
	Timeout metav1.Duration `json:"timeout,omitempty"`

	// DownAfter is how long a pod must fail every health check before it is
	// considered down; a primary that is down is failed over.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:default="5s"
	// +optional
	DownAfter metav1.Duration `json:"downAfter,omitempty"`
}

// ServiceSpec configures the client Service.
type ServiceSpec struct {
	// Type of the client Service.
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	// +kubebuilder:default=ClusterIP
	// +optional
	Type corev1.ServiceType `json:"type,omitempty"`

	// Annotations of the client Service.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// RestoreSource names the backup a cluster is created from.
type RestoreSource struct {
	// BackupName is a completed ValkeyBackup in the cluster's namespace.
	// +kubebuilder:validation:MinLength=1
	BackupName string `json:"backupName"`
}

// ClusterPhase summarizes a ValkeyCluster's state.
type ClusterPhase string

// Cluster phases.
const (
	// PhasePending: no pod is serving yet.
	PhasePending ClusterPhase = "Pending"
	// PhaseRestoring: loading data from a backup.
	PhaseRestoring ClusterPhase = "Restoring"
	// PhaseReady: a primary serves, every replica is in sync, the configuration is applied.
	PhaseReady ClusterPhase = "Ready"
	// PhaseUpdating: a rolling restart, a scale or a configuration change is in progress.
	PhaseUpdating ClusterPhase = "Updating"
	// PhaseDegraded: a primary serves but some replica is missing or out of sync.
	PhaseDegraded ClusterPhase = "Degraded"
	// PhaseFailingOver: the primary is down and the operator is promoting a replica.
	PhaseFailingOver ClusterPhase = "FailingOver"
	// PhaseUnavailable: no primary serves and the operator cannot promote one.
	PhaseUnavailable ClusterPhase = "Unavailable"
)

// Condition types of a ValkeyCluster.
const (
	// ConditionReady is True when the cluster matches its spec and every pod is in sync.
	ConditionReady = "Ready"
	// ConditionPrimaryAvailable is True when exactly one pod is labelled primary and reports that role.
	ConditionPrimaryAvailable = "PrimaryAvailable"
	// ConditionConfigApplied is True when every key of spec.config is in effect.
	ConditionConfigApplied = "ConfigApplied"
	// ConditionRestored is True once the data of spec.restoreFrom is loaded.
	ConditionRestored = "Restored"
)

// ValkeyClusterStatus is the observed state of a ValkeyCluster.
type ValkeyClusterStatus struct {
	// Phase summarizes the state.
	// +optional
	Phase ClusterPhase `json:"phase,omitempty"`

	// Primary is the name of the pod that serves as primary.
	// +optional
	Primary string `json:"primary,omitempty"`

	// Replicas is the number of Valkey pods that exist.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// ReadyReplicas is the number of pods that serve: the primary, and replicas
	// whose link to it is up (initial sync done).
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// Selector is the pods' label selector (for the scale subresource).
	// +optional
	Selector string `json:"selector,omitempty"`

	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, PrimaryAvailable, ConfigApplied, Restored.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastFailoverTime is when the operator last changed the primary.
	// +optional
	LastFailoverTime *metav1.Time `json:"lastFailoverTime,omitempty"`

	// LastFailoverReason says why.
	// +optional
	LastFailoverReason string `json:"lastFailoverReason,omitempty"`
}

// ValkeyCluster is a primary/replica Valkey set managed by the operator, which is
// also its Sentinel.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=vkc;valkey,categories=valkey
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Primary",type=string,JSONPath=`.status.primary`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:default={}
	Spec   ValkeyClusterSpec   `json:"spec,omitempty"`
	Status ValkeyClusterStatus `json:"status,omitempty"`
}

// ValkeyClusterList is a list of ValkeyClusters.
//
// +kubebuilder:object:root=true
type ValkeyClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ValkeyCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ValkeyCluster{}, &ValkeyClusterList{})
}
