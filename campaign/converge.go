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

// get walks nested maps (jsonv.At).
func get(o map[string]any, path ...string) any { return jsonv.At(o, path...) }
