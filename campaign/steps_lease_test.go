package campaign

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gauntlet-dev/gauntlet/replay"
)

// TestDeclareKeepsLeader: a declared desired state whose operator kept its
// leader Lease through the apply (acquired before it, renewed since) is judged
// at the end of its quiet window, not after a second one; an operator that
// acquired its Lease after the apply (restarted), and every step with a fault
// on the operator, still wait the quiet window again once the Lease shows it
// leading.
func TestDeclareKeepsLeader(t *testing.T) {
	const ns = "op"
	cases := []struct {
		name     string
		acquired time.Duration // relative to the apply
		kept     bool          // a declared state (not an operator fault)
		again    bool          // the quiet window is waited again
	}{
		{"same leader, declared state", -time.Minute, true, false},
		{"leader acquired after the apply", 2 * time.Second, true, true},
		{"same leader, after an operator fault", -time.Minute, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, inBubble(func(t *testing.T) {
			since := time.Now()
			cs := fake.NewClientset()
			c := since.Add(2 * time.Second) // the last change; the quiet window ended 3 s later
			time.Sleep(5 * time.Second)
			end := time.Now()
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "leader", Namespace: ns},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("op-1"),
					AcquireTime: &metav1.MicroTime{Time: since.Add(tc.acquired)},
					RenewTime:   &metav1.MicroTime{Time: since.Add(4 * time.Second)}}}
			if _, err := cs.CoordinationV1().Leases(ns).Create(context.Background(), l, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			opts := ConvergeOptions{Quiet: 3 * time.Second, Timeout: time.Minute}
			r := &runner{cfg: Config{Converge: opts}.withDefaults(), publishesGen: new(atomic.Bool)}
			r.publishesGen.Store(true)
			s := &session{r: r, env: &env{kube: &kube{cs: cs, opNS: ns}}, watch: &nsWatch{q: replay.NewQuietTracker(since)}}
			got, _, err := s.operatorBack(context.Background(), nil, since, c, nil, tc.kept)
			if err != nil {
				t.Fatal(err)
			}
			waited := time.Since(end)
			if !tc.again && (waited != 0 || !got.Equal(c)) {
				t.Errorf("waited %s more and converged at +%s: the quiet window was waited again though the leader was kept", waited, got.Sub(since))
			}
			if tc.again && waited < opts.Quiet {
				t.Errorf("waited %s more, want the quiet window (%s) again", waited, opts.Quiet)
			}
		}))
	}
}

// TestLeadersKept: the Leases renewed after the apply say the leaders were
// kept only when each was acquired no later than it.
func TestLeadersKept(t *testing.T) {
	since := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	lease := func(acquired, renewed int) coordinationv1.Lease {
		var l coordinationv1.Lease
		if acquired >= 0 {
			l.Spec.AcquireTime = &metav1.MicroTime{Time: since.Add(time.Duration(acquired-10) * time.Second)}
		}
		l.Spec.RenewTime = &metav1.MicroTime{Time: since.Add(time.Duration(renewed-10) * time.Second)}
		return l
	}
	cases := []struct {
		name          string
		leases        []coordinationv1.Lease
		renewed, held bool
	}{
		{"none", nil, false, false},
		{"not renewed since", []coordinationv1.Lease{lease(1, 9)}, false, false},
		{"held through", []coordinationv1.Lease{lease(1, 12)}, true, true},
		{"acquired at the apply", []coordinationv1.Lease{lease(10, 12)}, true, false},
		{"acquired within the margin before", []coordinationv1.Lease{lease(9, 12)}, true, false},
		{"acquired after", []coordinationv1.Lease{lease(11, 12)}, true, false},
		{"no acquire time", []coordinationv1.Lease{lease(-1, 12)}, true, false},
		{"one of two restarted", []coordinationv1.Lease{lease(1, 12), lease(11, 12)}, true, false},
		{"a stale one beside a kept one", []coordinationv1.Lease{lease(1, 9), lease(1, 12)}, true, true},
	}
	for _, tc := range cases {
		renewed, held := leadersKept(tc.leases, since)
		if renewed != tc.renewed || held != tc.held {
			t.Errorf("%s: renewed %v held %v, want %v %v", tc.name, renewed, held, tc.renewed, tc.held)
		}
	}
}
