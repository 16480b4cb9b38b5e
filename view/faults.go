package view

import (
	"fmt"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// FaultTarget says what a fault of the operator's view aims at; the zero value
// is each kind's default.
type FaultTarget struct {
	// Lag is how far behind a stale-read view is (default 5s).
	Lag time.Duration `json:"lag,omitempty"`
	// Group and Resource name the API resource that lags, whose events are
	// missed or whose write is crashed after (""; every resource).
	Group    string `json:"group,omitempty"`
	Resource string `json:"resource,omitempty"`
	// Type is the missed event's type (default DELETED); StatusOnly misses
	// status-only updates instead.
	Type       string `json:"type,omitempty"`
	StatusOnly bool   `json:"statusOnly,omitempty"`
	// Verb is the write crashed after ("": any write); Subresource narrows it
	// ("status"); N counts matching writes (default 1).
	Verb        string `json:"verb,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	N           int    `json:"n,omitempty"`
	// Namespace narrows events and writes to one namespace.
	Namespace string `json:"namespace,omitempty"`
}

// String says what a fault of kind aimed at t does, for records.
func (t FaultTarget) String(kind model.FaultKind) string {
	r, err := RulesFor(kind, t)
	if err != nil {
		return err.Error()
	}
	switch {
	case r.Lag > 0 && len(r.LagOnly) > 0:
		return "operator view of " + r.LagOnly[0].String() + " lagging " + r.Lag.String()
	case r.Lag > 0:
		return "operator view lagging " + r.Lag.String()
	case len(r.Withhold) > 0:
		return "operator misses watch events " + r.Withhold[0].String()
	case r.CrashAfter != nil:
		return "operator crashes after its " + r.CrashAfter.String()
	}
	return "operator view unperturbed"
}

// RulesFor is what the proxy does for a fault of the operator's view: a
// stale-read lags reads and watch events, a missed-event withholds the chosen
// events, a crash-after-write cuts and restarts the operator after the chosen
// write. Any other kind is an error.
func RulesFor(kind model.FaultKind, t FaultTarget) (Rules, error) {
	switch kind {
	case model.FaultStaleRead:
		lag := t.Lag
		if lag <= 0 {
			lag = 5 * time.Second
		}
		r := Rules{Lag: lag}
		if t.Resource != "" {
			r.LagOnly = []Resource{{Group: t.Group, Resource: t.Resource}}
		}
		return r, nil
	case model.FaultMissedEvent:
		m := EventMatch{Group: t.Group, Resource: t.Resource, Namespace: t.Namespace, Type: t.Type, StatusOnly: t.StatusOnly}
		if m.Type == "" && !m.StatusOnly {
			m.Type = "DELETED"
		}
		return Rules{Withhold: []EventMatch{m}}, nil
	case model.FaultCrashAfterWrite:
		return Rules{CrashAfter: &WriteMatch{Verb: t.Verb, Group: t.Group, Resource: t.Resource, Subresource: t.Subresource, Namespace: t.Namespace, N: max(t.N, 1)}}, nil
	}
	return Rules{}, fmt.Errorf("view: %q is not a fault of the operator's view (those are %v)", kind, model.ViewFaultKinds())
}
