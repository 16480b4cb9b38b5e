package campaign

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/view"
)

// Campaign fault kinds of the operator's view (package view): the proxy
// between the operator and the API server lags, withholds or crashes after a
// write while the next desired state is declared.
const (
	FaultStaleRead       = string(model.FaultStaleRead)
	FaultMissedEvent     = string(model.FaultMissedEvent)
	FaultCrashAfterWrite = string(model.FaultCrashAfterWrite)
)

// viewKind reports whether a campaign fault kind perturbs the operator's view.
func viewKind(kind string) bool { return model.FaultKind(kind).View() }

// errNoView is why a view fault cannot be injected without a proxy.
var errNoView = errors.New("faults of the operator's view need the view proxy: run with --operator-view (campaign.Config.OperatorView) on the embedded cluster (--backend local)")

// supportedView is why view fault kind k cannot be injected ("" when it can):
// the deployment must have put a proxy in front of an in-cluster operator.
func supportedView(k string, viewOn, outOfCluster bool) string {
	switch {
	case outOfCluster:
		return k + ": the operator runs out of cluster (target operator.command), where no view proxy reaches it"
	case !viewOn:
		return k + ": " + errNoView.Error()
	}
	return ""
}

// planView completes a drawn fault of the operator's view: it hits the
// operator and holds while the next desired state is declared (Sieve perturbs
// the reconcile of a change), aimed by the seeded source: a stale read lags
// 2–6 s, a missed event withholds deletes or status-only updates, a crash
// strikes after the operator's first to third write. A plan that has a target
// (derived from a reference step) keeps it.
func planView(rng *rand.Rand, p *FaultPlan) {
	p.Role, p.Persistent = "operator", true
	if p.View != nil {
		return
	}
	t := &view.FaultTarget{}
	switch p.Kind {
	case FaultStaleRead:
		t.Lag = time.Duration(2000+rng.IntN(4000)) * time.Millisecond
	case FaultMissedEvent:
		if rng.Float64() < 0.4 {
			t.StatusOnly = true
		} else {
			t.Type = "DELETED"
		}
	case FaultCrashAfterWrite:
		t.N = 1 + rng.IntN(3)
	}
	p.View = t
}

// injectView sets the proxy's rules for fault p, narrowed to the session's
// namespace (a lag is the whole view's: with workers sharing a cluster it
// holds back their operator's view too).
func (s *session) injectView(_ context.Context, p FaultPlan) (*activeFault, error) {
	px := s.env.kube.view
	if px == nil {
		return nil, errNoView
	}
	var t view.FaultTarget
	if p.View != nil {
		t = *p.View
	}
	t.Namespace = s.ns
	rules, err := view.RulesFor(model.FaultKind(p.Kind), t)
	if err != nil {
		return nil, err
	}
	if p.Kind == FaultCrashAfterWrite {
		s.env.operatorFaulted.Store(true)
	}
	px.SetRules(rules)
	af := &activeFault{Lasting: true, Rec: model.Fault{Kind: p.Kind, Targets: []string{t.String(model.FaultKind(p.Kind))},
		Persistent: p.Persistent, Injected: time.Now().UTC()}}
	return af, nil
}

// healView lifts the proxy's rules and has every watch that withheld an
// event re-list (view.Proxy.Resync), so the operator sees the current state;
// the fault's record says what the proxy did while it held.
func (s *session) healView(_ context.Context, af *activeFault) error {
	px := s.env.kube.view
	if px == nil {
		return errNoView
	}
	eff := px.Effects()
	px.SetRules(view.Rules{})
	if n := px.Resync(); n > 0 {
		eff["resynced watches"] = n
	}
	af.Rec.Removed = time.Now().UTC()
	af.Rec.Effect = effectSummary(af.Rec.Kind, eff)
	s.actionDone()
	return nil
}

// effectSummary renders what the proxy did while a view fault held; a fault
// that changed nothing says so (a crash whose write never came).
func effectSummary(kind string, eff map[string]int) string {
	if len(eff) == 0 {
		if kind == FaultCrashAfterWrite {
			return "did not fire: the operator made no matching write while it held"
		}
		return "nothing perturbed: no matching read or event while it held"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(eff)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, eff[k]))
	}
	return strings.Join(parts, ", ")
}

// ViewFaultKinds are the campaign fault kinds of the operator's view.
var ViewFaultKinds = []string{FaultStaleRead, FaultMissedEvent, FaultCrashAfterWrite}

// ParseFaultKindsView is ParseFaultKinds for a campaign with the view proxy
// on or off (viewOn: Config.OperatorView): the view's kinds are refused
// without it, and "all" includes them with it.
func ParseFaultKindsView(v []string, viewOn bool) ([]string, bool, error) {
	kinds, on, err := ParseFaultKinds(v)
	if err != nil || !on {
		return kinds, on, err
	}
	if err := CheckViewFaults(kinds, viewOn); err != nil {
		return nil, false, err
	}
	if viewOn && len(v) == 1 && v[0] == "all" {
		kinds = append(kinds, ViewFaultKinds...)
	}
	return kinds, on, nil
}

// CheckViewFaults refuses fault kinds of the operator's view without the view
// proxy (viewOn: Config.OperatorView), naming the flag that turns it on.
func CheckViewFaults(kinds []string, viewOn bool) error {
	if viewOn {
		return nil
	}
	for _, k := range kinds {
		if viewKind(k) {
			return fmt.Errorf("fault kind %s perturbs the operator's view: add --operator-view (the embedded cluster only)", k)
		}
	}
	return nil
}

// needsView reports whether a reproducer's steps inject a fault of the
// operator's view (its replay then puts the proxy in front of the operator).
func needsView(steps []ReproStep) bool {
	for _, s := range steps {
		for p := s.Fault; p != nil; p = p.Then {
			if viewKind(p.Kind) {
				return true
			}
		}
	}
	return false
}
