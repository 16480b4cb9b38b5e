package campaign

import (
	"context"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/replay"
)

// The convergence rule is package replay's (replay.WaitConverged); a
// campaign configures it with ConvergeOptions.

// ErrConvergenceTimeout is replay.ErrConvergenceTimeout: the operator did not settle.
var ErrConvergenceTimeout = replay.ErrConvergenceTimeout

// ErrStuck is replay.ErrStuck: no progress towards readiness for the stuck window.
var ErrStuck = replay.ErrStuck

// ConvergeOptions tune convergence detection (see replay.ConvergeOptions).
type ConvergeOptions replay.ConvergeOptions

func (o ConvergeOptions) withDefaults() ConvergeOptions {
	return ConvergeOptions(replay.ConvergeOptions(o).WithDefaults())
}

type quietTracker = replay.QuietTracker

// waitConverged is replay.WaitConverged with a campaign's options.
func waitConverged(ctx context.Context, o ConvergeOptions, q *quietTracker, start time.Time, objects func() (map[string]model.Object, string), operatorDown func() []string, requireGen bool) (time.Time, []string, error) {
	return replay.WaitConverged(ctx, replay.ConvergeOptions(o), q, start, objects, operatorDown, requireGen)
}

func readinessOf(objs map[string]model.Object, cr string, requireGen bool) ([]string, bool) {
	return replay.Readiness(objs, cr, requireGen)
}

func conditionsObservedGeneration(o model.Object) (int64, bool) {
	return replay.ConditionsObservedGeneration(o)
}

func deleting(o model.Object) bool { return replay.Deleting(o) }

func condTrue(o model.Object, typ string) bool { return replay.CondTrue(o, typ) }

func condition(o model.Object, typ string) (status, reason string) { return replay.Condition(o, typ) }

// get walks nested maps (jsonv.At).
func get(o map[string]any, path ...string) any { return jsonv.At(o, path...) }

func num(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		return int64(n), true
	}
	return 0, false
}
