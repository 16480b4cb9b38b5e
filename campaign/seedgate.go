package campaign

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
)

// ErrSeedUnhealthy is the invariant every campaign starts from: the target's
// seed converges healthy on the test cluster. Every test case is a change of
// that state; from a broken one each would only repeat its alarms.
var ErrSeedUnhealthy = errors.New("the seed must converge healthy before any test case runs")

// SeedError says why a worker's seed step failed the seed gate and what to do.
type SeedError struct {
	// Step is the seed step's ID ("w0/s0"); its folder holds the evidence.
	Step string
	// Cause is what went wrong; Fix what the user should change.
	Cause, Fix string
}

// Error states the invariant, the cause and the fix.
func (e *SeedError) Error() string {
	return fmt.Sprintf("%v: step %s: %s; fix: %s", ErrSeedUnhealthy, e.Step, e.Cause, e.Fix)
}

// Unwrap makes errors.Is(err, ErrSeedUnhealthy) true.
func (e *SeedError) Unwrap() error { return ErrSeedUnhealthy }

// seedGate judges a worker's seed step (rec, which reached snap): an operand
// that cannot start (exit 126/127, see cannotStart), a seed the API server
// refused, a seed that did not converge, or one the health oracle finds broken
// stops the campaign with one SeedError instead of a run of alarm groups from
// one cause. Findings of other oracles stay alarms: a seed that converged
// healthy may still show an operator bug. logs reads containers' logs (may be
// nil).
func seedGate(rec *StepRecord, snap *model.Snapshot, logs func(pod, container string, previous bool) string) error {
	if rec == nil || rec.Kind != model.StepSeed {
		return nil
	}
	e := &SeedError{Step: rec.ID()}
	var health []string
	for _, f := range rec.Findings {
		switch {
		case f.Oracle == "apply":
			detail := f.Summary
			if len(f.Evidence) > 0 {
				detail = f.Evidence[0].Detail
			}
			e.Cause = "the API server refused the seed: " + detail
			e.Fix = "correct the target's seed custom resource (`gauntlet run --dry-run` checks it against the CRD)"
			return e
		case f.Severity != model.SeverityWarning && f.Oracle == oracles.NameHealth && breaksSeed(f.Summary):
			health = append(health, f.Summary)
		}
	}
	if why := hostLimited(snap, logs, hostInotifyLimit()); why != "" && (rec.TimedOut || rec.Stuck || len(health) > 0) {
		e.Cause = "the seed converged unhealthy: " + why
		e.Fix = "as root: sysctl -w fs.inotify.max_user_instances=8192 (the embedded cluster raises it when it starts as root)"
		return e
	}
	if why := cannotStart(snap, logs); why != "" {
		e.Cause = "the operand cannot start: " + why
		e.Fix = "make the seed's images run on the test cluster (the target's image rules map each image to a program that exists on this machine); the container logs are in the step's logs folder"
		return e
	}
	switch {
	case rec.TimedOut || rec.Stuck:
		what := "did not converge"
		if rec.Stuck {
			what = "made no progress towards readiness"
		}
		e.Cause = fmt.Sprintf("the seed %s (not ready: %s)", what, orNone(rec.NotReady))
	case len(health) > 0:
		e.Cause = "the seed converged unhealthy: " + strings.Join(limit(health, 3), "; ")
	default:
		return nil
	}
	e.Fix = "make the target's seed a state the operator reaches healthy on the test cluster (images mapped, resources that fit, fixtures it needs); the step folder holds its events, operator log and container logs"
	return e
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "nothing reported"
	}
	return strings.Join(limit(s, 3), "; ")
}

// limit keeps the first n entries, saying how many more there were.
func limit(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
}

// breaksSeed reports whether a health finding of the seed step says the
// system is broken now: not the operator's own trouble (a restart, a panic or
// an error in its log stay alarms: they may be the bug a campaign looks for),
// nor a container that restarted and recovered.
func breaksSeed(summary string) bool {
	switch {
	case strings.HasPrefix(summary, "the operator "), strings.HasPrefix(summary, "operator log:"):
		return false
	case strings.HasPrefix(summary, "container ") && !strings.Contains(summary, "crash-looping"):
		return false
	}
	return true
}
