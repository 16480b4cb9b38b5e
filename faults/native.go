package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster"
)

// Native injects faults through a cluster back end that does it itself (the
// embedded cluster: process signals, API deletions and nftables rules in pod
// network namespaces).
type Native struct {
	c cluster.ProcessFaults

	mu      sync.Mutex
	resumes map[string]*time.Timer // PodFailure with a duration
}

// NewNative returns the native back end for c.
func NewNative(c cluster.ProcessFaults) *Native {
	return &Native{c: c, resumes: map[string]*time.Timer{}}
}

// Capabilities lists what the embedded cluster supports: no delay or loss (this
// kernel has no netem queueing discipline).
func (n *Native) Capabilities() []Kind {
	return []Kind{ContainerCrash, PodKill, PodFailure, Partition, APIServerPartition}
}

func (n *Native) refs(ns string, pods []string) []cluster.PodRef {
	out := make([]cluster.PodRef, len(pods))
	for i, p := range pods {
		out[i] = cluster.PodRef{Namespace: ns, Name: p}
	}
	return out
}

// Inject starts the fault.
func (n *Native) Inject(ctx context.Context, s Spec) error {
	if err := s.Validate(); err != nil {
		return err
	}
	var errs []error
	switch s.Kind {
	case ContainerCrash:
		for _, p := range n.refs(s.Namespace, s.Pods) {
			errs = append(errs, n.c.CrashContainer(ctx, p, s.Container))
		}
	case PodKill:
		for _, p := range n.refs(s.Namespace, s.Pods) {
			errs = append(errs, n.c.DeletePod(ctx, p, s.Grace))
		}
	case PodFailure:
		for _, p := range n.refs(s.Namespace, s.Pods) {
			errs = append(errs, n.c.PauseContainer(ctx, p, s.Container))
		}
		if s.Duration > 0 {
			n.mu.Lock()
			n.resumes[s.Name] = time.AfterFunc(s.Duration, func() { _ = n.resume(context.Background(), s) })
			n.mu.Unlock()
		}
	case Partition:
		errs = append(errs, n.c.Partition(ctx, s.Name, n.refs(s.Namespace, s.Pods), n.refs(s.Namespace, s.Peers)))
	case APIServerPartition:
		errs = append(errs, n.c.PartitionFromAPIServer(ctx, s.Name, n.refs(s.Namespace, s.Pods)))
	case Delay, Loss:
		return fmt.Errorf("%w: %s needs the netem queueing discipline, which this kernel does not provide", ErrUnsupported, s.Kind)
	default:
		return fmt.Errorf("%w: unknown fault kind %q", ErrUnsupported, s.Kind)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("faults: inject %s: %w", Describe(s), err)
	}
	return nil
}

// Remove ends a lasting fault.
func (n *Native) Remove(ctx context.Context, s Spec) error {
	switch s.Kind {
	case PodFailure:
		n.mu.Lock()
		if t := n.resumes[s.Name]; t != nil {
			t.Stop()
			delete(n.resumes, s.Name)
		}
		n.mu.Unlock()
		return n.resume(ctx, s)
	case Partition, APIServerPartition:
		if err := n.c.Heal(ctx, s.Name); err != nil {
			return fmt.Errorf("faults: remove %s: %w", Describe(s), err)
		}
	}
	return nil
}

func (n *Native) resume(ctx context.Context, s Spec) error {
	var errs []error
	for _, p := range n.refs(s.Namespace, s.Pods) {
		errs = append(errs, n.c.ResumeContainer(ctx, p, s.Container))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("faults: remove %s: %w", Describe(s), err)
	}
	return nil
}

var _ Injector = (*Native)(nil)
