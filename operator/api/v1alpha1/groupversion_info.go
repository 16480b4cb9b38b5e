// Package v1alpha1 is the valkey.gauntlet.dev/v1alpha1 API of the bundled Valkey
// operator: ValkeyCluster (a primary/replica Valkey set whose failover the operator
// performs itself) and ValkeyBackup (an RDB snapshot of a cluster's primary).
//
// +kubebuilder:object:generate=true
// +groupName=valkey.gauntlet.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of this package.
	GroupVersion = schema.GroupVersion{Group: "valkey.gauntlet.dev", Version: "v1alpha1"}

	// SchemeBuilder registers this package's types in a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
