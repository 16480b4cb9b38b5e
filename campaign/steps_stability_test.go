package campaign

import (
	"context"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/replay"
)

// TestStabilityFromSnapshot: the stability window runs from the moment the
// snapshot read the objects, so the time spent reading events, logs, monitors
// and the workload's read-back after it counts towards the window instead of
// being added to it; the sample is still taken no earlier than the window's
// end.
func TestStabilityFromSnapshot(t *testing.T) {
	inBubble(func(t *testing.T) {
		r := &runner{cfg: Config{Stability: 2 * time.Second}.withDefaults()}
		s := &session{r: r, watch: &nsWatch{q: replay.NewQuietTracker(time.Now())}}
		from := time.Now()
		time.Sleep(700 * time.Millisecond) // the snapshot's reads after the objects
		smp := s.stability(context.Background(), from)
		if got := time.Since(from); got != 2*time.Second {
			t.Errorf("the stability sample came %s after the snapshot, want the window (2s)", got)
		}
		if smp == nil || smp.Taken.Before(from.Add(2*time.Second)) {
			t.Errorf("sample %+v taken before the window's end", smp)
		}
	})(t)
}
