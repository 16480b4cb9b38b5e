package oracles

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

func TestSystemState(t *testing.T) {
	runFixtureCases(t, "system-state", func(c Config) Oracle { return NewSystemState(c) }, []fixtureCase{
		{
			// Users' spellings ("100mb", "ALLKEYS-LRU", "Ex", "YES", a partial
			// client-output-buffer-limit) against what the servers report.
			name: "converged", fixture: "converged",
		},
		{
			// "1g" is 10^9 bytes, "1gb" 2^30, "512MB" 512·2^20.
			name: "config-sizes", fixture: "config-sizes",
		},
		{
			name: "config-drift", fixture: "config-drift",
			want: expectation{n: 2, contains: []string{
				`effective config maxmemory is "52428800" on cache-2 (1 of 3 members), want "100mb"`,
				"config key cluster-databases (spec.config.cluster-databases) is unknown to the server on 3 of 3 members",
			}},
		},
		{
			// The same sizes, declared the other way round: 1g is not 1gb.
			name: "size-units-differ", fixture: "config-sizes",
			edit: func(t *testing.T, tr *model.Transition) {
				setIn(t, tr.Desired, `spec.config.maxmemory`, "1gb")
				setIn(t, tr.Desired, `spec.config["client-query-buffer-limit"]`, "1g")
			},
			want: expectation{n: 2, contains: []string{
				`effective config maxmemory is "1000000000" on 3 of 3 members (cache-0, cache-1, cache-2), want "1gb"`,
				`effective config client-query-buffer-limit is "1073741824"`,
			}},
		},
		{
			name: "skipped-keys", fixture: "config-drift",
			cfg: Config{Skip: []string{`spec.config["cluster-databases"]`, "spec.config.maxmemory"}},
		},
		{
			// Keys the monitor did not read (nil Config) are not judged.
			name: "config-not-read", fixture: "config-drift",
			edit: func(t *testing.T, tr *model.Transition) {
				for i := range tr.Curr.System.Members {
					tr.Curr.System.Members[i].Config = nil
				}
			},
		},
		{
			name: "config-at-another-path", fixture: "config-drift",
			cfg: Config{SystemConfigPath: "spec.valkey.settings"},
			edit: func(t *testing.T, tr *model.Transition) {
				spec := tr.Desired["spec"].(map[string]any)
				spec["valkey"] = map[string]any{"settings": map[string]any{"maxmemory": "50mb"}}
				delete(spec, "config")
			},
			want: expectation{n: 1, contains: []string{`effective config maxmemory is "104857600" on 2 of 3 members (cache-0, cache-1), want "50mb" (spec.valkey.settings.maxmemory)`}},
		},
		{
			name: "two-primaries", fixture: "two-primaries",
			want: expectation{n: 1, contains: []string{"2 primaries after convergence: cache-0 and cache-2 report the primary role"}, pods: []string{"cache-0", "cache-2"}},
		},
		{
			name: "no-primary", fixture: "converged",
			edit: func(t *testing.T, tr *model.Transition) {
				p := member(t, tr.Curr.System, "cache-0")
				p.Role, p.Follows, p.LinkUp = model.RoleReplica, "127.0.0.1:1", false
			},
			want: expectation{n: 1, contains: []string{"no primary after convergence: none of the 3 reachable members reports the primary role"}},
		},
		{
			name: "replica-link-down", fixture: "link-down",
			want: expectation{n: 1, contains: []string{"replication link to the primary cache-0 down after convergence: cache-2 (1 of 2 members)"}, pods: []string{"cache-2"}},
		},
		{
			// A replica left fenced (replicating from a closed local port) and one
			// following a pod that is not the primary.
			name: "replicas-follow-others", fixture: "converged",
			edit: func(t *testing.T, tr *model.Transition) {
				r := member(t, tr.Curr.System, "cache-1")
				r.Follows, r.LinkUp = "127.0.0.1:1", false
				r = member(t, tr.Curr.System, "cache-2")
				r.Follows = "10.244.0.9:6379"
			},
			want: expectation{n: 1, contains: []string{"replicas not following the primary cache-0 after convergence: 2 of 2 members (cache-1, cache-2)"}, pods: []string{"cache-1", "cache-2"}},
		},
		{
			// Replicas configured with the primary's DNS name follow it.
			name: "replica-follows-dns-name", fixture: "converged",
			edit: func(t *testing.T, tr *model.Transition) {
				member(t, tr.Curr.System, "cache-1").Follows = "cache-0.cache-headless.gauntlet-w0.svc.cluster.local:6379"
				member(t, tr.Curr.System, "cache-2").Follows = "cache-0:6379"
			},
		},
		{
			name: "service-selects-replica", fixture: "service-selects-replica",
			want: expectation{n: 1, contains: []string{"client Service cache selects cache-1 after convergence, want exactly the primary cache-0"}},
		},
		{
			name: "service-selects-two", fixture: "converged",
			edit: func(t *testing.T, tr *model.Transition) {
				tr.Curr.System.Selected = []string{"cache-1", "gauntlet-w0/cache-0"}
			},
			want: expectation{n: 1, contains: []string{"client Service cache selects cache-0, cache-1 after convergence"}},
		},
		{
			name: "service-selects-nothing", fixture: "converged",
			edit: func(t *testing.T, tr *model.Transition) { tr.Curr.System.Selected = nil },
			want: expectation{n: 1, contains: []string{"client Service cache selects no pod after convergence"}},
		},
		{
			name: "role-unknown", fixture: "converged",
			edit: func(t *testing.T, tr *model.Transition) { member(t, tr.Curr.System, "cache-2").Role = "" },
			want: expectation{n: 1, contains: []string{"members reporting no replication role after convergence: cache-2 (1 of 3 members)"}},
		},
		{
			// ESR under faults: the crashed server never came back.
			name: "unreachable-after-fault", fixture: "unreachable-after-fault",
			want: expectation{n: 1, contains: []string{"1 of 3 members unreachable after convergence: cache-2 after the step's faults were removed (container-crash cache-2)"}},
		},
		{
			// While a persistent fault still holds, the pod it targets is left out.
			name: "persistent-fault-in-place", fixture: "unreachable-after-fault",
			edit: func(t *testing.T, tr *model.Transition) {
				tr.Step.Faults[0].Persistent = true
				tr.Step.Faults[0].Removed = time.Time{}
			},
		},
		{
			// A fault the back end could not inject excuses nothing and is not a
			// fault context.
			name: "unsupported-fault", fixture: "unreachable-after-fault",
			edit: func(t *testing.T, tr *model.Transition) {
				tr.Step.Faults[0].Persistent = true
				tr.Step.Faults[0].Removed = time.Time{}
				tr.Step.Faults[0].Unsupported = "no such fault on this back end"
			},
			want: expectation{n: 1, contains: []string{"1 of 3 members unreachable after convergence: cache-2"}},
		},
		{
			// Seed 4 of the untuned campaign: TLS turned on with a Secret that
			// does not exist. The monitor had no TLS material to dial with: that
			// says nothing of the servers. Any other reason is still judged.
			name: "no-credentials-not-judged", fixture: "unreachable-after-fault",
			edit: func(t *testing.T, tr *model.Transition) {
				tr.Step.Faults = nil
				m := member(t, tr.Curr.System, "cache-2")
				m.Unreachable, m.Error = model.UnreachableNoCredentials, "TLS: Secret gauntlet-w0/tls (spec.tls.secretName) does not exist"
			},
		},
		{
			name: "unreachable-with-credentials-judged", fixture: "unreachable-after-fault",
			edit: func(t *testing.T, tr *model.Transition) {
				tr.Step.Faults = nil
				member(t, tr.Curr.System, "cache-2").Unreachable = model.UnreachableError
			},
			want: expectation{n: 1, contains: []string{"1 of 3 members unreachable after convergence: cache-2"}},
		},
		{
			name: "timed-out-step-not-judged", fixture: "config-drift",
			edit: func(t *testing.T, tr *model.Transition) { tr.Step.TimedOut, tr.Step.Converged = true, time.Time{} },
		},
		{
			name: "no-monitor", fixture: "config-drift",
			edit: func(t *testing.T, tr *model.Transition) { tr.Curr.System = nil },
		},
		{
			// ESR after convergence: the stability window sees a failover.
			name: "primary-changes-after-convergence", fixture: "converged",
			edit: func(t *testing.T, tr *model.Transition) {
				for i, p := range []string{"cache-0", "cache-1", "cache-1"} {
					s := cloneSample(t, tr.Curr.System)
					s.Taken = tr.Curr.System.Taken.Add(at(1000 * (i + 1)).Sub(t0))
					for j := range s.Members {
						m := &s.Members[j]
						if m.Pod == p {
							m.Role, m.Follows, m.LinkUp = model.RolePrimary, "", false
						} else {
							m.Role = model.RoleReplica
						}
					}
					tr.Stability = append(tr.Stability, &model.Snapshot{Taken: s.Taken, System: s})
				}
			},
			want: expectation{n: 1, contains: []string{"the primary did not stay put after convergence: cache-0 → cache-1 (changed once during the stability window)"}},
		},
	})
}

// Signatures name the key, not the values: the same drift with other values
// groups with the first.
func TestSystemStateSignatures(t *testing.T) {
	a := recorded(t, "config-drift")
	b := recorded(t, "config-drift")
	b.Desired = jsonv.CopyMap(b.Desired)
	setIn(t, b.Desired, "spec.config.maxmemory", "200mb")
	member(t, b.Curr.System, "cache-2").Config["maxmemory"] = "1"
	fa, fb := run(NewSystemState(Config{}), a), run(NewSystemState(Config{}), b)
	if len(fa) != 2 || len(fb) != 2 {
		t.Fatalf("got %d and %d findings, want 2 and 2 (one per key)", len(fa), len(fb))
	}
	if n := len(fb[1].Evidence); n != 3 {
		t.Errorf("the maxmemory finding names %d members, want all 3 (every member drifts from 200mb): %+v", n, fb[1])
	}
	sigs := map[string]bool{}
	for _, f := range fa {
		sigs[f.Signature] = true
	}
	for _, f := range fb {
		if !sigs[f.Signature] {
			t.Errorf("signature of %q differs from the first run's", f.Summary)
		}
	}
	if fa[0].Signature == fa[1].Signature {
		t.Errorf("a mismatch and an unknown key share a signature")
	}
	// Faults removed: the kind enters the signature.
	u := recorded(t, "unreachable-after-fault")
	plain := recorded(t, "unreachable-after-fault")
	plain.Step.Faults = nil
	fu, fp := run(NewSystemState(Config{}), u), run(NewSystemState(Config{}), plain)
	if len(fu) != 1 || len(fp) != 1 || fu[0].Signature == fp[0].Signature {
		t.Errorf("unreachable after a fault and without one should be two signatures: %v / %v", fu, fp)
	}
}

func TestSystemStateContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if fs := NewSystemState(Config{}).Check(ctx, recorded(t, "config-drift")); fs != nil {
		t.Errorf("a cancelled check returned %d findings", len(fs))
	}
}

func cloneSample(t testing.TB, s *model.SystemSample) *model.SystemSample {
	t.Helper()
	c := *s
	c.Members = append([]model.Member(nil), s.Members...)
	for i := range c.Members {
		m := &c.Members[i]
		m.Labels = maps.Clone(m.Labels)
		m.Config = maps.Clone(m.Config)
	}
	c.Selected = append([]string(nil), s.Selected...)
	return &c
}

func TestFollows(t *testing.T) {
	pod := func(name, addr string) model.Member { return model.Member{Pod: name, Address: addr, Reachable: true} }
	ips := []model.Member{pod("cache-0", "10.244.2.7:6379"), pod("cache-1", "10.244.0.9:6379")}
	local := []model.Member{pod("cache-0", "127.0.0.1:16400"), pod("cache-1", "127.0.0.1:16401")}
	v6 := []model.Member{pod("cache-0", "[fd00::7]:6379"), pod("cache-1", "[fd00::9]:6379")}
	cases := []struct {
		follows string
		members []model.Member
		want    bool
	}{
		{"10.244.2.7:6379", ips, true},
		{"10.244.2.7:7000", ips, true}, // one member per host: the host decides
		{"10.244.0.9:6379", ips, false},
		{"127.0.0.1:1", ips, false},
		{"", ips, false},
		{"cache-0:6379", ips, true},
		{"CACHE-0.cache-headless.gauntlet-w0.svc.cluster.local:6379", ips, true},
		{"cache-00.cache-headless:6379", ips, false},
		{"127.0.0.1:16400", local, true}, // a shared host: the port decides
		{"127.0.0.1:16401", local, false},
		{"127.0.0.1", local, false},
		{"[fd00:0::7]:6379", v6, true},
		{"fd00::7", v6, true},
		{"[fd00::9]:6379", v6, false},
	}
	for _, c := range cases {
		if got := follows(c.follows, c.members[0], c.members); got != c.want {
			t.Errorf("follows(%q, %s at %s) = %v, want %v", c.follows, c.members[0].Pod, c.members[0].Address, got, c.want)
		}
	}
}
