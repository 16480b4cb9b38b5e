package campaign

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/targets"
)

func TestParseShard(t *testing.T) {
	env := func(v string) func(string) string {
		return func(name string) string {
			if name == ShardIndexEnv {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		in, env string
		want    Shard
		errHas  string // "" when valid
	}{
		{in: "", want: Shard{}},
		{in: "1/1", want: Shard{1, 1}},
		{in: "2/3", want: Shard{2, 3}},
		{in: "3/3", want: Shard{3, 3}},
		{in: "env/3", env: "0", want: Shard{1, 3}},
		{in: "env/3", env: "2", want: Shard{3, 3}},
		{in: "0/3", errHas: "K must be at least 1"},
		{in: "4/3", errHas: "K is above N"},
		{in: "1/0", errHas: "N must be at least 1"},
		{in: "0/0", errHas: "shard \"0/0\""},
		{in: "-1/3", errHas: "K must be at least 1"},
		{in: "3", errHas: "want K/N"},
		{in: "a/3", errHas: "not an integer"},
		{in: "1/b", errHas: "not an integer"},
		{in: "1.5/3", errHas: "not an integer"},
		{in: "env/3", errHas: "JOB_COMPLETION_INDEX + 1, which is not set"},
		{in: "env/3", env: "x", errHas: "not a 0-based index"},
		{in: "env/3", env: "-1", errHas: "not a 0-based index"},
		{in: "env/3", env: "3", errHas: "completions must equal N"},
		{in: "env/0", env: "0", errHas: "N must be at least 1"},
	} {
		got, err := ParseShard(tc.in, env(tc.env))
		if tc.errHas == "" {
			if err != nil || got != tc.want {
				t.Errorf("ParseShard(%q, %s=%q) = %v, %v; want %v", tc.in, ShardIndexEnv, tc.env, got, err, tc.want)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrShard) || !strings.Contains(err.Error(), tc.errHas) {
			t.Errorf("ParseShard(%q, %s=%q) = %v, %v; want an ErrShard saying %q", tc.in, ShardIndexEnv, tc.env, got, err, tc.errHas)
		}
	}
}

// TestShardsOfValkeyPlan slices the built-in Valkey target's real plan: for
// every N the shards are disjoint, their round-robin interleaving is the
// unsharded campaign's order, each shard stays in that order, and a shard is
// the same for the same seed (with MaxSteps bounding the whole plan).
func TestShardsOfValkeyPlan(t *testing.T) {
	tg := valkeyTarget(t)
	ctx := context.Background()
	const seed = 3
	plan, err := Plan(ctx, tg, seed, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, maxSteps := range []int{0, 40} {
		whole, err := planCases(plan, Config{Target: tg, Seed: seed, MaxSteps: maxSteps})
		if err != nil {
			t.Fatal(err)
		}
		if len(whole) < 5 {
			t.Fatalf("max-steps %d: the plan has %d cases, too few to test 5 shards", maxSteps, len(whole))
		}
		for _, n := range []int{1, 2, 3, 5} {
			shards := make([][]string, n)
			for k := 1; k <= n; k++ {
				cs, err := planCases(plan, Config{Target: tg, Seed: seed, MaxSteps: maxSteps, Shard: Shard{k, n}})
				if err != nil {
					t.Fatalf("max-steps %d shard %d/%d: %v", maxSteps, k, n, err)
				}
				shards[k-1] = ids(cs)
			}
			// Round-robin: interleaving the shards gives the whole order back,
			// which also proves them disjoint and their union the plan.
			var inter []string
			for i := 0; len(inter) < len(whole); i++ {
				for k := range n {
					if i < len(shards[k]) {
						inter = append(inter, shards[k][i])
					}
				}
				if i > len(whole) {
					break
				}
			}
			if !reflect.DeepEqual(inter, ids(whole)) {
				t.Fatalf("max-steps %d: %d shards interleaved are not the unsharded order", maxSteps, n)
			}
			seen := map[string]int{}
			for k, s := range shards {
				for _, id := range s {
					if prev, ok := seen[id]; ok {
						t.Fatalf("max-steps %d: %s is in shards %d/%d and %d/%d", maxSteps, id, prev+1, n, k+1, n)
					}
					seen[id] = k
				}
			}
			if len(seen) != len(whole) {
				t.Fatalf("max-steps %d: %d shards hold %d cases, the plan %d", maxSteps, n, len(seen), len(whole))
			}
		}
	}
	// The same seed, planned again from scratch, gives the same shard.
	for _, sh := range []Shard{{2, 3}, {5, 5}} {
		cfg := Config{Target: tg, Seed: seed, Shard: sh}
		_, a, err := SelectCases(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := planCases(plan, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(a), ids(b)) {
			t.Fatalf("shard %s differs between two plans of seed %d", sh, seed)
		}
	}
}

func TestShardTooMany(t *testing.T) {
	plan := &inputgen.Plan{TestCases: []*inputgen.TestCase{{ID: "a", Property: "spec.a"}, {ID: "b", Property: "spec.b"}}}
	tg := &targets.Target{}
	if _, err := planCases(plan, Config{Target: tg, Shard: Shard{2, 2}}); err != nil {
		t.Fatal(err)
	}
	_, err := planCases(plan, Config{Target: tg, Shard: Shard{3, 3}})
	if err == nil || !strings.Contains(err.Error(), "use at most 2 shards") {
		t.Fatalf("shard 3/3 of 2 cases: %v", err)
	}
}

// noProvider fails every cluster creation: the resume must fail before it.
type noProvider struct{}

func (noProvider) Create(context.Context, string) (cluster.Cluster, error) {
	return nil, errors.New("no cluster in this test")
}

func TestResumeKeepsShard(t *testing.T) {
	for _, tc := range []struct {
		name      string
		recorded  *Shard
		asked     Shard
		errHas    string
		mismatch  bool
		reachedUp bool // failed later, at the cluster (the shard was accepted)
	}{
		{name: "same", recorded: &Shard{2, 3}, asked: Shard{2, 3}, reachedUp: true},
		{name: "omitted", recorded: &Shard{2, 3}, reachedUp: true},
		{name: "other", recorded: &Shard{2, 3}, asked: Shard{1, 3}, errHas: "pass --shard 2/3", mismatch: true},
		{name: "whole plan", asked: Shard{1, 3}, errHas: "ran the whole plan", mismatch: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			j, _, err := OpenJournal(filepath.Join(dir, "journal.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			st := &StartRecord{Target: "x", Seed: 1, Workers: 1, Assignments: [][]string{{"a"}}, Planned: 1, Shard: tc.recorded}
			if err := j.Append(Record{Type: RecStart, Start: st}); err != nil {
				t.Fatal(err)
			}
			j.Close()
			plan := &inputgen.Plan{TestCases: []*inputgen.TestCase{{ID: "a", Property: "spec.a"}}}
			writePlan(t, dir, plan)
			_, err = Run(context.Background(), Config{Target: &targets.Target{}, Provider: noProvider{}, OutDir: dir, Resume: true, Shard: tc.asked})
			switch {
			case tc.mismatch:
				if !errors.Is(err, ErrShardMismatch) || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("resume of shard %v with --shard %v: %v; want ErrShardMismatch saying %q", tc.recorded, tc.asked, err, tc.errHas)
				}
			case tc.reachedUp:
				if err == nil || errors.Is(err, ErrShardMismatch) || !strings.Contains(err.Error(), "no cluster in this test") {
					t.Fatalf("resume of shard %v with --shard %v: %v; want it to go on to the clusters", tc.recorded, tc.asked, err)
				}
			}
		})
	}
}

func writePlan(t *testing.T, dir string, plan *inputgen.Plan) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := plan.WriteJSON(f); err != nil {
		t.Fatal(err)
	}
}

// valkeyTarget loads the built-in Valkey target from the repository.
func valkeyTarget(t *testing.T) *targets.Target {
	t.Helper()
	root, err := targets.FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	tg, err := targets.Valkey(root)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}
