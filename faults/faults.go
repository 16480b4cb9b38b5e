// Package faults injects and removes faults in a cluster under test. One interface,
// several back ends: Native drives the embedded cluster (cluster/local) directly;
// a Chaos Mesh back end for kind clusters builds chaos-mesh objects (issue 6).
// A fault a back end cannot inject is reported with ErrUnsupported, never skipped.
package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Kind names a fault.
type Kind string

// Fault kinds.
const (
	// ContainerCrash kills a container's process; the restart policy applies.
	ContainerCrash Kind = "container-crash"
	// PodKill deletes pods (Spec.Grace 0 kills them at once).
	PodKill Kind = "pod-kill"
	// PodFailure freezes a container (SIGSTOP) until removed or Spec.Duration passes.
	PodFailure Kind = "pod-failure"
	// Partition drops all traffic between Spec.Pods and Spec.Peers until removed.
	Partition Kind = "partition"
	// APIServerPartition cuts Spec.Pods off from the API server until removed.
	APIServerPartition Kind = "apiserver-partition"
	// Delay adds Spec.Latency (± Spec.Jitter) to what Spec.Pods send, only to
	// Spec.Peers when Peers are given (needs netem).
	Delay Kind = "delay"
	// Loss drops Spec.LossPercent of the packets Spec.Pods send, only of those to
	// Spec.Peers when Peers are given (needs netem).
	Loss Kind = "loss"
)

// ErrUnsupported is returned for a fault the back end cannot inject here.
var ErrUnsupported = errors.New("fault not supported by this back end")

// ErrInvalid is returned for a Spec that names no target or misses a field its kind needs.
var ErrInvalid = errors.New("invalid fault")

// Spec describes one fault.
type Spec struct {
	Kind Kind `json:"kind"`
	// Name identifies the fault for Remove (partitions are healed by name).
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Pods are the targets; Container selects one container (default: the pod's first).
	Pods      []string `json:"pods"`
	Container string   `json:"container,omitempty"`
	// Peers are the other side of a Partition (and, optionally, of a Delay or Loss).
	Peers []string `json:"peers,omitempty"`
	// Grace is PodKill's grace period in seconds (nil: the pod's own).
	Grace *int64 `json:"grace,omitempty"`
	// Duration bounds PodFailure (0: until Remove). The Chaos Mesh back end also
	// bounds Partition, APIServerPartition, Delay and Loss with it.
	Duration time.Duration `json:"duration,omitempty"`
	// Latency is Delay's added delay; Jitter its random variation (0: none).
	Latency time.Duration `json:"latency,omitempty"`
	Jitter  time.Duration `json:"jitter,omitempty"`
	// LossPercent is Loss's share of dropped packets, in (0, 100].
	LossPercent float64 `json:"lossPercent,omitempty"`
}

// Validate checks that the spec names what its kind needs.
func (s Spec) Validate() error {
	if s.Name == "" || s.Namespace == "" || len(s.Pods) == 0 {
		return fmt.Errorf("%w: %s needs a name, a namespace and at least one pod", ErrInvalid, s.Kind)
	}
	if s.Kind == Partition && len(s.Peers) == 0 {
		return fmt.Errorf("%w: partition %q needs peers (the other side)", ErrInvalid, s.Name)
	}
	if s.Kind == Partition {
		for _, p := range s.Pods {
			if slices.Contains(s.Peers, p) {
				return fmt.Errorf("%w: partition %q has pod %s on both sides", ErrInvalid, s.Name, p)
			}
		}
	}
	return nil
}

// Describe is a one-line human description of the fault.
func Describe(s Spec) string {
	target := s.Namespace + "/" + strings.Join(s.Pods, ",")
	if s.Container != "" {
		target += " container " + s.Container
	}
	switch s.Kind {
	case Partition:
		return fmt.Sprintf("partition %s: %s from %s", s.Name, target, strings.Join(s.Peers, ","))
	case APIServerPartition:
		return fmt.Sprintf("partition %s: %s from the API server", s.Name, target)
	case PodKill:
		if s.Grace != nil {
			return fmt.Sprintf("pod-kill %s (grace %ds)", target, *s.Grace)
		}
		return "pod-kill " + target
	case PodFailure:
		if s.Duration > 0 {
			return fmt.Sprintf("pod-failure %s for %v", target, s.Duration)
		}
		return "pod-failure " + target
	default:
		return string(s.Kind) + " " + target
	}
}

// Injector is one back end.
type Injector interface {
	// Capabilities lists the kinds this back end can inject.
	Capabilities() []Kind
	// Inject starts the fault. Transient kinds (crash, kill) are over when it returns.
	Inject(ctx context.Context, s Spec) error
	// Remove ends a lasting fault (partition, pod failure); a no-op for transient kinds.
	Remove(ctx context.Context, s Spec) error
}

// Supports reports whether inj can inject kind.
func Supports(inj Injector, kind Kind) bool { return slices.Contains(inj.Capabilities(), kind) }
