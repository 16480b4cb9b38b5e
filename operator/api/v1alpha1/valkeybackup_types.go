package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ValkeyBackupSpec is the desired backup. It is immutable: create another
// ValkeyBackup to take another snapshot.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a ValkeyBackup's spec is immutable: create a new ValkeyBackup"
type ValkeyBackupSpec struct {
	// ClusterName is the ValkeyCluster, in the same namespace, whose primary is
	// snapshotted.
	// +kubebuilder:validation:MinLength=1
	ClusterName string `json:"clusterName"`

	// Storage of the snapshot: a PersistentVolumeClaim the operator creates and
	// owns through this ValkeyBackup.
	// +kubebuilder:default={}
	// +optional
	Storage BackupStorage `json:"storage,omitempty"`
}

// BackupStorage describes the claim that holds a snapshot.
type BackupStorage struct {
	// Size of the claim; it must hold the RDB file.
	// +kubebuilder:default="1Gi"
	// +optional
	Size resource.Quantity `json:"size,omitempty"`

	// StorageClassName of the claim; empty means the cluster's default class.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// BackupPhase is where a backup is.
type BackupPhase string

// Backup phases.
const (
	// BackupPending: waiting for the cluster's primary.
	BackupPending BackupPhase = "Pending"
	// BackupRunning: the snapshot is being taken.
	BackupRunning BackupPhase = "Running"
	// BackupCompleted: the snapshot is stored; Path, Size and Checksum are set.
	BackupCompleted BackupPhase = "Completed"
	// BackupFailed: the snapshot could not be taken; Message says why.
	BackupFailed BackupPhase = "Failed"
)

// ValkeyBackupStatus is the observed state of a ValkeyBackup.
type ValkeyBackupStatus struct {
	// Phase of the backup.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`

	// PersistentVolumeClaim holding the snapshot.
	// +optional
	PersistentVolumeClaim string `json:"persistentVolumeClaim,omitempty"`

	// Path of the RDB file inside the claim.
	// +optional
	Path string `json:"path,omitempty"`

	// Size of the RDB file in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`

	// Checksum of the RDB file, "sha256:<hex>".
	// +optional
	Checksum string `json:"checksum,omitempty"`

	// SourcePod is the primary the snapshot was taken from.
	// +optional
	SourcePod string `json:"sourcePod,omitempty"`

	// StartTime is when the snapshot started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the snapshot was stored.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Message explains the phase (the error of a failed backup).
	// +optional
	Message string `json:"message,omitempty"`

	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ValkeyBackup is an RDB snapshot of a ValkeyCluster's primary stored in a
// PersistentVolumeClaim, with its checksum; a ValkeyCluster can be created from it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vkb,categories=valkey
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.size`
// +kubebuilder:printcolumn:name="Completed",type=date,JSONPath=`.status.completionTime`
type ValkeyBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ValkeyBackupSpec   `json:"spec"`
	Status ValkeyBackupStatus `json:"status,omitempty"`
}

// ValkeyBackupList is a list of ValkeyBackups.
//
// +kubebuilder:object:root=true
type ValkeyBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ValkeyBackup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ValkeyBackup{}, &ValkeyBackupList{})
}
