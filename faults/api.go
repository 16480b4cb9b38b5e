package faults

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// API injects the faults the Kubernetes API itself offers on any cluster: pod
// kill (a deletion with grace period 0) and pod delete (with Spec.Grace, or the
// pod's own). It is the back end of a cluster Gauntlet did not make when no
// chaos tool is installed there; every other kind is ErrUnsupported, naming the fix.
type API struct {
	cs kubernetes.Interface
}

// NewAPI returns the API back end that acts through cs.
func NewAPI(cs kubernetes.Interface) *API { return &API{cs: cs} }

// Capabilities lists pod kill (and delete) only.
func (a *API) Capabilities() []Kind { return []Kind{PodKill} }

// Inject deletes the spec's pods (PodKill); other kinds are ErrUnsupported.
func (a *API) Inject(ctx context.Context, s Spec) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Kind != PodKill {
		return fmt.Errorf("%w: %s needs Chaos Mesh, which this cluster does not serve (%s)", ErrUnsupported, s.Kind, ChaosMeshInstallCommand)
	}
	var errs []error
	for _, p := range s.Pods {
		err := a.cs.CoreV1().Pods(s.Namespace).Delete(ctx, p, metav1.DeleteOptions{GracePeriodSeconds: s.Grace})
		if err != nil {
			errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", s.Namespace, p, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("faults: inject %s: %w", Describe(s), err)
	}
	return nil
}

// Remove is a no-op: a pod kill is over when Inject returns.
func (a *API) Remove(context.Context, Spec) error { return nil }

var _ Injector = (*API)(nil)
