package oracles

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

func TestRollSafety(t *testing.T) {
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	mem := func(pod, role string, ok bool) model.Member {
		return model.Member{Pod: pod, Reachable: ok, Role: role, LinkUp: role == model.RoleReplica && ok}
	}
	reading := func(ms ...model.Member) model.SystemSample {
		return model.SystemSample{Taken: base, Members: ms}
	}
	synced := reading(mem("v-0", "primary", true), mem("v-1", "replica", true), mem("v-2", "replica", true))
	oneDown := reading(mem("v-0", "primary", true), mem("v-1", "", false), mem("v-2", "replica", true))
	twoDown := reading(mem("v-0", "primary", true), mem("v-1", "", false), mem("v-2", "replica", true))
	twoDown.Members[2].LinkUp = false
	lockedOut := reading(mem("v-0", "", false), mem("v-1", "", false), mem("v-2", "", false))
	for i := range lockedOut.Members {
		lockedOut.Members[i].Error = "authentication failed: the password from spec.auth.passwordSecret does not match the server's"
		lockedOut.Members[i].Unreachable = model.UnreachableAuth
	}
	noCredentials := reading(mem("v-0", "", false), mem("v-1", "", false), mem("v-2", "", false))
	for i := range noCredentials.Members {
		noCredentials.Members[i].Error = "TLS: Secret ns/tls (spec.tls.secretName) does not exist: create it with tls.crt, tls.key and ca.crt"
		noCredentials.Members[i].Unreachable = model.UnreachableNoCredentials
	}
	joined := reading(mem("v-0", "primary", true), mem("v-1", "replica", true), mem("v-2", "", false), mem("v-3", "", false), mem("v-4", "", false))
	cases := []struct {
		name    string
		kind    model.StepKind
		faults  []model.Fault
		samples []model.SystemSample
		want    bool
	}{
		{"one at a time", model.StepApply, nil, []model.SystemSample{synced, oneDown, synced}, false},
		{"two at once", model.StepApply, nil, []model.SystemSample{synced, oneDown, twoDown, synced}, true},
		{"rollback judged too", model.StepRollback, nil, []model.SystemSample{synced, twoDown}, true},
		{"new members are not counted", model.StepApply, nil, []model.SystemSample{synced, joined}, false},
		{"faults excuse it", model.StepApply, []model.Fault{{Kind: "pod-kill"}}, []model.SystemSample{synced, twoDown}, false},
		{"re-creation replaces everything", model.StepRecreate, nil, []model.SystemSample{synced, twoDown}, false},
		{"two servers", model.StepApply, nil, []model.SystemSample{reading(mem("v-0", "primary", true), mem("v-1", "replica", true)), reading(mem("v-0", "", false), mem("v-1", "", false))}, false},
		{"no readings", model.StepApply, nil, nil, false},
		{"a password switch locks the monitor out, not the clients", model.StepApply, nil, []model.SystemSample{synced, lockedOut}, false},
		{"a missing TLS Secret leaves the monitor nothing to dial with", model.StepApply, nil, []model.SystemSample{synced, noCredentials}, false},
	}
	for _, c := range cases {
		tr := &model.Transition{Step: &model.Step{Kind: c.kind, Faults: c.faults}, Samples: c.samples}
		fs := NewRollSafety(Config{}).Check(context.Background(), tr)
		if got := len(fs) > 0; got != c.want {
			t.Errorf("%s: findings %+v, want alarm %v", c.name, fs, c.want)
			continue
		}
		if c.want && (fs[0].Oracle != NameRollSafety || !strings.Contains(fs[0].Summary, "v-1, v-2") || len(fs[0].Evidence) != 2) {
			t.Errorf("%s: finding %+v", c.name, fs[0])
		}
	}
	// A switchover: both replicas re-attach to the new primary at once (links down in one
	// reading, seen on kind), which is by design; a primary restarted under them is not.
	follow := func(r model.SystemSample, at time.Duration, primary string, linked bool) model.SystemSample {
		out := model.SystemSample{Taken: base.Add(at)}
		for _, m := range r.Members {
			m.Role, m.Follows, m.LinkUp, m.Reachable = model.RoleReplica, primary+":6379", linked, true
			if m.Pod == primary {
				m.Role, m.Follows, m.LinkUp = model.RolePrimary, "", false
			}
			out.Members = append(out.Members, m)
		}
		return out
	}
	before := follow(synced, 0, "v-0", true)
	switched := follow(synced, time.Second, "v-1", false) // v-0 and v-2 now follow v-1, links down
	after := follow(synced, 2*time.Second, "v-1", true)
	stuck := follow(synced, 8*time.Second, "v-1", false)
	restarted := follow(synced, time.Second, "v-0", false) // the primary restarted under its replicas
	for _, c := range []struct {
		name    string
		samples []model.SystemSample
		want    bool
	}{
		{"replicas re-attaching after a switchover", []model.SystemSample{before, switched, after}, false},
		{"re-attaching longer than the grace", []model.SystemSample{before, switched, stuck}, true},
		{"replicas of a restarted primary", []model.SystemSample{before, restarted}, true},
	} {
		tr := &model.Transition{Step: &model.Step{Kind: model.StepApply}, Samples: c.samples}
		if fs := NewRollSafety(Config{}).Check(context.Background(), tr); (len(fs) > 0) != c.want {
			t.Errorf("%s: findings %+v, want alarm %v", c.name, fs, c.want)
		}
	}

	// A scale-in removes two servers at once: they are gone at the end.
	scaled := reading(mem("v-0", "primary", true))
	tr0 := &model.Transition{Step: &model.Step{Kind: model.StepApply}, Samples: []model.SystemSample{synced, twoDown}, Curr: &model.Snapshot{System: &scaled}}
	if fs := NewRollSafety(Config{}).Check(context.Background(), tr0); len(fs) != 0 {
		t.Errorf("servers removed by a scale-in are not out of service: %+v", fs)
	}
	tr0.Curr.System = &synced
	if fs := NewRollSafety(Config{}).Check(context.Background(), tr0); len(fs) != 1 {
		t.Errorf("servers still there at the end count: %+v", fs)
	}
	// The state at the start comes from the previous snapshot when there is one.
	tr := &model.Transition{Step: &model.Step{Kind: model.StepApply}, Prev: &model.Snapshot{System: &oneDown}, Samples: []model.SystemSample{twoDown}}
	if fs := NewRollSafety(Config{}).Check(context.Background(), tr); len(fs) != 0 {
		t.Errorf("v-1 was already out of sync before the step: %+v", fs)
	}
}
