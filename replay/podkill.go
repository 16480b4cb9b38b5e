package replay

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gauntlet-dev/gauntlet/faults"
)

// APIFaults injects what any cluster's API offers: pod kills (a pod deleted
// with Spec.Grace). It is the fault back end of a replay on a cluster with no
// other (no embedded cluster's process control, no Chaos Mesh); every other
// kind is faults.ErrUnsupported.
type APIFaults struct{ cs kubernetes.Interface }

// NewAPIFaults returns the API's fault back end for the cluster cs reaches.
func NewAPIFaults(cs kubernetes.Interface) *APIFaults { return &APIFaults{cs: cs} }

// Capabilities is pod kill alone.
func (a *APIFaults) Capabilities() []faults.Kind { return []faults.Kind{faults.PodKill} }

// Inject deletes the spec's pods.
func (a *APIFaults) Inject(ctx context.Context, s faults.Spec) error {
	if s.Kind != faults.PodKill {
		return fmt.Errorf("%w: %s needs the embedded cluster or Chaos Mesh", faults.ErrUnsupported, s.Kind)
	}
	if err := s.Validate(); err != nil {
		return err
	}
	for _, p := range s.Pods {
		err := a.cs.CoreV1().Pods(s.Namespace).Delete(ctx, p, metav1.DeleteOptions{GracePeriodSeconds: s.Grace})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod-kill %s/%s: %w", s.Namespace, p, err)
		}
	}
	return nil
}

// Remove does nothing: a pod kill is over once injected.
func (a *APIFaults) Remove(context.Context, faults.Spec) error { return nil }
