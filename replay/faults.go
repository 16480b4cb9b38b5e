package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gauntlet-dev/gauntlet/faults"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/view"
)

// Fault kinds a campaign injects and a replay re-injects (what
// FaultPlan.Kind names): model's vocabulary (model.FaultKind), as strings.
const (
	FaultContainerCrash    = string(model.FaultContainerCrash)
	FaultPodKill           = string(model.FaultPodKill)
	FaultPodFailure        = string(model.FaultPodFailure)
	FaultPartition         = string(model.FaultPartition)
	FaultOperatorCrash     = string(model.FaultOperatorCrash)
	FaultOperatorPartition = string(model.FaultOperatorPartition)
)

// FaultKinds are every fault kind, in the order a campaign draws them by default.
var FaultKinds = []string{FaultContainerCrash, FaultPodKill, FaultPodFailure, FaultPartition, FaultOperatorCrash, FaultOperatorPartition}

// RoleOperator is FaultPlan.Role for a fault that hits the operator's pods.
const RoleOperator = "operator"

// BackendKind maps a fault kind to the injector's (package faults).
func BackendKind(kind string) (faults.Kind, bool) {
	switch kind {
	case FaultContainerCrash, FaultOperatorCrash:
		return faults.ContainerCrash, true
	case FaultPodKill:
		return faults.PodKill, true
	case FaultPodFailure:
		return faults.PodFailure, true
	case FaultPartition:
		return faults.Partition, true
	case FaultOperatorPartition:
		return faults.APIServerPartition, true
	}
	return "", false
}

// Lasting reports whether a fault kind holds until removed (it can be held
// while a new desired state is declared).
func Lasting(kind string) bool { return model.FaultKind(kind).Lasting() }

// FaultPlan is one fault drawn by a campaign's seeded source; the journal
// records it and replays re-inject it, targeted on the live system.
type FaultPlan struct {
	Kind string `json:"kind"`
	// Role is whom it hits: "primary", "replica", "pod" (no system monitor) or "operator".
	Role string `json:"role"`
	// Pick chooses among several candidates (modulo their number), so a replay hits the same one.
	Pick int `json:"pick"`
	// Persistent faults hold while the next desired state is declared.
	Persistent bool `json:"persistent,omitempty"`
	// Delay is, for operator crashes, how long after the desired state is declared it strikes.
	Delay time.Duration `json:"delay,omitempty"`
	// Hold is how long a lasting fault holds.
	Hold time.Duration `json:"hold,omitempty"`
	// Then is a second fault injected After the first while it holds (fault steps only):
	// compound failures such as a primary crash while a replica lags behind a partition.
	Then  *FaultPlan    `json:"then,omitempty"`
	After time.Duration `json:"after,omitempty"`
	// View aims a fault of the operator's view (model.FaultKind.View): what
	// lags, which events are missed, which write is crashed after.
	View *view.FaultTarget `json:"view,omitempty"`
}

// Validate reports a plan a replay cannot inject: an unknown kind or a
// missing role (and the same of Then).
func (p FaultPlan) Validate() error {
	if _, ok := BackendKind(p.Kind); !ok && !model.FaultKind(p.Kind).View() {
		return fmt.Errorf("unknown fault kind %q (known: %v and %v)", p.Kind, FaultKinds, model.ViewFaultKinds())
	}
	if p.Role == "" {
		return fmt.Errorf("fault %s names no role (primary, replica, pod or operator)", p.Kind)
	}
	if (p.Kind == FaultOperatorCrash || p.Kind == FaultOperatorPartition || model.FaultKind(p.Kind).View()) != (p.Role == RoleOperator) {
		return fmt.Errorf("fault %s with role %q: the operator kinds, and only they, hit the role operator", p.Kind, p.Role)
	}
	if p.Then != nil {
		if err := p.Then.Validate(); err != nil {
			return fmt.Errorf("its second fault: %w", err)
		}
	}
	return nil
}

// Kinds lists the kinds p injects (its own and its second fault's).
func (p FaultPlan) Kinds() []string {
	out := []string{p.Kind}
	if p.Then != nil && !slices.Contains(out, p.Then.Kind) {
		out = append(out, p.Then.Kind)
	}
	return out
}

// PodPicker chooses the system pod a plan that does not hit the operator
// targets, and the other pods of the system (a partition's other side).
type PodPicker func(ctx context.Context, p FaultPlan) (pod string, peers []string, err error)

// FaultSpec resolves p on the live system into the injector's spec, named
// name: the operator's pod p.Pick chooses for the role operator (SetOperator
// says where they are), else the pod pick chooses; in namespace ns.
func (k *Kube) FaultSpec(ctx context.Context, p FaultPlan, ns, name string, pick PodPicker) (faults.Spec, error) {
	bk, ok := BackendKind(p.Kind)
	if !ok {
		return faults.Spec{}, fmt.Errorf("unknown fault kind %q (known: %v)", p.Kind, FaultKinds)
	}
	spec := faults.Spec{Kind: bk, Name: name, Namespace: ns}
	switch p.Role {
	case RoleOperator:
		pods, err := k.OperatorPods(ctx)
		if err != nil {
			return faults.Spec{}, err
		}
		spec.Namespace, spec.Pods = k.opNS, []string{pods[p.Pick%len(pods)]}
	default:
		pod, peers, err := pick(ctx, p)
		if err != nil {
			return faults.Spec{}, err
		}
		spec.Pods, spec.Peers = []string{pod}, peers
	}
	if p.Kind == FaultPodKill {
		zero := int64(0)
		spec.Grace = &zero
	}
	return spec, nil
}

// ActiveFault is an injected fault and how to end it.
type ActiveFault struct {
	// Rec is the fault as a step records it.
	Rec  model.Fault
	Spec faults.Spec
	// Lasting faults hold until Heal removes them.
	Lasting bool
}

// Inject starts the fault spec (resolved from p by FaultSpec) with inj. A
// kind the back end cannot inject is no error: the returned fault records
// why (model.Fault.Unsupported) and Heal does nothing for it.
func Inject(ctx context.Context, inj faults.Injector, p FaultPlan, spec faults.Spec) (*ActiveFault, error) {
	af := &ActiveFault{Spec: spec, Lasting: Lasting(p.Kind),
		Rec: model.Fault{Kind: p.Kind, Targets: []string{p.Role + " " + spec.Namespace + "/" + spec.Pods[0]}, Persistent: p.Persistent}}
	af.Rec.Injected = time.Now().UTC()
	if err := inj.Inject(ctx, spec); err != nil {
		if errors.Is(err, faults.ErrUnsupported) {
			af.Rec.Unsupported = err.Error()
			return af, nil
		}
		return nil, err
	}
	return af, nil
}

// Heal removes a lasting fault (nothing for a transient or unsupported one),
// even when ctx has ended, and records when.
func Heal(ctx context.Context, inj faults.Injector, af *ActiveFault) error {
	if af == nil || !af.Lasting || af.Rec.Unsupported != "" {
		return nil
	}
	err := inj.Remove(context.WithoutCancel(ctx), af.Spec)
	af.Rec.Removed = time.Now().UTC()
	return err
}
