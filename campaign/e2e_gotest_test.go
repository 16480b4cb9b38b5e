package campaign_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/bench/bugs"
	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/internal/testing/bugcampaign"
	"github.com/gauntlet-dev/gauntlet/internal/testing/localenv"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/replay"
	"github.com/gauntlet-dev/gauntlet/reports"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// gotestAlarm is the alarm group a real campaign of seeded bug 04 wrote
// (alarms/N/group.json, with its minimized and confirmed reproducer): run
// TestE2ECatchesSeededBug with GAUNTLET_E2E_KEEP=DIR and copy
// DIR/results/alarms/N/group.json of its consistency group to refresh it.
const gotestAlarm = "testdata/gotest/04-config-default-overrules-user.group.json"

// TestE2EGeneratedGoTest proves that the Go regression test gauntlet writes
// for an alarm runs on its own, outside this repository. It generates the
// test of seeded bug 04's consistency alarm (recorded from a real campaign,
// see gotestAlarm) exactly as `gauntlet run --go-tests` does, writes it into
// a fresh module that requires github.com/gauntlet-dev/gauntlet through a
// replace to this checkout (with this repository's go.sum, and GOPROXY=off:
// nothing is downloaded), builds it there with `go test -c` (go test's build and
// vet checks) and runs the test binary twice with no KUBECONFIG,
// so that the test kit brings up an embedded cluster and deploys the
// built-in Valkey target itself: with the operator built with the bug the
// test must fail naming the invariant and the alarm; with the clean operator
// it must pass.
func TestE2EGeneratedGoTest(t *testing.T) {
	t.Parallel() // each campaign has its own clusters (unique names, CIDRs under the host lock) and state root
	root := localenv.Repo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	// The Go test, generated from the recorded alarm as the campaign does.
	var g campaign.AlarmGroup
	raw, err := os.ReadFile(gotestAlarm)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatalf("%s: %v", gotestAlarm, err)
	}
	tg, err := targets.Valkey(root)
	if err != nil {
		t.Fatal(err)
	}
	rep, ok := campaign.GoTestReproducer(&g, replay.CRDRef{Group: "valkey.gauntlet.dev", Version: tg.Version, Kind: tg.Kind}, gotestAlarm)
	if !ok {
		t.Fatalf("%s holds no reproducer", gotestAlarm)
	}
	buggy, _ := runGeneratedGoTest(ctx, t, root, rep, "04-config-default-overrules-user")
	for _, want := range []string{`the invariant "the state reflects the desired value in one of the fields the alarm names" does not hold`,
		"is reflected by none of the fields the alarm names", "consistency alarm " + rep.Signature} {
		if !strings.Contains(buggy, want) {
			t.Errorf("the failing run's output lacks %q", want)
		}
	}
}

// TestE2EGeneratedGoTestFault proves that a generated Go test replays the
// fault of a fault-driven seeded bug and judges it as the campaign did: the
// reproducer of bug 08 (the operator does not unlabel a primary it cannot
// reach) is the benchmark's seed and one fault step that freezes the primary
// for the benchmark's hold (pod-failure, role primary), and its alarm is the
// split-brain oracle's two pods labelled primary at once — which no check of
// the final state can see: the old primary is unlabelled once it thaws. The
// generated test must fail against the operator with the bug, naming the
// signature, and pass against the clean one.
func TestE2EGeneratedGoTestFault(t *testing.T) {
	t.Parallel() // each run has its own cluster and state root
	root := localenv.Repo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	const bug = "08-unreachable-primary-keeps-label"
	b := bugcampaign.Find(t, root, bug)
	if len(b.Faults) != 1 || b.Faults[0].Kind != campaign.FaultPodFailure {
		t.Fatalf("bug %s's benchmark faults changed (%+v): update this test", bug, b.Faults)
	}
	tg, err := targets.Valkey(root)
	if err != nil {
		t.Fatal(err)
	}
	cfg := campaign.Config{Target: tg}
	tg.Seed["spec"] = bugs.Seed()
	b.Apply(&cfg)
	fault := b.Faults[0]
	fault.Hold = b.Hold
	rep := replay.Reproducer{
		Name: "Gauntlet1", Package: "gauntlet_test", Target: "builtin:valkey", Namespace: "gauntlet-repro",
		CRD:    replay.CRDRef{Group: "valkey.gauntlet.dev", Version: tg.Version, Kind: tg.Kind},
		Seed:   tg.Seed,
		Steps:  []replay.Step{{Kind: model.StepFault, Desired: tg.Seed, Fault: &fault}},
		Oracle: "split-brain", Signature: model.Signature("split-brain", "label"),
		Summary: "split brain: two pods were labelled primary at once",
	}
	buggy, clean := runGeneratedGoTest(ctx, t, root, rep, bug)
	for _, want := range []string{"fault pod-failure on primary", "the split-brain oracle raised " + rep.Signature} {
		if !strings.Contains(buggy, want) {
			t.Errorf("the failing run's output lacks %q", want)
		}
	}
	if !strings.Contains(clean, "fault pod-failure on primary") {
		t.Errorf("the passing run injected no pod-failure into the primary")
	}
}

// runGeneratedGoTest generates rep's Go test as `gauntlet run --go-tests`
// does, writes it into a fresh module that requires
// github.com/gauntlet-dev/gauntlet through a replace to this checkout (with
// this repository's go.sum, and GOPROXY=off: nothing is downloaded), builds its
// test binary there once with `go test -c` (go test's build, vet checks included)
// and runs it twice, side by side, as go test runs it (in the module's folder),
// with no KUBECONFIG, so that the test kit
// brings up an embedded cluster (one per run) and deploys the built-in Valkey
// target itself: with the operator built with the seeded bug the test must
// fail; with the clean operator it must pass. It returns both runs' output.
func runGeneratedGoTest(ctx context.Context, t *testing.T, root string, rep replay.Reproducer, bug string) (buggyOut, cleanOut string) {
	t.Helper()
	clean := localenv.Operator(t, root)
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	testenv.NeedFile(t, goBin, "the go command that runs this test")
	var src bytes.Buffer
	if err := reports.WriteGoTest(&src, rep); err != nil {
		t.Fatalf("generate the Go test: %v", err)
	}
	test := "TestReproduce" + rep.Name // "Gauntlet<ID>"

	// A module of its own, as a user keeps the generated tests.
	work := t.TempDir()
	mod := filepath.Join(work, "regressions")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	goVersion := strings.TrimPrefix(runtime.Version(), "go")
	// The module requires what this repository's go.mod does (its build list,
	// so the go command needs no other module's go.mod: with GOPROXY=off and a
	// cold module cache, resolving the graph afresh (-mod=mod) needed go.mod
	// files no build here had downloaded).
	rootMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := string(rootMod)
	if i := strings.Index(reqs, "\nrequire"); i >= 0 {
		reqs = reqs[i+1:]
	} else {
		t.Fatalf("%s/go.mod has no require block", root)
	}
	gomod := fmt.Sprintf("module example.com/regressions\n\ngo %s\n\nrequire github.com/gauntlet-dev/gauntlet v0.0.0\n\n%s\nreplace github.com/gauntlet-dev/gauntlet => %s\n", goVersion, reqs, root)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, reports.GoTestFileName(rep): src.Bytes()} {
		if err := os.WriteFile(filepath.Join(mod, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The operator with the seeded bug.
	t0 := time.Now()
	buggy := bugcampaign.Operator(ctx, t, root, bugcampaign.Find(t, root, bug).Patch)
	t.Logf("the operator with seeded bug %s built (or built by another test of this run) in %v", bug, time.Since(t0).Round(time.Second))

	// go test's build of the module's test (with go test's vet checks), once: the two runs
	// below run the same test binary, as go test would after building it.
	env := []string{"GOFLAGS=-mod=readonly", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local"}
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "KUBECONFIG", "GAUNTLET_TARGET", "GAUNTLET_NAMESPACE", "GAUNTLET_REPO", "GOFLAGS", "GOPROXY", "GOWORK", "GOTOOLCHAIN":
		default:
			env = append(env, kv)
		}
	}
	t0 = time.Now()
	testBin := filepath.Join(work, "regressions.test")
	build := exec.CommandContext(ctx, goBin, "test", "-c", "-o", testBin, ".")
	build.Dir, build.Env = mod, env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c in the generated test's module: %v\n%s", err, out)
	}
	t.Logf("go test -c built the generated test in %v", time.Since(t0).Round(time.Second))

	goTest := func(operator, stateDir string) (string, error, time.Duration) {
		start := time.Now()
		cmd := exec.CommandContext(ctx, testBin, "-test.count=1", "-test.v", "-test.timeout=15m")
		cmd.Dir = mod // where go test runs a package's test binary
		state := filepath.Join(work, stateDir)
		cmd.Env = append(slices.Clone(env), "GAUNTLET_OPERATOR_BINARY="+operator, "GAUNTLET_STATE_DIR="+state)
		out, err := cmd.CombinedOutput()
		return string(out), err, time.Since(start)
	}

	// The two runs side by side, each with its own embedded cluster.
	type run struct {
		out  string
		err  error
		took time.Duration
	}
	var bugRun, cleanRun run
	var wg sync.WaitGroup
	wg.Go(func() { bugRun.out, bugRun.err, bugRun.took = goTest(buggy, "state-bug") })
	wg.Go(func() { cleanRun.out, cleanRun.err, cleanRun.took = goTest(clean, "state-clean") })
	wg.Wait()
	t.Logf("the generated test against the operator with seeded bug %s (%v):\n%s", bug, bugRun.took.Round(time.Second), bugRun.out)
	t.Logf("the generated test against the clean operator (%v):\n%s", cleanRun.took.Round(time.Second), cleanRun.out)
	if bugRun.err == nil {
		t.Fatalf("the generated test passed against the operator with seeded bug %s", bug)
	}
	if !strings.Contains(bugRun.out, "--- FAIL: "+test) {
		t.Errorf("the failing run's output lacks %q", "--- FAIL: "+test)
	}
	if cleanRun.err != nil || !strings.Contains(cleanRun.out, "--- PASS: "+test) {
		t.Fatalf("the generated test did not pass against the clean operator: %v", cleanRun.err)
	}
	return bugRun.out, cleanRun.out
}

// TestGoTestReproducer: the Go test's reproducer is the recorded one (seed,
// steps, their recreations and fault plans) named after its group, with the
// CRD, the test's namespace, the group's evidence and the alarm folder; a
// fault the recorded run's back end could not inject is dropped; a target
// file's path is made absolute.
func TestGoTestReproducer(t *testing.T) {
	d := func(n int) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": "vk"}, "spec": map[string]any{"replicas": n}}
	}
	partition := &campaign.FaultPlan{Kind: "partition", Role: "replica", Pick: 3, Persistent: true, Hold: 8 * time.Second}
	kill := &campaign.FaultPlan{Kind: "pod-kill", Role: "primary", Pick: 9}
	failure := &campaign.FaultPlan{Kind: "pod-failure", Role: "replica"}
	g := &campaign.AlarmGroup{ID: 7, Findings: []model.Finding{{Evidence: []model.Evidence{{Detail: "x"}}}}, Reproducer: &campaign.Reproducer{
		Signature: "health-1", Oracle: "health", Summary: "pods crash", Target: "targets/my-operator.yaml", Seed: d(1),
		Steps: []campaign.ReproStep{
			{Kind: model.StepApply, Desired: d(2), Fault: partition, Faults: []model.Fault{{Kind: "partition", Targets: []string{"replica ns/vk-1"}, Persistent: true}}},
			{Kind: model.StepRecreate, Desired: d(3), Recreate: true},
			{Kind: model.StepFault, Desired: d(3), Fault: kill, Faults: []model.Fault{{Kind: "pod-kill", Targets: []string{"primary ns/vk-0"}}}},
			{Kind: model.StepFault, Desired: d(3), Fault: failure, Faults: []model.Fault{{Kind: "pod-failure", Targets: []string{"vk-2"}, Unsupported: "no"}}},
		},
	}}
	rep, ok := campaign.GoTestReproducer(g, replay.CRDRef{Version: "v1", Kind: "ValkeyCluster"}, "results/alarms/7")
	if !ok {
		t.Fatal("no reproducer")
	}
	abs, _ := filepath.Abs("targets/my-operator.yaml")
	if rep.Name != "Gauntlet7" || rep.Package != "gauntlet_test" || rep.Namespace != "gauntlet-repro" || rep.Target != abs || len(rep.Steps) != 4 ||
		rep.CRD.Kind != "ValkeyCluster" || rep.ReplayDir != "results/alarms/7" || len(rep.Evidence) != 1 ||
		rep.Steps[0].Fault != partition || !rep.Steps[1].Recreate || rep.Steps[2].Fault != kill || rep.Steps[3].Fault != nil {
		t.Errorf("GoTestReproducer = %+v", rep)
	}
	if g.Reproducer.Steps[3].Fault != failure || g.Reproducer.Name != "" {
		t.Error("GoTestReproducer changed the group's reproducer")
	}
	if _, ok := campaign.GoTestReproducer(&campaign.AlarmGroup{ID: 1}, replay.CRDRef{}, ""); ok {
		t.Error("a group without a reproducer gave one")
	}
	g.Reproducer.Target = "builtin:valkey"
	if rep, _ := campaign.GoTestReproducer(g, replay.CRDRef{}, ""); rep.Target != "builtin:valkey" {
		t.Errorf("built-in target became %q", rep.Target)
	}
}
