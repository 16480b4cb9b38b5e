package replay

import (
	"context"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// TestSettleRefused: a step known to be a misoperation settles once quiet for
// the quiet window when the CR reports its generation observed and Ready
// False for it (the operator's verdict), not after the settle window; without
// the option, with the verdict stale (an older condition generation), with
// Ready True but pods unready, or with the operator down, it waits as before.
func TestSettleRefused(t *testing.T) {
	cr := model.ObjectKey{Group: "g", Version: "v1", Kind: "Foo", Namespace: "n", Name: "a"}.String()
	pod := model.ObjectKey{Version: "v1", Kind: "Pod", Namespace: "n", Name: "a-0"}.String()
	pendingPod := model.Object{"status": map[string]any{"phase": "Pending"}}
	crWith := func(ready string, condGen int64) model.Object {
		cond := map[string]any{"type": "Ready", "status": ready, "reason": "SecretMissing"}
		if condGen > 0 {
			cond["observedGeneration"] = condGen
		}
		return model.Object{"metadata": map[string]any{"generation": int64(2)},
			"status": map[string]any{"observedGeneration": int64(2), "conditions": []any{cond}}}
	}
	const quiet, settle = 3 * time.Second, 30 * time.Second
	cases := []struct {
		name    string
		refused bool
		cr      model.Object
		down    []string
		want    time.Duration // when the step settles
	}{
		{"verdict in", true, crWith("False", 2), nil, quiet},
		{"verdict without a condition generation", true, crWith("False", 0), nil, quiet},
		{"not a known misoperation", false, crWith("False", 2), nil, settle},
		{"stale verdict", true, crWith("False", 1), nil, settle},
		{"ready, pods not", true, crWith("True", 2), nil, settle},
		{"operator down", true, crWith("False", 2), []string{"op-0: not ready"}, settle},
	}
	for _, tc := range cases {
		t.Run(tc.name, inBubble(func(t *testing.T) {
			start := time.Now()
			q := NewQuietTracker(start)
			o := ConvergeOptions{Quiet: quiet, Settle: settle, Timeout: time.Minute, Stuck: -1, SettleRefused: tc.refused}
			objs := map[string]model.Object{cr: tc.cr, pod: pendingPod}
			_, notReady, err := WaitConverged(context.Background(), o, q, start, func() (map[string]model.Object, string) { return objs, cr },
				func() []string { return tc.down }, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(notReady) == 0 {
				t.Error("settled with nothing left unready")
			}
			if got := time.Since(start); got < tc.want || got > tc.want+time.Second {
				t.Errorf("settled after %s, want %s", got, tc.want)
			}
		}))
	}
}
