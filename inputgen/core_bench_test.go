package inputgen

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/apicheck"
	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
)

// acceptance is how many valid test cases of a plan the API server accepts once their core-typed
// values are rendered into real objects.
type acceptance struct {
	valid, accepted int
	// refusals are a few refused cases with the reason.
	refusals []string
	// byType counts refused cases by the core type of the first refused value.
	byType map[string]int
}

func (a acceptance) share() float64 {
	if a.valid == 0 {
		return 1
	}
	return float64(a.accepted) / float64(a.valid)
}

// coreAcceptance judges every valid test case of plan independently of generation: every
// core-typed value of every state the case declares (the seed's own values included), wrapped
// as generation wraps it, must be accepted by the API server.
func coreAcceptance(ctx context.Context, s *crd.Schema, plan *Plan, cache *coreCache) (acceptance, error) {
	a := acceptance{byType: map[string]int{}}
	var valid []*TestCase
	for _, tc := range plan.TestCases {
		if tc.Label == Valid {
			valid = append(valid, tc)
		}
	}
	a.valid = len(valid)
	why := make([]string, len(valid))
	typ := make([]string, len(valid))
	errs := make([]error, len(valid))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Go(func() {
			for i := range work {
				reason, err := coreRefusal(ctx, cache, s, plan.Base, plan.States(valid[i].ID))
				if err != nil {
					errs[i] = err
					continue
				}
				if reason != nil {
					why[i] = valid[i].ID + ": " + reason.String()
					typ[i] = reason.what
				}
			}
		})
	}
	for i := range valid {
		work <- i
	}
	close(work)
	wg.Wait()
	for i := range valid {
		if errs[i] != nil {
			return a, errs[i]
		}
		if why[i] == "" {
			a.accepted++
			continue
		}
		a.byType[typ[i]]++
		if len(a.refusals) < 3 {
			a.refusals = append(a.refusals, why[i])
		}
	}
	return a, nil
}

// startAPICheck starts the dry-run validator for a test or benchmark; the environment decides
// whether its absence skips or fails.
func startAPICheck(tb testing.TB) *apicheck.Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := apicheck.Available(ctx); err != nil {
		testenv.Unavailable(tb, "%v", err)
	}
	srv, err := apicheck.Start(ctx, apicheck.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := srv.Stop(context.Background()); err != nil {
			tb.Error(err)
		}
	})
	return srv
}

// BenchmarkCoreAcceptance is `make bench-inputgen`: for every shared CRD it generates the plan
// without and with the API server's judgement of core-typed values and prints coverage, the
// semantic mapping, generation time and the share of valid test cases the API server accepts once
// their core-typed values are rendered into real objects. Opt-in (GAUNTLET_BENCH_INPUTGEN=1):
// `make bench` would otherwise run it three times.
func BenchmarkCoreAcceptance(b *testing.B) {
	if os.Getenv("GAUNTLET_BENCH_INPUTGEN") == "" {
		b.Skip("opt-in: run `make bench-inputgen` (GAUNTLET_BENCH_INPUTGEN=1)")
	}
	cases := realCases(b)
	t0 := time.Now()
	srv := startAPICheck(b)
	start := time.Since(t0)
	ctx := context.Background()
	// One cache for the measurement, apart from generation's, so "after" pays its own requests.
	judge := newCoreCache(srv)
	type row struct {
		name                    string
		props, mapped, roots    int
		coverage, coverageAfter float64
		valid, validAfter       int
		miso, misoAfter         int
		before, after           acceptance
		genPlain, genCore       time.Duration
		core                    CoreStats
		// seedRefused lists the seed's own core-typed values the server refuses in isolation
		// (the operator completes them): their causes are not held against test cases.
		seedRefused               []string
		missedBefore, missedAfter int
	}
	var rows []row
	for b.Loop() {
		rows = rows[:0]
		for _, rc := range cases {
			r := row{name: rc.name}
			g, err := NewGenerator(rc.schema, rc.seed, Options{Seed: 1, Examples: rc.examples})
			if err != nil {
				b.Fatalf("%s: %v", rc.name, err)
			}
			t := time.Now()
			plain, err := g.Plan(ctx)
			if err != nil {
				b.Fatalf("%s: %v", rc.name, err)
			}
			r.genPlain = time.Since(t)
			g2, err := NewGenerator(rc.schema, rc.seed, Options{Seed: 1, Examples: rc.examples, CoreValidator: srv})
			if err != nil {
				b.Fatalf("%s: %v", rc.name, err)
			}
			t = time.Now()
			checked, err := g2.Plan(ctx)
			if err != nil {
				b.Fatalf("%s: %v", rc.name, err)
			}
			r.genCore = time.Since(t)
			if r.before, err = coreAcceptance(ctx, rc.schema, plain, judge); err != nil {
				b.Fatalf("%s: %v", rc.name, err)
			}
			if r.after, err = coreAcceptance(ctx, rc.schema, checked, judge); err != nil {
				b.Fatalf("%s: %v", rc.name, err)
			}
			for _, cv := range coreValues(rc.schema, plain.Base) {
				obj, ok := wrapCore(siteOf(cv.prop), cv.value)
				if !ok {
					continue
				}
				reason, err := judge.validate(ctx, obj.obj)
				if err != nil {
					b.Fatalf("%s: %v", rc.name, err)
				}
				if reason != "" {
					r.seedRefused = append(r.seedRefused, pathOf(cv.toks)+": "+rebase(reason, obj.at, pathOf(cv.toks)))
				}
			}
			st := plain.Stats
			r.props, r.mapped, r.roots, r.coverage = st.Properties, st.SemanticMapped, len(plain.SemanticRoots), st.Coverage
			r.valid, r.miso = st.Valid, st.Misoperation
			r.coverageAfter, r.validAfter, r.misoAfter = checked.Stats.Coverage, checked.Stats.Valid, checked.Stats.Misoperation
			r.missedBefore, r.missedAfter = st.Properties-st.Pinned-st.Covered, checked.Stats.Properties-checked.Stats.Pinned-checked.Stats.Covered
			if checked.Stats.Core != nil {
				r.core = *checked.Stats.Core
			}
			rows = append(rows, r)
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "API server for dry runs ready after %v\n", start.Round(10*time.Millisecond))
	fmt.Fprintf(&out, "%-32s %6s %10s %6s | %-28s %7s %7s | %-28s %7s %7s %s\n", "CRD", "props", "mapped", "roots",
		"without validator: cases", "accept", "gen", "with validator: cases", "accept", "gen", "coverage before/after; core checks (asked, cached, redrawn, misoperation)")
	var tb, ta acceptance
	for _, r := range rows {
		fmt.Fprintf(&out, "%-32s %6d %5d %3.0f%% %6d | %5d valid %4d misop      %6.1f%% %6.2fs | %5d valid %4d misop      %6.1f%% %6.2fs %.1f%%/%.1f%%; %d, %d, %d, %d\n",
			r.name, r.props, r.mapped, 100*float64(r.mapped)/float64(max(1, r.props)), r.roots,
			r.valid, r.miso, 100*r.before.share(), r.genPlain.Seconds(),
			r.validAfter, r.misoAfter, 100*r.after.share(), r.genCore.Seconds(),
			100*r.coverage, 100*r.coverageAfter, r.core.Checked, r.core.CacheHits, r.core.Redrawn, r.core.Misoperation)
		tb.valid += r.before.valid
		tb.accepted += r.before.accepted
		ta.valid += r.after.valid
		ta.accepted += r.after.accepted
	}
	fmt.Fprintf(&out, "%-32s valid cases accepted: %.1f%% without the validator (%d/%d), %.1f%% with it (%d/%d)\n", "all",
		100*tb.share(), tb.accepted, tb.valid, 100*ta.share(), ta.accepted, ta.valid)
	for _, r := range rows {
		for _, why := range r.seedRefused {
			fmt.Fprintf(&out, "%s: the seed's own value is refused in isolation (not held against test cases): %s\n", r.name, oneLine(why))
		}
	}
	for _, r := range rows {
		for _, x := range []struct {
			label string
			a     acceptance
		}{{"without", r.before}, {"with", r.after}} {
			if len(x.a.byType) == 0 {
				continue
			}
			var types []string
			for t, n := range x.a.byType {
				types = append(types, fmt.Sprintf("%s %d", t, n))
			}
			sort.Strings(types)
			fmt.Fprintf(&out, "%s %s the validator: refused by type: %s\n", r.name, x.label, strings.Join(types, ", "))
			for _, s := range x.a.refusals {
				fmt.Fprintf(&out, "    %s\n", oneLine(s))
			}
		}
	}
	// Printed, not logged: the testing package truncates long benchmark logs.
	fmt.Print(out.String())
	for _, r := range rows {
		if r.after.share() < 0.98 {
			b.Errorf("%s: %.1f%% of valid cases accepted with the validator, want ≥ 98%%", r.name, 100*r.after.share())
		}
		if r.coverageAfter < 0.97 {
			b.Errorf("%s: coverage %.1f%% with the validator, want ≥ 97%%", r.name, 100*r.coverageAfter)
		}
	}
}
