package campaign

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/faults"
	"github.com/gauntlet-dev/gauntlet/model"
)

// slowRemover is an injector whose Remove takes a while (a partition healed
// while the API server is slow).
type slowRemover struct{ took time.Duration }

func (slowRemover) Capabilities() []faults.Kind                 { return []faults.Kind{faults.PodFailure} }
func (slowRemover) Inject(context.Context, faults.Spec) error   { return nil }
func (r slowRemover) Remove(context.Context, faults.Spec) error { time.Sleep(r.took); return nil }

// TestQuietFromLastAction: the quiet window of a step starts when the
// harness's own last action ended, never before it. CloudNativePG seed 1: the
// apply was retried for 3.2 s while the operator's webhook came back after a
// crash; nothing had changed since the step began, so the 3 s window had
// "passed" when the apply returned and the step converged at once, before the
// operator saw the change (the stability oracle then saw it roll the pod).
// The same holds for a heal that returns late.
func TestQuietFromLastAction(t *testing.T) {
	cr := model.ObjectKey{Group: "g", Version: "v1", Kind: "Foo", Namespace: "n", Name: "a"}.String()
	objs := map[string]model.Object{cr: {"metadata": map[string]any{"generation": int64(2)}}}
	opts := ConvergeOptions{Quiet: 3 * time.Second, Settle: 30 * time.Second, Timeout: time.Minute}
	cases := []struct {
		name string
		act  func(s *session)
	}{
		{"an apply that returned late", func(s *session) { time.Sleep(3200 * time.Millisecond); s.actionDone() }},
		{"a heal that returned late", func(s *session) {
			s.env.inj = slowRemover{took: 3200 * time.Millisecond}
			af := &activeFault{remove: true, spec: faults.Spec{Kind: faults.PodFailure}}
			if err := s.heal(context.Background(), af); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, inBubble(func(t *testing.T) {
			start := time.Now()
			s := &session{r: &runner{cfg: Config{}.withDefaults()}, env: &env{}, watch: &nsWatch{q: newQuietTracker(start)}}
			tc.act(s)
			acted := time.Now()
			at, _, err := waitConverged(context.Background(), opts, s.watch.q, start, func() (map[string]model.Object, string) { return objs, cr }, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			if at.Before(acted) {
				t.Errorf("converged at +%s, before the action ended at +%s", at.Sub(start), acted.Sub(start))
			}
			if waited := time.Since(acted); waited < opts.Quiet {
				t.Errorf("declared converged %s after the action, before the %s quiet window", waited, opts.Quiet)
			}
		}))
	}
}

// TestQuietUnobserved: while the CR's status has never reported the generation
// the operator saw (CloudNativePG's Cluster), a step waits the longer quiet
// window: CloudNativePG rolled a pod 3–5 s after a change, after the 3 s window
// had declared convergence (seed 2: stability alarms on s15, s25). Once the
// campaign has seen the CR report it, the short window applies.
func TestQuietUnobserved(t *testing.T) {
	for _, publishes := range []bool{false, true} {
		t.Run(map[bool]string{false: "no generation evidence", true: "generation published"}[publishes], inBubble(func(t *testing.T) {
			start := time.Now()
			r := &runner{cfg: Config{Converge: ConvergeOptions{Quiet: 3 * time.Second, QuietUnobserved: 10 * time.Second}}.withDefaults(), publishesGen: new(atomic.Bool)}
			r.publishesGen.Store(publishes)
			s := &session{r: r, env: &env{kube: &kube{}}, watch: &nsWatch{q: newQuietTracker(start)}}
			at, _, err := s.wait(context.Background(), start)
			if err != nil {
				t.Fatal(err)
			}
			want := 10 * time.Second
			if publishes {
				want = 3 * time.Second
			}
			if got := time.Since(start); got != want {
				t.Errorf("converged after %s of quiet, want %s", got, want)
			}
			if !at.Equal(start) {
				t.Errorf("converged at +%s, want the last change (the start)", at.Sub(start))
			}
		}))
	}
}
