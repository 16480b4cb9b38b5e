package campaign

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gauntlet-dev/gauntlet/inputgen"
)

// ShardIndexEnv is the variable `--shard env/N` takes the shard from: a
// Kubernetes Indexed Job sets it to the pod's 0-based completion index, so the
// shard is its value + 1.
const ShardIndexEnv = "JOB_COMPLETION_INDEX"

// ErrShard is returned for a shard that is not K/N with integers 0 < K ≤ N.
var ErrShard = errors.New("a shard is K/N with integers 0 < K ≤ N (1-based), or env/N")

// ErrShardMismatch is returned by a resume given another shard than the one the
// campaign started with.
var ErrShardMismatch = errors.New("a resumed campaign keeps the shard it started with")

// shardMismatch explains a resume's --shard that is not the recorded one.
func shardMismatch(asked, recorded Shard) error {
	rec := recorded.String()
	if rec == "" {
		return fmt.Errorf("it ran the whole plan, not shard %s: drop --shard: %w", asked, ErrShardMismatch)
	}
	return fmt.Errorf("it is shard %s, not %s: drop --shard or pass --shard %s: %w", rec, asked, rec, ErrShardMismatch)
}

// Shard is the slice of the plan one machine runs: the campaign's test cases,
// in their run order (after the target's restriction, the CaseFilter and
// MaxSteps), go round-robin to Count shards — case i to shard i mod Count + 1 —
// so every shard stays breadth-first, the shards are disjoint and together
// they are the unsharded campaign's cases. The zero value is the whole plan.
type Shard struct {
	// Index is the shard's 1-based number, 1..Count.
	Index int `json:"index"`
	// Count is how many shards the plan is split into.
	Count int `json:"count"`
}

// IsZero reports whether s is the zero value: the whole plan.
func (s Shard) IsZero() bool { return s == Shard{} }

// String formats s as K/N ("" for the whole plan).
func (s Shard) String() string {
	if s.IsZero() {
		return ""
	}
	return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count)
}

// Validate checks 0 < Index ≤ Count (the zero value is valid).
func (s Shard) Validate() error {
	if s.IsZero() {
		return nil
	}
	switch {
	case s.Count <= 0:
		return fmt.Errorf("shard %d/%d: N must be at least 1: %w", s.Index, s.Count, ErrShard)
	case s.Index <= 0:
		return fmt.Errorf("shard %d/%d: K must be at least 1 (the first shard is 1/%d): %w", s.Index, s.Count, s.Count, ErrShard)
	case s.Index > s.Count:
		return fmt.Errorf("shard %d/%d: K is above N (the last shard is %d/%d): %w", s.Index, s.Count, s.Count, s.Count, ErrShard)
	}
	return nil
}

// ParseShard reads a --shard value: "K/N", or "env/N" where K is
// $JOB_COMPLETION_INDEX + 1 (looked up with getenv; a Kubernetes Indexed Job's
// index is 0-based). An empty value is the whole plan.
func ParseShard(v string, getenv func(string) string) (Shard, error) {
	if v == "" {
		return Shard{}, nil
	}
	k, n, ok := strings.Cut(v, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want K/N, e.g. 2/3: %w", v, ErrShard)
	}
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil {
		return Shard{}, fmt.Errorf("shard %q: N %q is not an integer: %w", v, n, ErrShard)
	}
	var index int
	if strings.TrimSpace(k) == "env" {
		raw := getenv(ShardIndexEnv)
		if raw == "" {
			return Shard{}, fmt.Errorf("shard %q takes K from $%s + 1, which is not set: run it in a Kubernetes Job with completionMode: Indexed, or pass K/N: %w", v, ShardIndexEnv, ErrShard)
		}
		i, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil || i < 0 {
			return Shard{}, fmt.Errorf("shard %q: $%s is %q, not a 0-based index: %w", v, ShardIndexEnv, raw, ErrShard)
		}
		if i >= count && count > 0 {
			return Shard{}, fmt.Errorf("shard %q: $%s %d is shard %d, above %d: the Job's completions must equal N: %w", v, ShardIndexEnv, i, i+1, count, ErrShard)
		}
		index = i + 1
	} else if index, err = strconv.Atoi(strings.TrimSpace(k)); err != nil {
		return Shard{}, fmt.Errorf("shard %q: K %q is not an integer (or env): %w", v, k, ErrShard)
	}
	s := Shard{Index: index, Count: count}
	if s.IsZero() {
		return Shard{}, fmt.Errorf("shard %q: %w", v, ErrShard)
	}
	return s, s.Validate()
}

// sliceShard keeps the cases of shard s: case i goes to shard i mod Count + 1.
func sliceShard(cases []*inputgen.TestCase, s Shard) []*inputgen.TestCase {
	if s.IsZero() {
		return cases
	}
	var out []*inputgen.TestCase
	for i := s.Index - 1; i < len(cases); i += s.Count {
		out = append(out, cases[i])
	}
	return out
}

// SelectCases returns the plan and the test cases a campaign started with cfg
// runs, in run order, without starting anything: the plan is ordered
// (Config.Order), restricted to the target's properties and Config.CaseFilter,
// bounded by Config.MaxSteps — all on the whole plan, so sharding never changes
// what is tested — and then sliced to Config.Shard. Config.Provider is not
// needed. The same seed gives the same cases in the same order.
func SelectCases(ctx context.Context, cfg Config) (*inputgen.Plan, []*inputgen.TestCase, error) {
	if cfg.Target == nil {
		return nil, nil, errors.New("campaign: Config.Target is required")
	}
	if err := cfg.Shard.Validate(); err != nil {
		return nil, nil, err
	}
	po := cfg.Plan
	if po.Logger == nil {
		po.Logger = cfg.Logger
	}
	plan, err := Plan(ctx, cfg.Target, cfg.Seed, po)
	if err != nil {
		return nil, nil, err
	}
	cases, err := planCases(plan, cfg)
	if err != nil {
		return nil, nil, err
	}
	return plan, cases, nil
}

// CaseStates is how many desired states a test case declares (its setup state,
// if any, and one per step): what MaxSteps and Result.Planned count.
func CaseStates(tc *inputgen.TestCase) int { return caseCost(tc) }

// planCases orders, selects and shards plan's test cases for cfg.
func planCases(plan *inputgen.Plan, cfg Config) ([]*inputgen.TestCase, error) {
	ordered, err := orderCases(plan.TestCases, cfg.Order, cfg.Seed, plan.PodCapacity)
	if err != nil {
		return nil, err
	}
	all := selectCases(ordered, cfg.Target, cfg.MaxSteps, cfg.CaseFilter)
	if len(all) == 0 {
		return nil, fmt.Errorf("campaign: the plan has no test case for properties %v: check the target's properties", cfg.Target.Properties)
	}
	cases := sliceShard(all, cfg.Shard)
	if len(cases) == 0 {
		return nil, fmt.Errorf("campaign: shard %s has no test case: the campaign has only %d, so use at most %d shards", cfg.Shard, len(all), len(all))
	}
	return cases, nil
}
