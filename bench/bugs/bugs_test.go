package bugs

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/cluster/backends"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/internal/testing/buildcache"
	"github.com/gauntlet-dev/gauntlet/targets"
)

func TestMain(m *testing.M) {
	if backends.Init() {
		return
	}
	os.Exit(m.Run())
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := targets.FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestPatchedFiles(t *testing.T) {
	for _, tc := range []struct {
		name, patch string
		want        []string
		err         bool
	}{
		{"git", "--- a/x/y.go\n+++ b/x/y.go\n@@ -1 +1 @@\n-a\n+b\n", []string{"x/y.go"}, false},
		{"timestamps", "--- a/x/y.go\t2020\n+++ b/x/y.go\t2020\n", []string{"x/y.go"}, false},
		{"two", "+++ b/a.go\n+++ b/c/d.go\n", []string{"a.go", "c/d.go"}, false},
		{"new file", "+++ /dev/null\n", nil, true},
		{"escape", "+++ b/../etc/passwd\n", nil, true},
		{"empty", "nothing\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := patchedFiles([]byte(tc.patch))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("files = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPatchesApplyAndBuild checks that every seeded bug applies to the current
// operator source and builds (through the overlay), and that the work tree is
// left untouched.
func TestPatchesApplyAndBuild(t *testing.T) {
	testenv.SkipShort(t)
	root := repoRoot(t)
	bs, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) < 5 {
		t.Errorf("%d seeded bugs, want at least 5", len(bs))
	}
	before := gitStatus(t, root)
	for _, b := range bs {
		t.Run(b.Name, func(t *testing.T) {
			check := exec.Command("git", "apply", "--check", b.Patch)
			check.Dir = root
			if out, err := check.CombinedOutput(); err != nil {
				t.Fatalf("git apply --check: %v: %s", err, out)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			// Built once per test run: the campaign tests of seeded bugs reuse it (or built it).
			bin := buildcache.Operator(t, b.Patch, func(out string) error { return BuildOperator(ctx, root, b.Patch, out) })
			if _, err := os.Stat(bin); err != nil {
				t.Fatal(err)
			}
		})
	}
	if after := gitStatus(t, root); after != before {
		t.Errorf("the work tree changed while building patched operators:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func gitStatus(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command("git", "status", "--porcelain", "--", "operator", "cmd")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		testenv.Unavailable(t, "git status: %v", err)
	}
	return string(out)
}

// TestBenchBugs is the seeded-bug benchmark (`make bench-bugs`): a short
// campaign against the clean operator and against each seeded bug, printing
// the table. Select bugs with GAUNTLET_BENCH_BUGS=01-resources-ignored,… .
func TestBenchBugs(t *testing.T) {
	if os.Getenv("GAUNTLET_BENCH_BUGS_RUN") == "" {
		testenv.Skip(t, testenv.OptIn, "the seeded-bug benchmark runs a campaign per bug (about 20 minutes): run it with `make bench-bugs`")
	}
	testenv.NeedE2E(t, backends.ControlPlaneBinDir())
	o := Options{RepoRoot: repoRoot(t), WorkDir: t.TempDir(), SkipClean: os.Getenv("GAUNTLET_BENCH_SKIP_CLEAN") != ""}
	if v := os.Getenv("GAUNTLET_BENCH_BUGS"); v != "" {
		o.Only = strings.Split(v, ",")
	}
	if v := os.Getenv("GAUNTLET_BENCH_OUT"); v != "" {
		o.WorkDir = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	rows, err := Run(ctx, o)
	var b strings.Builder
	if werr := WriteTable(&b, rows); werr != nil {
		t.Fatal(werr)
	}
	t.Log("\n" + b.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		switch {
		case r.Err != nil:
			t.Errorf("%s: campaign failed: %v", r.Bug, r.Err)
		case isClean(r.Bug) && r.Alarms > 0:
			for _, g := range r.Result.Groups {
				t.Errorf("alarm on the clean operator: %s %s: %s (steps %v)", g.Oracle, g.Signature, g.Summary, g.Steps)
			}
		case !isClean(r.Bug) && !r.CaughtAsExpected():
			t.Errorf("seeded bug %s missed: expected one of %v to raise an alarm, got %v (misoperation alarms new to it: %v)", r.Bug, r.Expect, r.Oracles, r.MisopNew)
		}
	}
}

func TestCaughtAndTable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		row    Row
		caught bool
		want   string
	}{
		{"bug alarm", Row{Bug: "x", Alarms: 1, Oracles: map[string]int{"consistency": 1}}, true, "x yes consistency(1)"},
		{"new misoperation alarm", Row{Bug: "x", MisopNew: map[string]int{"recovery": 2}}, true, "x yes (after a misoperation) recovery(2)"},
		{"only clean's misoperation alarms", Row{Bug: "x", Misop: map[string][]string{"health": {"h"}}, MisopNew: map[string]int{}}, false, "x no -"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.row.Caught(); got != tc.caught {
				t.Errorf("Caught() = %v, want %v", got, tc.caught)
			}
			var b strings.Builder
			if err := WriteTable(&b, []Row{{Bug: "clean"}, tc.row}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(strings.Fields(b.String()), " "), tc.want) || !strings.Contains(b.String(), "clean operator: 0 alarms (goal 0)") {
				t.Errorf("table:\n%s\nwant it to contain %q", b.String(), tc.want)
			}
		})
	}
}

func TestCaughtAsExpected(t *testing.T) {
	for _, tc := range []struct {
		name string
		row  Row
		want bool
	}{
		{"expected oracle", Row{Expect: []string{"durability"}, Oracles: map[string]int{"durability": 1}}, true},
		{"another oracle only", Row{Expect: []string{"durability"}, Oracles: map[string]int{"health": 2}}, false},
		{"expected after a misoperation", Row{Expect: []string{"recovery", "consistency"}, MisopNew: map[string]int{"recovery": 1}}, true},
		{"nothing", Row{Expect: []string{"roll-safety"}}, false},
		{"campaign failed", Row{Expect: []string{"x"}, Oracles: map[string]int{"x": 1}, Err: os.ErrClosed}, false},
		{"no expectation", Row{Oracles: map[string]int{"x": 1}}, false},
	} {
		if got := tc.row.CaughtAsExpected(); got != tc.want {
			t.Errorf("%s: CaughtAsExpected() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCleanCampaigns(t *testing.T) {
	bs := []Bug{
		{Name: "a", Cases: []string{"x", "y"}},
		{Name: "b", Cases: []string{"y", "z"}, Replicas: 3, Hold: time.Second, Faults: []campaign.FaultPlan{{Kind: campaign.FaultPodKill, Role: "primary"}}},
		{Name: "c", Cases: []string{"w"}, Replicas: 2, Hold: 5 * time.Second, Faults: []campaign.FaultPlan{{Kind: campaign.FaultPartition, Role: "replica"}}},
	}
	got := Clean(bs)
	if len(got) != 2 || got[0].Name != "clean" || got[1].Name != "clean-faults" {
		t.Fatalf("Clean = %+v, want clean and clean-faults", got)
	}
	if strings.Join(got[0].Cases, ",") != "x,y" || len(got[0].Faults) != 0 {
		t.Errorf("clean = %+v, want the fault-free bugs' cases and no faults", got[0])
	}
	f := got[1]
	if strings.Join(f.Cases, ",") != "w,y,z" || len(f.Faults) != 2 || f.Replicas != 3 || f.Hold != 5*time.Second {
		t.Errorf("clean-faults = %+v, want cases w,y,z, both fault scripts, 3 replicas, hold 5s", f)
	}
	if got := Clean(bs[:1]); len(got) != 1 {
		t.Errorf("without fault bugs there is one clean campaign, got %d", len(got))
	}
	cfg := campaign.Config{Target: &targets.Target{Seed: map[string]any{}}}
	bs[1].Apply(&cfg)
	if cfg.Faults == nil || len(cfg.Faults.Script) != 1 || cfg.Target.Seed["spec"].(map[string]any)["replicas"] != int64(3) {
		t.Errorf("Apply: faults %+v, seed %v", cfg.Faults, cfg.Target.Seed)
	}
}
