package campaign

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gauntlet-dev/gauntlet/faults"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/replay"
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
			af := &activeFault{Lasting: true, Spec: faults.Spec{Kind: faults.PodFailure}}
			if err := s.heal(context.Background(), af); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, inBubble(func(t *testing.T) {
			start := time.Now()
			s := &session{r: &runner{cfg: Config{}.withDefaults()}, env: &env{}, watch: &nsWatch{q: replay.NewQuietTracker(start)}}
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
			s := &session{r: r, env: &env{kube: &kube{}}, watch: &nsWatch{q: replay.NewQuietTracker(start)}}
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

// TestAfterOperatorBack: after an operator fault, a step is not converged
// until the operator's leader Lease is renewed after the fault ended
// (CloudNativePG seed 1: after a healed partition its requests stayed hung
// until it lost its lease and restarted, and five steps were judged before it
// had seen the change). No Lease: nothing to wait for. A Lease never renewed:
// a warning, and the step is judged as it is.
func TestAfterOperatorBack(t *testing.T) {
	const ns = "op"
	lease := func(renewed time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "leader", Namespace: ns},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("op-1"), RenewTime: &metav1.MicroTime{Time: renewed}}}
	}
	cases := []struct {
		name      string
		renewedIn time.Duration // after the fault ended; <0: never (only before it); 0: no Lease
		wantAfter time.Duration // the step converges no earlier than this after the fault
		warn      bool
	}{
		{"no lease", 0, 0, false},
		{"renewed 20 s later", 20 * time.Second, 20*time.Second + 10*time.Second, false},
		{"never renewed", -1, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, inBubble(func(t *testing.T) {
			since := time.Now()
			cs := fake.NewClientset()
			if tc.renewedIn != 0 {
				if _, err := cs.CoordinationV1().Leases(ns).Create(context.Background(), lease(since.Add(-time.Second)), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.renewedIn > 0 {
				go func() {
					time.Sleep(tc.renewedIn)
					if _, err := cs.CoordinationV1().Leases(ns).Update(context.Background(), lease(time.Now()), metav1.UpdateOptions{}); err != nil {
						t.Error(err)
					}
				}()
			}
			r := &runner{cfg: Config{Converge: ConvergeOptions{Timeout: time.Minute}}.withDefaults(), publishesGen: new(atomic.Bool)}
			s := &session{r: r, env: &env{kube: &kube{cs: cs, opNS: ns}}, watch: &nsWatch{q: replay.NewQuietTracker(since)}}
			rec := &StepRecord{}
			c, _, err := s.afterOperatorBack(context.Background(), rec, since, since, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Sub(since); got < tc.renewedIn {
				t.Errorf("converged %s after the fault, before the lease was renewed (%s)", got, tc.renewedIn)
			}
			if tc.wantAfter > 0 && time.Since(since) < tc.wantAfter {
				t.Errorf("returned %s after the fault, want the quiet window after the renewal (%s)", time.Since(since), tc.wantAfter)
			}
			if tc.renewedIn == 0 && time.Since(since) != 0 {
				t.Errorf("without a lease it waited %s", time.Since(since))
			}
			if warned := len(rec.Findings) == 1 && strings.Contains(rec.Findings[0].Summary, "did not renew its leader lease"); warned != tc.warn {
				t.Errorf("warning %v, want %v: %+v", warned, tc.warn, rec.Findings)
			}
		}))
	}
}

func ptr[T any](v T) *T { return &v }

// inBubble runs f in a synctest bubble (fake time).
func inBubble(f func(t *testing.T)) func(t *testing.T) {
	return func(t *testing.T) { synctest.Test(t, f) }
}
