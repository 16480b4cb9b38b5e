// Package kindlane holds the campaign's end-to-end test on the kind lane: the same seeded-bug
// campaign on kind clusters (Chaos Mesh injecting the faults) and on the embedded cluster. It is
// a package of its own so that `go test` runs it beside the campaign package's tests.
package kindlane_test

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/cluster/kind"
	"github.com/gauntlet-dev/gauntlet/cluster/kind/kindtest"
	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/internal/testing/bugcampaign"
	"github.com/gauntlet-dev/gauntlet/internal/testing/kindturns"
)

func TestMain(m *testing.M) {
	if local.Init() { // the embedded cluster's child processes
		return
	}
	os.Exit(m.Run())
}

// kindBugCase is the seeded bug the kind lane runs: its fault script partitions a replica,
// then kills the primary's container — both through Chaos Mesh's daemon on kind.
const kindBugCase = "07-failover-lowest-offset"

// TestE2EKindSameVerdicts runs one seeded-bug campaign (kindBugCase, with its fault script)
// against the patched and the clean operator, on kind clusters with Chaos Mesh injecting
// the faults and on the embedded cluster with its own: the verdicts must be the same — the
// bug caught by the oracle that catches it on the embedded cluster, the clean operator with
// no alarm on either — and every fault must have been injected. The embedded cluster's half
// runs without the kind lane too: it is the end-to-end test that the embedded cluster's
// fault campaign catches this bug (the restarted, empty primary promoted, acknowledged
// writes lost) by the durability or system-state oracle.
func TestE2EKindSameVerdicts(t *testing.T) {
	testenv.SkipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	type verdict struct {
		oracles []string // of the bug alarm groups
		faults  int      // injected
		took    time.Duration
	}
	var mu sync.Mutex
	got := map[string]verdict{}
	run := func(t *testing.T, backend string, patched bool) {
		var opts []func(*campaign.Config, string)
		if backend == "kind" {
			opts = append(opts, onKind(t))
		}
		start := time.Now()
		_, res, _ := bugcampaign.Run(ctx, t, kindBugCase, patched, false, 1, opts...)
		v := verdict{took: time.Since(start)}
		for _, g := range res.Groups {
			t.Logf("%s: alarm %s %s: %s (steps %v, misoperation %v)", backend, g.Oracle, g.Signature, g.Summary, g.Steps, g.Misoperation)
			if g.Oracle == "fault" {
				t.Errorf("%s: a fault was not injected: %s", backend, g.Summary)
			}
			if !g.Misoperation && !slices.Contains(v.oracles, g.Oracle) {
				v.oracles = append(v.oracles, g.Oracle)
			}
		}
		sort.Strings(v.oracles)
		for _, s := range res.Steps {
			for _, f := range s.Faults {
				if f.Unsupported != "" {
					t.Errorf("%s: %s unsupported: %s", backend, f.Kind, f.Unsupported)
				} else {
					v.faults++
				}
			}
		}
		mu.Lock()
		got[backend+map[bool]string{true: "/bug", false: "/clean"}[patched]] = v
		mu.Unlock()
	}
	t.Run("backends", func(t *testing.T) { // returns once both parallel back ends are done
		for _, backend := range []string{"kind", "embedded"} {
			t.Run(backend, func(t *testing.T) {
				if backend == "kind" {
					kindtest.NeedLane(t, true)
				}
				t.Parallel() // the two back ends side by side, each the two operators one after the other
				// (one kind cluster of this test at a time: beside the example targets' kind clusters,
				// more would load 2 cores past what Chaos Mesh's webhooks answer within). Kind runs the
				// clean operator first: its cluster asks for a creation turn at once instead of after
				// the seeded bug's build, which the embedded cluster's bug run waits for meanwhile.
				order := []bool{true, false}
				if backend == "kind" {
					order = []bool{false, true}
				}
				for _, patched := range order {
					t.Run(map[bool]string{true: "bug", false: "clean"}[patched], func(t *testing.T) { run(t, backend, patched) })
				}
			})
		}
	})
	{
		for _, k := range []string{"kind/bug", "embedded/bug", "kind/clean", "embedded/clean"} {
			t.Logf("%-15s bug alarms from %v, %d faults injected, %s", k, got[k].oracles, got[k].faults, got[k].took.Round(time.Second))
		}
		for _, k := range []string{"kind/bug", "embedded/bug"} {
			if v, ok := got[k]; ok && !slices.ContainsFunc(v.oracles, func(o string) bool { return o == "durability" || o == "system-state" }) {
				t.Errorf("%s: seeded bug %s not caught by durability or system-state (alarms from %v)", k, kindBugCase, v.oracles)
			}
		}
		for _, k := range []string{"kind/clean", "embedded/clean"} {
			if v, ok := got[k]; ok && len(v.oracles) > 0 {
				t.Errorf("%s: the clean operator raised alarms from %v", k, v.oracles)
			}
		}
		for _, k := range []string{"bug", "clean"} {
			a, okA := got["kind/"+k]
			b, okB := got["embedded/"+k]
			if okA && okB && !slices.Equal(a.oracles, b.oracles) {
				t.Errorf("%s: kind's verdict (alarms from %v) differs from the embedded cluster's (%v)", k, a.oracles, b.oracles)
			}
			if okA && a.faults == 0 {
				t.Errorf("kind/%s: no fault was injected", k)
			}
		}
	}
}

// onKind runs the campaign on kind clusters: the operator's image assembled offline from
// the binary the campaign was given, with the Valkey images, and Chaos Mesh installed. The
// clusters come up one at a time with the other tests' kind clusters (kindturns).
func onKind(t *testing.T) func(*campaign.Config, string) {
	return func(cfg *campaign.Config, bin string) {
		imgs, err := kind.BundledValkeyImages(cfg.Target.Operator.Image, bin)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Provider = kindturns.Provider(kind.Provider{Options: kind.Options{Images: imgs, ChaosMesh: true,
			Log: slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))}})
	}
}

// testLogWriter sends log lines to t.Log.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
