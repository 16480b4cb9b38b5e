// Package resources builds the Kubernetes objects of a ValkeyCluster: headless
// Service, client Service, ConfigMap, auth Secret, StatefulSet and
// PodDisruptionBudget. Each has Make (the object from the desired state) and
// Update (the current object with only the fields the operator owns set to the
// desired values; server-defaulted fields are kept, so an unchanged cluster
// updates nothing). Every object carries a controller owner reference to the
// ValkeyCluster. Everything here is pure.
package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/conf"
)

// Annotations the operator keeps on what it builds.
const (
	// AnnotationTemplateHash on the StatefulSet fingerprints the pod template the
	// operator built, so server defaults never look like a change.
	AnnotationTemplateHash = "valkey.gauntlet.dev/template-hash"
	// AnnotationRestartHash on the pod template fingerprints the restart-only
	// configuration: changing it rolls the pods.
	AnnotationRestartHash = "valkey.gauntlet.dev/restart-config-hash"
	// AnnotationManagedAnnotations on the client Service lists the annotations
	// that came from spec.service.annotations (so removed ones are removed).
	AnnotationManagedAnnotations = "valkey.gauntlet.dev/managed-annotations"
)

// Container and port names.
const (
	ContainerValkey   = "valkey"
	ContainerExporter = "exporter"
	PortNameValkey    = "valkey"
	PortNameMetrics   = "metrics"
	ExporterPort      = 9121
	VolumeData        = "data"
	VolumeConfig      = "config"
	VolumeAuth        = "auth"
	VolumeTLS         = "tls"
)

// Desired is what the builders build from.
type Desired struct {
	// Cluster is the ValkeyCluster with defaults applied (ValkeyCluster.Defaulted).
	Cluster *v1alpha1.ValkeyCluster
	// Applied is the accepted configuration (what the ConfigMap must hold).
	Applied conf.Applied
	// Password is the servers' password when spec.auth is set.
	Password string
	// Replicas is the StatefulSet's size: spec.replicas, except while a primary
	// whose ordinal goes away is being switched over.
	Replicas int32
}

// Names of the objects of a cluster.

// HeadlessServiceName is the governing Service of the StatefulSet.
func HeadlessServiceName(c *v1alpha1.ValkeyCluster) string { return c.Name + "-headless" }

// ClientServiceName is the Service that selects the primary.
func ClientServiceName(c *v1alpha1.ValkeyCluster) string { return c.Name }

// ConfigMapName holds valkey.conf and the operator's record.
func ConfigMapName(c *v1alpha1.ValkeyCluster) string { return c.Name + "-config" }

// AuthSecretName holds the auth.conf the servers include.
func AuthSecretName(c *v1alpha1.ValkeyCluster) string { return c.Name + "-auth" }

// StatefulSetName is the StatefulSet of the Valkey pods.
func StatefulSetName(c *v1alpha1.ValkeyCluster) string { return c.Name }

// PDBName is the PodDisruptionBudget.
func PDBName(c *v1alpha1.ValkeyCluster) string { return c.Name }

// PodName is the name of the pod with the given ordinal.
func PodName(c *v1alpha1.ValkeyCluster, ordinal int) string {
	return fmt.Sprintf("%s-%d", StatefulSetName(c), ordinal)
}

// PVCName is the data claim of the pod with the given ordinal.
func PVCName(c *v1alpha1.ValkeyCluster, ordinal int) string {
	return fmt.Sprintf("%s-%s", VolumeData, PodName(c, ordinal))
}

// Labels are the labels of every object of a cluster.
func Labels(c *v1alpha1.ValkeyCluster) map[string]string {
	l := v1alpha1.SelectorLabels(c.Name)
	l[v1alpha1.LabelManagedBy] = v1alpha1.ManagedBy
	l[v1alpha1.LabelComponent] = "server"
	return l
}

// SelectorLabels select the cluster's Valkey pods.
func SelectorLabels(c *v1alpha1.ValkeyCluster) map[string]string {
	return v1alpha1.SelectorLabels(c.Name)
}

// PrimarySelector selects the pod labelled primary.
func PrimarySelector(c *v1alpha1.ValkeyCluster) map[string]string {
	l := SelectorLabels(c)
	l[v1alpha1.LabelRole] = v1alpha1.RolePrimary
	return l
}

// OwnerReference makes the cluster the controller of an object.
func OwnerReference(c *v1alpha1.ValkeyCluster) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{
		APIVersion:         v1alpha1.GroupVersion.String(),
		Kind:               "ValkeyCluster",
		Name:               c.Name,
		UID:                c.UID,
		Controller:         &t,
		BlockOwnerDeletion: &t,
	}
}

func objectMeta(c *v1alpha1.ValkeyCluster, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       c.Namespace,
		Labels:          Labels(c),
		OwnerReferences: []metav1.OwnerReference{OwnerReference(c)},
	}
}

// IsOwnedBy reports whether obj has c as its controller.
func IsOwnedBy(obj metav1.Object, c *v1alpha1.ValkeyCluster) bool {
	for _, r := range obj.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller && r.UID == c.UID && r.Kind == "ValkeyCluster" {
			return true
		}
	}
	return false
}

// updateMeta sets the operator's labels and owner reference on an existing
// object's metadata and reports whether anything changed. Other labels, and other
// owner references, are kept.
func updateMeta(c *v1alpha1.ValkeyCluster, m *metav1.ObjectMeta) bool {
	changed := false
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	for k, v := range Labels(c) {
		if m.Labels[k] != v {
			m.Labels[k] = v
			changed = true
		}
	}
	if !IsOwnedBy(m, c) {
		var refs []metav1.OwnerReference
		for _, r := range m.OwnerReferences {
			if r.Controller == nil || !*r.Controller {
				refs = append(refs, r)
			}
		}
		m.OwnerReferences = append(refs, OwnerReference(c))
		changed = true
	}
	return changed
}

// hashOf fingerprints a value by its JSON encoding.
func hashOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("resources: hash: %v", err)) // API types always marshal
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	return maps.Clone(m)
}

func joinKeys(m map[string]string) string { return strings.Join(slices.Sorted(maps.Keys(m)), ",") }
