// Package bugs is the seeded-bug benchmark: it builds the bundled Valkey
// operator with each patch of operator/testdata/bugs applied (without touching
// the work tree: the patched files live in a temporary folder and reach the
// compiler through `go build -overlay`), runs a short campaign against each
// build and against the clean operator, and reports which oracle caught which
// bug.
package bugs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	corev1 "k8s.io/api/core/v1"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/cluster/backends"
	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// Dir is where the seeded bugs live, relative to the repository root.
const Dir = "operator/testdata/bugs"

// Bug is one seeded bug: a patch to the operator and the test cases that
// exercise it (plus a couple of unrelated ones).
type Bug struct {
	// Name is the patch's file name without ".patch" ("01-resources-ignored").
	Name string
	// Patch is the patch file's path.
	Patch string
	// Pattern is the Acto bug pattern it reproduces.
	Pattern string
	// Cases are the test case IDs the campaign runs.
	Cases []string
	// Expect lists the oracles expected to catch it: TestBenchBugs fails when none of them does.
	Expect []string
	// Replicas is the seed's spec.replicas (0: Seed's two pods).
	Replicas int64
	// Spec holds fields set in the seed's spec besides Seed's (nil: none).
	Spec map[string]any
	// Faults is the fault script of the campaign (nil: no faults); Hold how long lasting
	// faults hold (0: the campaign default).
	Faults []campaign.FaultPlan
	Hold   time.Duration
	// ViewFaults are fault kinds of the operator's view the campaign draws
	// (untuned: the view proxy on, the faults aimed by plans derived from the
	// campaign's own reference steps); nil: none.
	ViewFaults []string
	// Examples are example CRs added to the target's, whose values the plan
	// mines: they steer a generated case to a value the bug needs (a node
	// selector naming a node of the embedded cluster rather than a generated
	// one no node has).
	Examples []map[string]any
	// Trigger is what exercises the bug, read against an untuned campaign's
	// recorded steps (reached or not); the untuned mode ignores Cases,
	// Replicas, Spec, Faults and Examples.
	Trigger Trigger
}

// Apply adapts a benchmark campaign configuration to the bug: its seed size and faults.
func (b Bug) Apply(cfg *campaign.Config) {
	if b.Replicas > 0 || len(b.Spec) > 0 {
		spec := Seed()
		if b.Replicas > 0 {
			spec["replicas"] = b.Replicas
		}
		for k, v := range b.Spec {
			spec[k] = jsonv.Copy(v)
		}
		cfg.Target.Seed["spec"] = spec
	}
	if len(b.Faults) > 0 {
		cfg.Faults = &campaign.FaultOptions{Script: b.Faults, Hold: b.Hold}
	}
	if len(b.ViewFaults) > 0 {
		cfg.OperatorView = true
		cfg.Faults = &campaign.FaultOptions{Kinds: b.ViewFaults, Hold: b.Hold}
	}
	cfg.Target.Examples = append(cfg.Target.Examples, b.Examples...)
}

// Seed is the small desired state every benchmark campaign starts from: two
// pods (so that a PodDisruptionBudget exists), no persistence.
func Seed() map[string]any {
	return map[string]any{
		"replicas": int64(2),
		"image":    "valkey/valkey:8.1",
		"config":   map[string]any{"maxmemory": "100mb", "maxmemory-policy": "allkeys-lru"},
	}
}

// NodeSelectorExample is an example CR whose node selector names the embedded
// cluster's first node by its hostname label (every local cluster has node-1):
// mined into the plan, it makes spec.scheduling.nodeSelector#map/add-key set a
// key with a prefix ("kubernetes.io/hostname") to a value that keeps the pods
// schedulable.
func NodeSelectorExample() map[string]any {
	return map[string]any{
		"apiVersion": "valkey.gauntlet.dev/v1alpha1",
		"kind":       "ValkeyCluster",
		"metadata":   map[string]any{"name": "node-selector-example"},
		"spec": map[string]any{"scheduling": map[string]any{
			"nodeSelector": map[string]any{"kubernetes.io/hostname": "node-1"},
		}},
	}
}

// Catalog is what the benchmark knows about each patch (keyed by name).
var catalog = map[string]Bug{
	"01-resources-ignored": {Pattern: "a property the operator ignores",
		Cases: []string{"spec.resources#resources/raise", "spec.config#config/add-key"}, Expect: []string{"consistency"},
		Trigger: Trigger{What: "a valid step that sets spec.resources to a new, non-empty value",
			Changes: []Change{{Path: "spec.resources", Set: true}}}},
	"02-pdb-never-deleted": {Pattern: "a change that can't be undone (a feature that can't be disabled)",
		Cases: []string{"spec.podDisruptionBudget.enabled#boolean/flip", "spec.config#config/add-key"}, Expect: []string{"consistency", "differential"},
		Trigger: Trigger{What: "a valid step that sets spec.podDisruptionBudget.enabled to false, or spec.replicas to 1 (the PDB no longer wanted)",
			Changes: []Change{{Path: "spec.podDisruptionBudget.enabled", To: false}, {Path: "spec.replicas", To: int64(1)}}}},
	"03-sts-update-waits-for-ready": {Pattern: "a stuck state after a failed step blocks rollback",
		Cases: []string{"spec.replicas#replicas/beyond-capacity", "spec.config#config/add-key"}, Expect: []string{"recovery", "consistency"},
		Trigger: Trigger{What: "a change (apply or rollback) right after a step that left pods not ready (timed out, stuck, or not ready when it settled)",
			Unready: true, Misoperations: true}},
	"04-config-default-overrules-user": {Pattern: "a field merged so that the user's value is silently overruled",
		Cases: []string{"spec.config#config/change-key", "spec.config#config/add-key"}, Expect: []string{"consistency"},
		Trigger: Trigger{What: "a valid step that sets spec.config's maxmemory-policy (a key the operator has a default for) to a value other than that default, allkeys-lru",
			Changes: []Change{{Path: "spec.config.maxmemory-policy", Set: true, Not: "allkeys-lru"}}}},
	// The live keys are never applied when the pass that sees a new generation
	// ends before a primary serves: the seed's creation is such a pass, and the
	// system-state oracle reads the effective config (the measured tuned run
	// caught it with both).
	"05-config-edge-triggered": {Pattern: "a step skipped when the pass that should do it is cut short (level-triggering)",
		Cases: []string{"spec.config#config/add-key", "spec.config#config/change-key"}, Expect: []string{"differential", "system-state"},
		Trigger: Trigger{What: "a seed with spec.config (its live keys are due on the creation pass), or a valid spec.config change",
			Seed: "spec.config", Changes: []Change{{Path: "spec.config"}}}},
	"06-config-not-applied-live": {Pattern: "a config key written to the ConfigMap but never applied live (OAT)",
		Cases: []string{"spec.config#config/change-key", "spec.config#config/add-key"}, Expect: []string{"system-state"},
		Trigger: Trigger{What: "a seed with spec.config (a live key set on the primary), or a valid spec.config change",
			Seed: "spec.config", Changes: []Change{{Path: "spec.config"}}}},
	"07-failover-lowest-offset": {Pattern: "a failover that promotes the replica with the lowest offset (OAT)",
		// One replica lags behind a partition while the writes are acknowledged by the other;
		// then the primary crashes: only the replica with the highest offset holds them all.
		Cases: []string{"spec.config#config/add-key"}, Expect: []string{"durability"}, Replicas: 3, Hold: 10 * time.Second,
		Faults: []campaign.FaultPlan{{Kind: campaign.FaultPartition, Role: "replica", After: 4 * time.Second,
			Then: &campaign.FaultPlan{Kind: campaign.FaultContainerCrash, Role: "primary"}}},
		Trigger: Trigger{What: "a container-crash or pod-kill of the primary (a failover that chooses by offset)",
			Faults: []FaultTrigger{{Kind: string(campaign.FaultContainerCrash), Role: "primary"}, {Kind: string(campaign.FaultPodKill), Role: "primary"}}}},
	"08-unreachable-primary-keeps-label": {Pattern: "a returning old primary still labelled primary (split brain, OAT)",
		Cases: []string{"spec.config#config/add-key"}, Expect: []string{"split-brain"}, Replicas: 3, Hold: 12 * time.Second,
		Faults: []campaign.FaultPlan{{Kind: campaign.FaultPodFailure, Role: "primary"}},
		Trigger: Trigger{What: "a pod-failure (freeze) of the primary held 6 s or more (beyond failover.downAfter, 5 s: a failover while it is away)",
			Faults: []FaultTrigger{{Kind: string(campaign.FaultPodFailure), Role: "primary", MinHold: 6 * time.Second}}}},
	"09-roll-primary-before-sync": {Pattern: "a roll that restarts the primary before its replicas are in sync (Sieve/Anvil)",
		Cases: []string{"spec.image#image/downgrade"}, Expect: []string{"roll-safety"}, Replicas: 3,
		Trigger: Trigger{What: "with 3 pods or more, a valid change of a field in the pod template (image, resources, auth, TLS, security contexts, scheduling, grace period, exporter): a rolling restart",
			MinReplicas: 3, Changes: []Change{{Path: "spec.image"}, {Path: "spec.resources"}, {Path: "spec.auth"}, {Path: "spec.tls"}, {Path: "spec.containerSecurityContext"},
				{Path: "spec.podSecurityContext"}, {Path: "spec.scheduling"}, {Path: "spec.terminationGracePeriodSeconds"}, {Path: "spec.exporter"}}}},
	"10-node-selector-prefixed-keys-dropped": {Pattern: "a property the operator ignores for some keys (map keys with a prefix: kubernetes.io/hostname)",
		Cases: []string{"spec.scheduling.nodeSelector#map/add-key", "spec.config#config/add-key"}, Expect: []string{"consistency"},
		// An empty selector in the seed (no constraint) makes the case change one key of a map
		// that exists, so the step's changed path is the quoted key itself, not spec.scheduling.
		Spec:     map[string]any{"scheduling": map[string]any{"nodeSelector": map[string]any{}}},
		Examples: []map[string]any{NodeSelectorExample()},
		Trigger: Trigger{What: "a valid step that adds a spec.scheduling.nodeSelector key with a prefix (a key holding \"/\")",
			Changes: []Change{{Path: "spec.scheduling.nodeSelector", NewKey: "/"}}}},
	// The window between the acknowledging status write and the StatefulSet's
	// update is milliseconds wide: a crash at a random moment (operator-crash)
	// almost never lands in it; a crash after the operator's first status write
	// of a step, derived from a reference step's view record, always does.
	"11-scale-acknowledged-before-done": {Pattern: "a status written before the change it records is made (Sieve's intermediate states)",
		Cases: []string{"spec.replicas#replicas/scale-up-down", "spec.replicas#replicas/scale-down-up"}, Expect: []string{"consistency", "health"},
		ViewFaults: []string{campaign.FaultCrashAfterWrite},
		Trigger: Trigger{What: "a crash-after-write right after the operator's status write in a step that changes spec.replicas",
			Faults: []FaultTrigger{{Kind: campaign.FaultCrashAfterWrite}}}},
}

// Load lists the seeded bugs under repoRoot/Dir, in name order.
func Load(repoRoot string) ([]Bug, error) {
	files, err := filepath.Glob(filepath.Join(repoRoot, Dir, "*.patch"))
	if err != nil {
		return nil, fmt.Errorf("list seeded bugs: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no seeded bug patches in %s: is repoRoot the Gauntlet repository?", filepath.Join(repoRoot, Dir))
	}
	sort.Strings(files)
	var out []Bug
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".patch")
		b, ok := catalog[name]
		if !ok {
			return nil, fmt.Errorf("seeded bug %s has no entry in the benchmark's catalog: add its test cases to bench/bugs", name)
		}
		b.Name, b.Patch = name, f
		out = append(out, b)
	}
	return out, nil
}

// Clean is the clean operator's campaigns: the union of the fault-free bugs'
// test cases at the small seed ("clean"), and, when bugs use faults or a larger
// seed, the union of those bugs' cases with all their fault scripts at the
// largest seed ("clean-faults"), and the bugs drawing faults of the
// operator's view with all their kinds ("clean-view").
func Clean(bs []Bug) []Bug {
	var plain, oat, views []Bug
	for _, b := range bs {
		if len(b.ViewFaults) > 0 {
			views = append(views, b)
			continue
		}
		if len(b.Faults) > 0 || b.Replicas > 0 {
			oat = append(oat, b)
		} else {
			plain = append(plain, b)
		}
	}
	out := []Bug{{Name: "clean", Pattern: "the clean operator", Cases: CleanCases(plain), Examples: cleanExamples(plain), Spec: cleanSpec(plain)}}
	if len(oat) > 0 {
		c := Bug{Name: "clean-faults", Pattern: "the clean operator under faults", Cases: CleanCases(oat), Examples: cleanExamples(oat), Spec: cleanSpec(oat)}
		for _, b := range oat {
			c.Faults = append(c.Faults, b.Faults...)
			c.Replicas = max(c.Replicas, b.Replicas)
			c.Hold = max(c.Hold, b.Hold)
		}
		out = append(out, c)
	}
	if len(views) > 0 {
		c := Bug{Name: "clean-view", Pattern: "the clean operator under faults of its view", Cases: CleanCases(views), Examples: cleanExamples(views), Spec: cleanSpec(views)}
		for _, b := range views {
			for _, k := range b.ViewFaults {
				if !slices.Contains(c.ViewFaults, k) {
					c.ViewFaults = append(c.ViewFaults, k)
				}
			}
			c.Replicas = max(c.Replicas, b.Replicas)
			c.Hold = max(c.Hold, b.Hold)
		}
		out = append(out, c)
	}
	return out
}

// CleanCases is the union of the bugs' test cases.
func CleanCases(bs []Bug) []string {
	seen := map[string]bool{}
	var out []string
	for _, b := range bs {
		for _, c := range b.Cases {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	sort.Strings(out)
	return out
}

// cleanSpec is the union of the bugs' seed fields (the first bug setting a
// field wins: bugs set fields that change nothing for the others' cases).
func cleanSpec(bs []Bug) map[string]any {
	var out map[string]any
	for _, b := range bs {
		for k, v := range b.Spec {
			if out == nil {
				out = map[string]any{}
			}
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
	return out
}

// cleanExamples is the union of the bugs' example CRs (by name), so that the
// clean operator's campaign runs the cases as the bugs' campaigns do.
func cleanExamples(bs []Bug) []map[string]any {
	seen := map[string]bool{}
	var out []map[string]any
	for _, b := range bs {
		for _, ex := range b.Examples {
			md, _ := ex["metadata"].(map[string]any)
			name, _ := md["name"].(string)
			if !seen[name] {
				seen[name] = true
				out = append(out, ex)
			}
		}
	}
	return out
}

// patchedFiles lists the files a unified diff changes (its "+++ b/…" lines).
func patchedFiles(patch []byte) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(patch))
	for sc.Scan() {
		l := sc.Text()
		if p, ok := strings.CutPrefix(l, "+++ "); ok {
			p, _, _ = strings.Cut(p, "\t")
			p = strings.TrimPrefix(strings.TrimSpace(p), "b/")
			if p == "/dev/null" || strings.Contains(p, "..") {
				return nil, fmt.Errorf("patch line %q: only changes to existing files inside the repository are supported", l)
			}
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the patch changes no file (no \"+++ b/…\" line)")
	}
	return out, sc.Err()
}

// BuildOperator builds ./cmd/valkey-operator with patch applied into out,
// leaving the work tree untouched: the files the patch changes are copied into
// a temporary folder, patched there with `git apply`, and handed to the
// compiler with `go build -overlay`. An empty patch builds the clean operator.
func BuildOperator(ctx context.Context, repoRoot, patch, out string) error {
	args := []string{"build", "-o", out}
	if patch != "" {
		data, err := os.ReadFile(patch)
		if err != nil {
			return fmt.Errorf("read patch: %w", err)
		}
		files, err := patchedFiles(data)
		if err != nil {
			return fmt.Errorf("patch %s: %w", patch, err)
		}
		tmp, err := os.MkdirTemp("", "gauntlet-bug-")
		if err != nil {
			return fmt.Errorf("temporary tree for the patch: %w", err)
		}
		defer os.RemoveAll(tmp)
		overlay := map[string]string{}
		for _, f := range files {
			src := filepath.Join(repoRoot, f)
			b, err := os.ReadFile(src)
			if err != nil {
				return fmt.Errorf("patch %s: %w", patch, err)
			}
			dst := filepath.Join(tmp, "tree", f)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return fmt.Errorf("temporary tree: %w", err)
			}
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				return fmt.Errorf("temporary tree: %w", err)
			}
			overlay[src] = dst
		}
		abs, err := filepath.Abs(patch)
		if err != nil {
			return err
		}
		apply := exec.CommandContext(ctx, "git", "apply", "-p1", abs)
		apply.Dir = filepath.Join(tmp, "tree")
		apply.Env = append(os.Environ(), "GIT_DIR=/nonexistent", "GIT_CEILING_DIRECTORIES="+tmp)
		if o, err := apply.CombinedOutput(); err != nil {
			return fmt.Errorf("patch %s does not apply to the current operator source (refresh it): %w: %s", patch, err, o)
		}
		ov, err := json.Marshal(map[string]any{"Replace": overlay})
		if err != nil {
			return err
		}
		ovFile := filepath.Join(tmp, "overlay.json")
		if err := os.WriteFile(ovFile, ov, 0o644); err != nil {
			return fmt.Errorf("overlay file: %w", err)
		}
		args = append(args, "-overlay", ovFile)
	}
	args = append(args, "./cmd/valkey-operator")
	build := exec.CommandContext(ctx, "go", args...)
	build.Dir = repoRoot
	if o, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the operator (patch %q): %w: %s", patch, err, o)
	}
	return nil
}

// Options configure a benchmark run.
type Options struct {
	// RepoRoot is the Gauntlet repository (required).
	RepoRoot string
	// WorkDir holds binaries, cluster state and results (required).
	WorkDir string
	// Only restricts the run to these bug names (empty: every bug).
	Only []string
	// SkipClean skips the campaign against the clean operator.
	SkipClean bool
	// Workers per campaign (default 1).
	Workers int
	// Minimize asks for minimized reproducers (slower).
	Minimize bool
	// GoTests asks for a generated Go regression test per alarm group.
	GoTests bool
	// Timeout bounds each campaign (default 6 minutes).
	Timeout time.Duration
	// Log receives diagnostics (default: discarded).
	Log *slog.Logger
	// Progress receives the campaigns' progress lines (optional).
	Progress io.Writer
}

// Row is the outcome of one campaign.
type Row struct {
	Bug     string
	Pattern string
	Expect  []string
	// Err is set when the campaign could not run.
	Err error
	// Alarms counts alarm groups (misoperations excluded).
	Alarms int
	// Oracles lists the oracles that raised an alarm, with the group counts.
	Oracles map[string]int
	// Misop holds the signatures of alarm groups raised on misoperation steps
	// (or their rollbacks), by oracle; MisopNew the ones absent from the clean
	// operator's run (set by Run when the clean run is part of it).
	Misop    map[string][]string
	MisopNew map[string]int
	// FirstStep is the first step with an alarm ("w0/s1").
	FirstStep string
	// Steps is the number of desired-state steps done.
	Steps    int
	Duration time.Duration
	// Dir is the campaign's results folder.
	Dir string
	// Result is the campaign result.
	Result *campaign.Result
}

// Caught reports whether any alarm was raised.
// Alarms on misoperation steps count only when the clean operator's run did not
// raise the same signature (a misoperation itself may leave the system
// unhealthy; failing to recover after its rollback is a bug).
func (r Row) Caught() bool { return r.Err == nil && (r.Alarms > 0 || len(r.MisopNew) > 0) }

// CaughtAsExpected reports whether one of the expected oracles raised an alarm
// (a bug group, or a misoperation group the clean operator did not raise).
// A row without expectations (the clean operator) never is.
func (r Row) CaughtAsExpected() bool {
	if r.Err != nil {
		return false
	}
	for _, o := range r.Expect {
		if r.Oracles[o] > 0 || r.MisopNew[o] > 0 {
			return true
		}
	}
	return false
}

// Config is the campaign configuration the benchmark uses for a bug's cases
// with the given operator binary; exposed so tests and `gauntlet reproduce`
// runs use the same settings.
func Config(repoRoot, stateDir, outDir, binary string, cases []string, workers int, log *slog.Logger) (campaign.Config, error) {
	tg, err := targets.Valkey(repoRoot)
	if err != nil {
		return campaign.Config{}, err
	}
	tg.Seed["spec"] = Seed()
	want := map[string]bool{}
	props := map[string]bool{}
	for _, c := range cases {
		want[c] = true
		p, _, _ := strings.Cut(c, "#")
		props[p] = true
	}
	tg.Properties = nil
	for p := range props {
		tg.Properties = append(tg.Properties, p)
	}
	sort.Strings(tg.Properties)
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if workers <= 0 {
		workers = 1
	}
	prov, err := backends.Open(context.Background(), backends.Local, backends.Options{StateRoot: stateDir, OperatorBinary: binary, Log: log, Nodes: 1,
		// A small node: a scale beyond capacity leaves pods Pending instead of
		// starting a hundred servers on a two-core machine.
		NodeCapacity: corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse("4"),
			corev1.ResourceMemory:           resource.MustParse("8Gi"),
			corev1.ResourcePods:             resource.MustParse("6"),
			corev1.ResourceEphemeralStorage: resource.MustParse("50Gi"),
		}})
	if err != nil {
		return campaign.Config{}, err
	}
	return campaign.Config{Target: tg, Provider: prov, Workers: workers, Seed: 7, Order: campaign.OrderPlan, OutDir: outDir, Stability: time.Second, Quiet: true,
		CaseFilter: func(tc *inputgen.TestCase) bool { return want[tc.ID] }}, nil
}

// RunOne builds the operator with b's patch (b.Patch empty: the clean
// operator) and runs its campaign.
func RunOne(ctx context.Context, o Options, b Bug) (row Row) {
	row = Row{Bug: b.Name, Pattern: b.Pattern, Expect: b.Expect, Oracles: map[string]int{}, Misop: map[string][]string{}}
	start := time.Now()
	defer func() { row.Duration = time.Since(start) }()
	dir := filepath.Join(o.WorkDir, b.Name)
	if err := os.RemoveAll(dir); err != nil {
		row.Err = err
		return row
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		row.Err = err
		return row
	}
	bin := filepath.Join(dir, "valkey-operator")
	if err := BuildOperator(ctx, o.RepoRoot, b.Patch, bin); err != nil {
		row.Err = err
		return row
	}
	row.Dir = filepath.Join(dir, "results")
	cfg, err := Config(o.RepoRoot, filepath.Join(dir, "state"), row.Dir, bin, b.Cases, o.Workers, o.Log)
	if err != nil {
		row.Err = err
		return row
	}
	b.Apply(&cfg)
	cfg.NoMinimize = !o.Minimize
	cfg.GoTests = o.GoTests
	cfg.Logger = o.Log
	if o.Progress != nil {
		cfg.Progress, cfg.Quiet = o.Progress, false
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 6 * time.Minute
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := campaign.Run(cctx, cfg)
	if err != nil {
		row.Err = err
		return row
	}
	row.Result = res
	row.Steps = res.Done
	first := ""
	for _, g := range res.Groups {
		if g.Misoperation {
			// A misoperation group is one per cause: file it under each oracle
			// its findings come from (recovery, consistency, ...), as the
			// expected oracles name them.
			seen := map[string]bool{}
			for _, f := range g.Findings {
				if !seen[f.Oracle] {
					seen[f.Oracle] = true
					row.Misop[f.Oracle] = append(row.Misop[f.Oracle], g.Signature)
				}
			}
			if len(seen) == 0 {
				row.Misop[g.Oracle] = append(row.Misop[g.Oracle], g.Signature)
			}
		} else {
			row.Alarms++
			row.Oracles[g.Oracle]++
		}
		for _, s := range g.Steps {
			if first == "" || stepLess(s, first) {
				first = s
			}
		}
	}
	row.FirstStep = first
	return row
}

// stepLess orders step IDs "w0/s2" by worker then step number.
func stepLess(a, b string) bool {
	var wa, sa, wb, sb int
	_, ea := fmt.Sscanf(a, "w%d/s%d", &wa, &sa)
	_, eb := fmt.Sscanf(b, "w%d/s%d", &wb, &sb)
	if ea != nil || eb != nil {
		return a < b
	}
	if sa != sb {
		return sa < sb
	}
	return wa < wb
}

// Run runs the clean operator's campaign and every selected bug's, in order.
// The clean row (Bug "clean") comes first unless SkipClean.
func Run(ctx context.Context, o Options) ([]Row, error) {
	bs, err := Load(o.RepoRoot)
	if err != nil {
		return nil, err
	}
	if len(o.Only) > 0 {
		only := map[string]bool{}
		for _, n := range o.Only {
			only[n] = true
		}
		var sel []Bug
		for _, b := range bs {
			if only[b.Name] {
				sel = append(sel, b)
			}
		}
		if len(sel) == 0 {
			return nil, fmt.Errorf("no seeded bug named %v", o.Only)
		}
		bs = sel
	}
	var rows []Row
	if !o.SkipClean {
		all, _ := Load(o.RepoRoot)
		for _, c := range Clean(all) {
			rows = append(rows, RunOne(ctx, o, c))
		}
	}
	for _, b := range bs {
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
		rows = append(rows, RunOne(ctx, o, b))
	}
	if !o.SkipClean {
		cleanSigs := map[string]bool{}
		for _, r := range rows {
			if !isClean(r.Bug) {
				continue
			}
			for _, sigs := range r.Misop {
				for _, sg := range sigs {
					cleanSigs[sg] = true
				}
			}
		}
		for i := range rows {
			if isClean(rows[i].Bug) {
				continue
			}
			rows[i].MisopNew = map[string]int{}
			for oracle, sigs := range rows[i].Misop {
				for _, sg := range sigs {
					if !cleanSigs[sg] {
						rows[i].MisopNew[oracle]++
					}
				}
			}
		}
	}
	return rows, nil
}

// WriteTable prints the benchmark table and the clean operator's alarm count.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "bug\tcaught?\toracles\tfirst step\tsteps\ttime\texpected")
	var cleans []Row
	for _, r := range rows {
		if isClean(r.Bug) {
			cleans = append(cleans, r)
			continue
		}
		caught := "no"
		oracles := oracleList(r.Oracles)
		switch {
		case r.Alarms > 0:
			caught = "yes"
		case r.Caught():
			caught = "yes (after a misoperation)"
			oracles = oracleList(r.MisopNew)
		}
		if r.Err != nil {
			caught = "error: " + firstLine(r.Err.Error())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Bug, caught, oracles, orDash(r.FirstStep), r.Steps, r.Duration.Round(time.Second), strings.Join(r.Expect, ","))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, clean := range cleans {
		var err error
		if clean.Err != nil {
			_, err = fmt.Fprintf(w, "%s operator: campaign failed: %v\n", clean.Bug, clean.Err)
		} else {
			_, err = fmt.Fprintf(w, "%s operator: %d alarms (goal 0) %s; %d steps in %s\n", clean.Bug, clean.Alarms, oracleList(clean.Oracles), clean.Steps, clean.Duration.Round(time.Second))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// isClean reports whether a row is one of the clean operator's campaigns.
func isClean(name string) bool { return strings.HasPrefix(name, "clean") }

func oracleList(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s(%d)", k, m[k]))
	}
	return strings.Join(parts, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}
