package campaign

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/sync/errgroup"
	"golang.org/x/term"

	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/internal/atomicfile"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
	"github.com/gauntlet-dev/gauntlet/reports"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// ErrNoJournal is returned by a resume when the folder holds no journal.
var ErrNoJournal = errors.New("no journal.jsonl in the results folder: --resume needs the folder of a campaign that was started")

// PlanOptions are the generation options of a campaign's plan beyond the target and the seed.
type PlanOptions struct {
	// CoreValidator, when set, has the API server judge core-typed values
	// (inputgen.Options.CoreValidator). It changes the plan, so every shard of a
	// campaign must plan with it or every one without it; the journal records
	// which (StartRecord.CoreValidated).
	CoreValidator inputgen.CoreValidator
	// Lenient drops the seed's fields the CRD schema does not declare with a
	// warning instead of refusing the seed (inputgen.Options.Lenient).
	Lenient bool
	// Logger receives generation's warnings (the seed's dropped fields and
	// values scenarios cannot use); nil discards. SelectCases passes
	// Config.Logger when it is nil.
	Logger *slog.Logger
}

// Plan generates the target's plan with inputgen and keeps the test cases the
// target's property restriction wants.
func Plan(ctx context.Context, t *targets.Target, seed int64, po PlanOptions) (*inputgen.Plan, error) {
	s, err := t.Schema()
	if err != nil {
		return nil, err
	}
	pool := inputgen.NewPool()
	for path, vals := range t.Values {
		for _, v := range vals {
			pool.Add(path, v, inputgen.SourceTarget)
		}
	}
	opts := inputgen.Options{Seed: seed, Examples: t.Examples, Pool: pool, Dependencies: t.Dependencies, PodLabels: t.PodLabels,
		CoreValidator: po.CoreValidator, Lenient: po.Lenient, Logger: po.Logger}
	g, err := inputgen.NewGenerator(s, t.Seed, opts)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	p, err := g.Plan(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if po.Logger != nil {
		for _, want := range unmatchedProperties(t, p) {
			po.Logger.Warn("the target's property restriction names no property of the CRD schema: no test case targets it", "target", t.Name, "property", want)
		}
	}
	return p, nil
}

// unmatchedProperties are the entries of the target's property restriction
// (a target file's properties, an Acto config's focus_fields) that name no
// property of the plan, so that no test case can ever target them.
func unmatchedProperties(t *targets.Target, p *inputgen.Plan) []string {
	var out []string
	for _, want := range t.Properties {
		one := &targets.Target{Properties: []string{want}}
		if !slices.ContainsFunc(p.Properties, func(pc inputgen.PropertyCoverage) bool { return one.WantsProperty(pc.Path) }) {
			out = append(out, want)
		}
	}
	return out
}

// caseCost estimates how many desired states a test case declares.
func caseCost(tc *inputgen.TestCase) int {
	n := len(tc.Steps)
	if len(tc.Setup) > 0 {
		n++
	}
	if n == 0 {
		n = 1
	}
	return n
}

// Partition splits test cases over n workers so their planned steps balance
// (largest first onto the least loaded worker, ties to the lowest index), keeping
// plan order within each worker. It is deterministic.
func Partition(cases []*inputgen.TestCase, n int) [][]string {
	if n <= 0 {
		n = 1
	}
	idx := make([]int, len(cases))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return caseCost(cases[idx[a]]) > caseCost(cases[idx[b]]) })
	load := make([]int, n)
	owner := make([]int, len(cases))
	for _, i := range idx {
		w := 0
		for j := 1; j < n; j++ {
			if load[j] < load[w] {
				w = j
			}
		}
		owner[i] = w
		load[w] += caseCost(cases[i])
	}
	out := make([][]string, n)
	for i, tc := range cases {
		out[owner[i]] = append(out[owner[i]], tc.ID)
	}
	return out
}

// selectCases keeps the wanted test cases, in the given order, until maxSteps planned steps.
func selectCases(ordered []*inputgen.TestCase, t *targets.Target, maxSteps int, keep func(*inputgen.TestCase) bool) []*inputgen.TestCase {
	var out []*inputgen.TestCase
	total := 0
	for _, tc := range ordered {
		if !t.WantsProperty(tc.Property) || (keep != nil && !keep(tc)) {
			continue
		}
		if maxSteps > 0 && total+caseCost(tc) > maxSteps && total > 0 {
			continue
		}
		out = append(out, tc)
		total += caseCost(tc)
	}
	return out
}

// Run executes (or, with Config.Resume, continues) a campaign and writes its results folder.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if cfg.Target == nil || cfg.Provider == nil {
		return nil, errors.New("campaign: Config.Target and Config.Provider are required")
	}
	// A mask or oracle setting the oracles cannot honour is refused, not skipped.
	if err := OracleConfig(cfg.Target).Validate(); err != nil {
		return nil, fmt.Errorf("campaign: target %s: %w", cfg.Target.Name, err)
	}
	for _, w := range cfg.Target.Warnings {
		cfg.Logger.Warn("target setting not honoured", "target", cfg.Target.Name, "what", w)
		if !cfg.Quiet {
			fmt.Fprintln(cfg.Progress, "gauntlet: warning:", w)
		}
	}
	var err error
	if cfg.Provider, err = prepareImages(cfg.Provider, cfg.Target); err != nil {
		return nil, err
	}
	began := time.Now()
	dir := cfg.OutDir
	jpath, j, recs, err := openResults(cfg)
	if err != nil {
		return nil, err
	}
	defer j.Close()

	plan, start, ws, err := startOrResume(ctx, &cfg, j, recs)
	if err != nil {
		return nil, err
	}
	// The earlier runs' time: rates count every run's steps over every run's time.
	prior := ActiveTime(recs)
	if cfg.Resume {
		if err := j.Append(Record{Type: RecResume, Time: began.UTC()}); err != nil {
			return nil, err
		}
	}

	r := &runner{cfg: cfg, target: cfg.Target, journal: j, dir: dir, base: plan.Base, lastAppend: new(atomic.Int64), publishesGen: new(atomic.Bool), views: newViewPlans(),
		budget: newBudget(began, cfg.Budget), prior: prior, val: &validator{}, generated: &generatedMasks{},
		images: &knownImages{target: cfg.Target}}
	r.oracles = append(append([]oracles.Oracle{}, cfg.Oracles...), cfg.Target.Oracles...)
	for _, rec := range recs {
		if rec.Type == RecCalibration {
			r.masks = rec.Masks
		}
	}
	res := &Result{Dir: dir, Target: cfg.Target.Name, Seed: cfg.Seed, Workers: cfg.Workers, Started: began.UTC(), Planned: start.Planned, Budget: model.Budget(cfg.Budget),
		Shard: start.Shard}

	// Clusters: one per worker (or one shared), torn down at the end.
	envs, setup, err := r.startEnvs(ctx, cfg.Workers, runTag(dir, len(recs)))
	defer func() {
		for _, e := range uniqueEnvs(envs) {
			e.kube.stop()
			if derr := e.cluster.Delete(context.WithoutCancel(ctx)); derr != nil {
				cfg.Logger.Warn("delete cluster", "cluster", e.cluster.Name(), "err", derr)
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	res.Bench.SetupSeconds = setup.Seconds()
	if after := cfg.AfterSeed; after != nil {
		n := len(uniqueEnvs(envs))
		var once sync.Once
		r.cfg.AfterSeed = func(ctx context.Context, _ int) { once.Do(func() { after(ctx, n) }) }
	}

	if cfg.Faults != nil {
		r.faultKinds, res.UnsupportedFaults = supportedKinds(envs[0].inj, cfg.Faults.Kinds, len(cfg.Target.Operator.Command) > 0, envs[0].kube.view != nil)
		res.FaultKinds = r.faultKinds
		for _, u := range res.UnsupportedFaults {
			cfg.Logger.Warn("fault kind not injected", "why", u)
			if !cfg.Quiet {
				fmt.Fprintln(cfg.Progress, "gauntlet: fault kind not injected:", u)
			}
		}
	}
	prog := newProgress(cfg, start.Planned)
	for _, w := range ws {
		if w.Last != nil {
			prog.done.Add(int64(countApply(recs, w.Worker)))
		}
	}
	prog.alarms.Store(int64(countAlarms(recs)))
	prog.base = prog.done.Load() // the ETA's rate counts this run's steps only
	stopProg := prog.start()
	// At the budget's cutoff the iterations still running are abandoned (see budget).
	wctx := ctx
	if cut := r.budget.cutoff(); !cut.IsZero() {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, cut)
		defer cancel()
	}
	g, gctx := errgroup.WithContext(wctx)
	for w := range ws {
		if ws[w].Done {
			continue
		}
		g.Go(func() error { return r.runWorker(gctx, envs[w], w, plan, start.Assignments[w], ws[w], prog) })
	}
	err = g.Wait()
	stopProg()
	if err != nil && ctx.Err() == nil && wctx.Err() == nil {
		return nil, err
	}
	if err != nil && ctx.Err() == nil {
		// The budget's cutoff: the iterations in flight were abandoned.
		r.cfg.Logger.Info("the budget's cutoff abandoned the iterations in flight", "err", err)
		r.budget.stop(StopBudget)
	}
	if ctx.Err() != nil {
		// SIGINT or SIGTERM (the caller's context): the steps in flight were
		// abandoned before they were recorded; what was recorded is reported and
		// --resume continues from there.
		r.budget.stop(StopSignal)
	}
	if err := r.finish(ctx, envs, jpath, res, began); err != nil {
		return nil, err
	}
	prog.final(res)
	return res, nil
}

// finish ends a campaign after its workers: the differential re-runs, the
// simulated containers, collecting and grouping the alarms, minimizing them,
// and writing result.json, the alarm files, the reports and the end record.
func (r *runner) finish(ctx context.Context, envs []*env, jpath string, res *Result, began time.Time) error {
	// Calibration, differential re-runs.
	recs, _, err := ReadJournal(jpath)
	if err != nil {
		return err
	}
	if !r.cfg.NoDifferential && r.budget.reason() == "" {
		dctx, cancel := context.WithTimeout(ctx, r.budget.left(time.Now()))
		err := r.differential(dctx, envs, recs)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
			r.budget.stop(StopSignal)
		case err != nil && dctx.Err() != nil:
			r.budget.stop(StopBudget)
		case err != nil:
			return err
		}
		if recs, _, err = ReadJournal(jpath); err != nil {
			return err
		}
	}
	res.Simulated = simulatedContainers(context.WithoutCancel(ctx), envs, r.cfg.Logger)
	res.Masks = r.masksNow()
	res.Stopped = r.budget.reason()
	collect(res, recs)
	group(res)
	if left := r.budget.left(time.Now()); !r.cfg.NoMinimize && res.Stopped == "" && left > 0 {
		r.cfg.MinimizeBudget = min(r.cfg.MinimizeBudget, left)
		r.minimizeGroups(ctx, envs[0], res, recs)
	}
	res.Finished = time.Now().UTC()
	bench(res, time.Since(began), r.prior)
	if r.cfg.Gate != nil {
		var waited time.Duration
		res.Bench.BackoffWaits, waited = r.cfg.Gate.Stats()
		res.Bench.BackoffSeconds = waited.Seconds()
	}
	if err := r.writeAlarms(res); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(r.dir, "result.json"), res); err != nil {
		return err
	}
	report := r.cfg.Report
	if report == nil {
		names := make([]string, 0, len(r.oracles))
		for _, o := range r.oracles {
			names = append(names, o.Name())
		}
		report = func(dir string, res *Result) error { return WriteReports(dir, res, names, r.cfg.GoTests) }
	}
	if err := report(r.dir, res); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if res.Stopped == "" {
		if err := r.journal.Append(Record{Type: RecEnd}); err != nil {
			return err
		}
	}
	return nil
}

// openResults creates the results folder and opens its journal: a new one, or
// with Config.Resume the one a previous run left (whose records it returns).
func openResults(cfg Config) (jpath string, j *Journal, recs []Record, err error) {
	dir := cfg.OutDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, nil, fmt.Errorf("results folder: %w", err)
	}
	jpath = filepath.Join(dir, "journal.jsonl")
	if cfg.Resume {
		if _, err := os.Stat(jpath); err != nil {
			return "", nil, nil, fmt.Errorf("%s: %w", dir, ErrNoJournal)
		}
	} else if _, err := os.Stat(jpath); err == nil {
		return "", nil, nil, fmt.Errorf("results folder %s already holds a campaign: resume it with --resume, or choose another --out", dir)
	}
	j, recs, err = OpenJournal(jpath)
	if err != nil {
		return "", nil, nil, err
	}
	return jpath, j, recs, nil
}

// startOrResume plans a new campaign (selecting its cases, writing plan.json
// and the start record) or, with Config.Resume, reads the plan and the workers'
// states back from the results folder; on resume the seed, workers, shard and
// faults of cfg become the recorded ones.
func startOrResume(ctx context.Context, cfg *Config, j *Journal, recs []Record) (plan *inputgen.Plan, start *StartRecord, ws []WorkerState, err error) {
	if cfg.Resume {
		if start, ws, err = Replay(recs); err != nil {
			return nil, nil, nil, err
		}
		if plan, err = inputgen.ReadPlanFile(filepath.Join(cfg.OutDir, "plan.json")); err != nil {
			return nil, nil, nil, fmt.Errorf("resume: %w", err)
		}
		if !cfg.Shard.IsZero() && cfg.Shard != start.shard() {
			return nil, nil, nil, fmt.Errorf("resume %s: %w", cfg.OutDir, shardMismatch(cfg.Shard, start.shard()))
		}
		cfg.Seed, cfg.Workers, cfg.Shard = start.Seed, start.Workers, start.shard()
		if cfg.Faults == nil && start.Faults != nil {
			cfg.Faults = start.Faults.withDefaults()
		}
	} else {
		var cases []*inputgen.TestCase
		plan, cases, err = SelectCases(ctx, *cfg)
		if cfg.AfterPlan != nil {
			cfg.AfterPlan()
		}
		if err != nil {
			return nil, nil, nil, err
		}
		if cfg.Workers > len(cases) {
			cfg.Workers = len(cases)
		}
		planned := 0
		for _, tc := range cases {
			planned += caseCost(tc)
		}
		start = &StartRecord{Target: cfg.Target.Source, Seed: cfg.Seed, Workers: cfg.Workers, MaxSteps: cfg.MaxSteps, GoTests: cfg.GoTests,
			Properties: cfg.Target.Properties, Assignments: Partition(cases, cfg.Workers), Planned: planned, Faults: cfg.Faults,
			CoreValidated: cfg.Plan.CoreValidator != nil}
		if !cfg.Shard.IsZero() {
			sh := cfg.Shard
			start.Shard = &sh
		}
		if err := atomicfile.WriteWith(filepath.Join(cfg.OutDir, "plan.json"), 0o644, plan.WriteJSON); err != nil {
			return nil, nil, nil, fmt.Errorf("write plan: %w", err)
		}
		if err := j.Append(Record{Type: RecStart, Start: start}); err != nil {
			return nil, nil, nil, err
		}
		ws = make([]WorkerState, cfg.Workers)
		for i := range ws {
			ws[i].Worker = i
		}
	}
	return plan, start, ws, nil
}

// OracleConfig is the target's oracle configuration with its operator selector
// (Operator.Labels) and ignored fields (as masks) filled in.
func OracleConfig(t *targets.Target) oracles.Config {
	c := t.OracleConfig
	if c.OperatorSelector == nil {
		c.OperatorSelector = t.Operator.Labels
	}
	c.Masks = append(slices.Clone(c.Masks), t.IgnoreFields...)
	if len(t.CRDFiles) > 0 {
		c.Defaults = withDescribedDefaults(t, c.Defaults)
	}
	return c
}

// runTag derives short, unique-per-attempt cluster and namespace prefixes.
func runTag(dir string, attempt int) string {
	abs, _ := filepath.Abs(dir)
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d", abs, attempt, time.Now().UnixNano())))
	return hex.EncodeToString(h[:3])
}

// startEnvs creates the clusters and deploys the operator on each, in parallel.
func (r *runner) startEnvs(ctx context.Context, n int, tag string) ([]*env, time.Duration, error) {
	t0 := time.Now()
	count := n
	if r.cfg.SharedCluster {
		count = 1
	}
	made := make([]*env, count)
	g, gctx := errgroup.WithContext(ctx)
	for i := 0; i < count; i++ {
		g.Go(func() error {
			name := fmt.Sprintf("g%s-%d", tag, i)
			c, err := r.cfg.Provider.Create(gctx, name)
			if err != nil {
				return fmt.Errorf("create cluster %s: %w", name, err)
			}
			k, err := newKube(c, r.cfg.Logger)
			if err != nil {
				_ = c.Delete(context.WithoutCancel(ctx))
				return err
			}
			made[i] = &env{cluster: c, kube: k, prefix: fmt.Sprintf("g%d", i)}
			if r.cfg.Faults != nil {
				if made[i].inj, err = r.cfg.Faults.Injector(gctx, c); err != nil {
					return fmt.Errorf("cluster %s: fault injection: %w", name, err)
				}
			}
			stateDir, err := os.MkdirTemp("", "gauntlet-operator-")
			if err != nil {
				return err
			}
			k.stateDir = stateDir
			k.viewOn = r.cfg.OperatorView
			if err := k.deploy(gctx, r.target, stateDir); err != nil {
				return fmt.Errorf("cluster %s: deploy the operator: %w", name, err)
			}
			return nil
		})
	}
	err := g.Wait()
	envs := make([]*env, n)
	for i := range envs {
		envs[i] = made[i%count]
	}
	var live []*env
	for _, e := range made {
		if e != nil {
			live = append(live, e)
		}
	}
	if err != nil {
		return live, 0, err
	}
	return envs, time.Since(t0), nil
}

// enterGate holds a worker's next iteration back while Config.Gate says the
// host is saturated (the worker's API server latency is one of its readings).
func (r *runner) enterGate(ctx context.Context, e *env) error {
	if r.cfg.Gate == nil {
		return nil
	}
	_, err := r.cfg.Gate.Enter(ctx, func(ctx context.Context) time.Duration { return apiLatency(ctx, e) })
	return err
}

// leaveGate ends an iteration enterGate let start.
func (r *runner) leaveGate() {
	if r.cfg.Gate != nil {
		r.cfg.Gate.Leave()
	}
}

// apiLatency is how long the cluster's API server takes to answer /readyz
// (at most 5 s: a slower answer is saturation enough).
func apiLatency(ctx context.Context, e *env) time.Duration {
	if e == nil || e.kube == nil || e.kube.cs == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	t0 := time.Now()
	_, _ = e.kube.cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return time.Since(t0)
}

func uniqueEnvs(envs []*env) []*env {
	seen := map[*env]bool{}
	var out []*env
	for _, e := range envs {
		if e != nil && !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// runWorker executes one worker's test cases from its journal position.
func (r *runner) runWorker(ctx context.Context, e *env, w int, plan *inputgen.Plan, cases []string, st WorkerState, prog *progress) error {
	sess, err := r.newSession(ctx, e, fmt.Sprintf("w%d-", w))
	if err != nil {
		return err
	}
	defer sess.close(ctx)
	// Each iteration (the seed, or a desired state with its fault and
	// rollback) passes the back-off gate, if any.
	leave := func() {}
	defer func() { leave() }()
	// S0, or on resume the recorded state, re-reached by replaying D(i).
	var pos workerPos
	if err := r.enterGate(ctx, e); err != nil {
		return err
	}
	leave = r.leaveGate
	if st.Last == nil {
		rec, snap, err := sess.run(ctx, stepInput{worker: w, index: 0, kind: model.StepSeed, desired: plan.Base, cursor: Cursor{}})
		if err != nil {
			return err
		}
		if err := seedGate(rec, snap, func(pod, container string, previous bool) string {
			return sess.containerLog(ctx, pod, container, previous)
		}); err != nil {
			return err
		}
		if r.cfg.AfterSeed != nil && !rec.Unconverged() {
			r.cfg.AfterSeed(ctx, 0) // once: see Run
		}
		pos = workerPos{prevD: plan.Base, prevS: snap, prevID: rec.ID(), index: 1}
		if rec.Alarm() {
			prog.alarm(rec)
		}
	} else if pos, err = r.resumeWorker(ctx, sess, w, plan, st, prog); err != nil {
		return err
	}
	prevD, prevS, prevID, index, cur := pos.prevD, pos.prevS, pos.prevID, pos.index, pos.cur
	applied, pending, caseBase := pos.applied, pos.pending, pos.caseBase
	iterStart, first := time.Now(), true
	for cur.Case < len(cases) {
		if !first {
			// The iteration's own time, without the gate's wait before it.
			r.budget.observe(time.Since(iterStart))
			leave()
			leave = func() {}
			if err := r.enterGate(ctx, e); err != nil {
				return err
			}
			leave = r.leaveGate
		}
		first = false
		iterStart = time.Now()
		if !r.budget.mayStart(time.Now()) {
			r.cfg.Logger.Info("worker stops: the campaign's budget would be overrun", "worker", w, "case", cur.Case, "of", len(cases))
			return nil
		}
		tc := plan.TestCase(cases[cur.Case])
		if tc == nil {
			return fmt.Errorf("worker %d: test case %s is not in plan.json", w, cases[cur.Case])
		}
		if cur.State == 0 {
			caseBase = r.landOn(ctx, w, tc, prevD)
		}
		states, err := tc.Apply(caseBase)
		if err != nil {
			r.cfg.Logger.Warn("test case does not apply; skipped", "case", tc.ID, "err", err)
			cur = Cursor{Case: cur.Case + 1}
			continue
		}
		if cur.State >= len(states) {
			cur = Cursor{Case: cur.Case + 1}
			continue
		}
		d := states[cur.State]
		next := Cursor{Case: cur.Case, State: cur.State + 1}
		if next.State >= len(states) {
			next = Cursor{Case: cur.Case + 1}
		}
		kind := model.StepApply
		if tc.Recreate {
			kind = model.StepRecreate
		}
		in := stepInput{worker: w, index: index, kind: kind, testCase: tc.ID, misop: tc.Label == inputgen.Misoperation,
			cause: designedCause(tc), changed: changedPaths(prevD, d), desired: d, prevDesired: prevD, prev: prevS, recreate: tc.Recreate,
			caseBase: caseBase, cursor: next, prevID: prevID}
		alarm := false
		if next.Case != cur.Case {
			in.cursor = next
		}
		in.fault, pending = pending, nil
		rec, snap, err := sess.run(ctx, in)
		if err != nil {
			return err
		}
		in.misop = rec.Misoperation
		if rec.MisoperationReason != "" {
			in.cause = rec.MisoperationReason
		}
		index++
		prog.done.Add(1)
		if rec.Alarm() || rec.Unconverged() {
			alarm = true
			prog.alarm(rec)
		}
		if !alarm && jsonEqual(rec.Current, d) && !in.misop {
			prevD, prevS, prevID = d, snap, rec.ID()
			cur = next
			applied++
			fr, fsnap, p, err := r.faultDue(ctx, sess, w, index, applied, rec, snap, prog)
			if err != nil {
				return err
			}
			pending = p
			if fr != nil {
				index++
				prevS, prevID = fsnap, fr.ID()
			}
			continue
		}
		if !jsonEqual(rec.Current, d) && !leftWithoutCR(in, rec) {
			// Rejected by the API server: the system still holds D(i-1).
			// (A refused re-creation holds nothing: it is rolled back below.)
			cur = Cursor{Case: cur.Case + 1}
			continue
		}
		// Error-state recovery: roll back to D(i-1) and require S(i-1); the test case's remaining
		// states are skipped. A misoperation is rolled back even when the system took it
		// without an alarm: it is no base for the next test cases (seed 4: 100 replicas
		// that a 3-node cluster happened to place made every later step of the worker a
		// 100-pod roll and a 5-minute timeout).
		skip := Cursor{Case: cur.Case + 1}
		rb, rsnap, after, base, err := r.rollBack(ctx, sess, in, rec, snap, skip, prog)
		if err != nil {
			return err
		}
		index = after
		prevD, prevS, prevID = base, rsnap, rb.ID()
		cur = skip
	}
	if pending != nil {
		// No desired state left to hold the fault across: inject it on the converged system.
		p := *pending
		p.Persistent = false
		fr, _, err := sess.run(ctx, stepInput{worker: w, index: index, kind: model.StepFault, desired: prevD, prevDesired: prevD,
			prev: prevS, caseBase: caseBase, cursor: cur, prevID: prevID, fault: &p})
		if err != nil {
			return err
		}
		if fr.Alarm() || fr.Unconverged() {
			prog.alarm(fr)
		}
	}
	return r.journal.Append(Record{Type: RecWorkerDone, Worker: w})
}

// workerPos is where a worker stands between steps: the last converged desired
// state, its snapshot and step ID, the next step's index and journal cursor,
// the fault schedule (applied counts converged desired states, every
// FaultOptions.Every-th is followed by a fault; pending is a persistent fault
// drawn to hold during the next one) and the current test case's base state.
type workerPos struct {
	prevD    model.Object
	prevS    *model.Snapshot
	prevID   string
	index    int
	cur      Cursor
	applied  int
	pending  *FaultPlan
	caseBase model.Object
}

// resumeWorker puts a resumed worker back where its journal left it (st.Last):
// it re-reaches S0 and then the recorded desired state, reads the recorded
// snapshot back, and goes on with the fault schedule — a fault due after the
// last converged desired state (killed before it ran, or drawn to hold during
// the next one) is drawn again, as the same seeded choice.
func (r *runner) resumeWorker(ctx context.Context, sess *session, w int, plan *inputgen.Plan, st WorkerState, prog *progress) (workerPos, error) {
	last := st.Last
	pos := workerPos{prevD: last.Current, prevID: last.ID(), cur: last.Cursor, index: last.Index + 1, caseBase: last.CaseBase, applied: st.Applied}
	if _, _, _, err := sess.declare(ctx, plan.Base, false); err != nil && !errors.Is(err, ErrConvergenceTimeout) {
		return pos, fmt.Errorf("resume worker %d: re-reach S0: %w", w, err)
	}
	if !jsonEqual(pos.prevD, plan.Base) {
		if _, _, _, err := sess.declare(ctx, pos.prevD, false); err != nil && !errors.Is(err, ErrConvergenceTimeout) {
			return pos, fmt.Errorf("resume worker %d: re-reach %s: %w", w, pos.prevID, err)
		}
	}
	sess.snapshot(ctx) // resets the events/log window
	var err error
	if pos.prevS, err = loadSnapshot(filepath.Join(r.dir, last.Snapshot)); err != nil {
		return pos, fmt.Errorf("resume worker %d: %w", w, err)
	}
	r.cfg.Logger.Info("resumed worker", "worker", w, "after", pos.prevID, "case", pos.cur.Case, "state", pos.cur.State)
	if convergedApply(last) {
		fr, fsnap, pending, err := r.faultDue(ctx, sess, w, pos.index, pos.applied, last, pos.prevS, prog)
		if err != nil {
			return pos, err
		}
		pos.pending = pending
		if fr != nil {
			pos.index++
			pos.prevS, pos.prevID = fsnap, fr.ID()
		}
	}
	return pos, nil
}

// rollBack recovers from an error state: after step in (which declared
// in.desired and ended in rec, snap) it declares in.prevDesired again and
// requires the system to reach in.prev. When the API server refuses to go back
// (a CEL transition rule, an immutable field) it deletes and re-creates the CR
// with in.prevDesired, and so it does when the rollback was accepted but left
// the system unhealthy (the rollback's findings say so; the next test cases
// need a healthy base); when the API server refuses the re-creation, it
// re-creates the CR from the seed, so that the worker goes on from S0 rather
// than without a CR. It returns the last rollback step's record and snapshot, the index of
// the step after it, and the desired state the worker now stands on.
func (r *runner) rollBack(ctx context.Context, sess *session, in stepInput, rec *StepRecord, snap *model.Snapshot, skip Cursor, prog *progress) (*StepRecord, *model.Snapshot, int, model.Object, error) {
	back := rollbackInput(in, rec, snap, skip)
	rb, rsnap, err := sess.run(ctx, back)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	if rb.Alarm() {
		prog.alarm(rb)
	}
	base := in.prevDesired
	recreate := func() error {
		back.index, back.prev, back.recreate, back.prevID = back.index+1, rsnap, true, rb.ID()
		if rb, rsnap, err = sess.run(ctx, back); err != nil {
			return err
		}
		if rb.Alarm() {
			prog.alarm(rb)
		}
		return nil
	}
	switch {
	case in.recreate:
	case !jsonEqual(rb.Current, in.prevDesired):
		// The API server refused to go back: delete and re-create the CR.
		if err := recreate(); err != nil {
			return nil, nil, 0, nil, err
		}
	case unhealthy(rb):
		// The rollback was declared but left the system broken (CloudNativePG
		// does not roll an instance that crash-loops, so reverting the change
		// that broke it never reaches the pod): that is the rollback's
		// finding, and every later step would inherit it (seed 2: fifteen
		// steps). Start D(i-1) afresh, as a user would: delete and re-create
		// the CR.
		r.cfg.Logger.Warn("the rollback left the system unhealthy; re-creating the custom resource", "worker", in.worker, "step", rb.ID())
		if err := recreate(); err != nil {
			return nil, nil, 0, nil, err
		}
	}
	if seed := sess.baselineD; back.recreate && fallBackToSeed(rb, in.prevDesired, seed) {
		// It refused the re-creation too (CloudNativePG's webhook refused
		// a field of D(i-1) on create): the CR is gone, and every later
		// desired state built on D(i-1) would be refused as well.
		r.cfg.Logger.Warn("the API server refused to re-create the custom resource; the worker goes back to the seed", "worker", in.worker, "step", rb.ID())
		back.index, back.prev, back.prevID = back.index+1, rsnap, rb.ID()
		back.desired, back.changed, back.prevDesired, back.reference = seed, changedPaths(in.prevDesired, seed), in.prevDesired, sess.baseline
		if rb, rsnap, err = sess.run(ctx, back); err != nil {
			return nil, nil, 0, nil, err
		}
		if rb.Alarm() {
			prog.alarm(rb)
		}
		base = seed
	}
	return rb, rsnap, back.index + 1, base, nil
}

// rollbackInput is the step that goes back from step in (recorded as rec,
// ending in snap) to in.prevDesired. Going back to the valid D(i-1) after a
// misoperation is a valid step, not a misoperation: an operator that cannot
// recover from the misoperation (seeded bug 03) raises an alarm, grouped by
// what failed, never folded into the misoperation's group (where the clean
// operator's refusals sit, and where a real bug's second occurrence hid).
// recovering keeps the misoperation's cause, and the harness does not judge
// the rollback a misoperation of its own.
func rollbackInput(in stepInput, rec *StepRecord, snap *model.Snapshot, skip Cursor) stepInput {
	back := stepInput{worker: in.worker, index: in.index + 1, kind: model.StepRollback, testCase: in.testCase,
		changed: changedPaths(in.desired, in.prevDesired), desired: in.prevDesired, prevDesired: in.desired, prev: snap, reference: in.prev,
		recreate: in.recreate, caseBase: in.caseBase, cursor: skip, prevID: rec.ID()}
	if in.misop {
		back.recovering = in.cause
		if back.recovering == "" {
			back.recovering = fmt.Sprintf("test case %s is labelled a misoperation", in.testCase)
		}
	}
	return back
}

// unhealthy reports whether a step ended with the system not healthy: not
// converged, or a health finding (pods not ready, crash loops, the CR's own
// Ready=False).
func unhealthy(rec *StepRecord) bool {
	if rec.Unconverged() {
		return true
	}
	for _, f := range rec.Findings {
		if f.Severity != model.SeverityWarning && (f.Oracle == oracles.NameHealth || f.Oracle == "convergence" || f.Oracle == "stuck") {
			return true
		}
	}
	return false
}

// fallBackToSeed reports whether a rollback re-creation (rb, which declared
// want) was refused by the API server and the seed, a different desired
// state, is known: the worker should re-create the CR from the seed.
func fallBackToSeed(rb *StepRecord, want, seed model.Object) bool {
	return seed != nil && !jsonEqual(rb.Current, want) && !jsonEqual(seed, want)
}

// faultDue draws the fault due after the applied-th converged desired state (rec,
// reached with snap), if one is due: a transient one is run now, and its record and
// snapshot returned; a persistent one is returned to hold while the next desired
// state is declared.
func (r *runner) faultDue(ctx context.Context, sess *session, w, index, applied int, rec *StepRecord, snap *model.Snapshot, prog *progress) (*StepRecord, *model.Snapshot, *FaultPlan, error) {
	o := r.cfg.Faults
	if o == nil || (len(r.faultKinds) == 0 && len(o.Script) == 0) || applied == 0 || applied%o.Every != 0 {
		return nil, nil, nil, nil
	}
	r.noteViewReference(sess, rec)
	p := r.nextFault(w, index, applied/o.Every-1)
	if p.Persistent {
		return nil, nil, &p, nil
	}
	fr, fsnap, err := sess.run(ctx, stepInput{worker: w, index: index, kind: model.StepFault, testCase: rec.TestCase,
		desired: rec.Current, prevDesired: rec.Current, prev: snap, caseBase: rec.CaseBase, cursor: rec.Cursor, prevID: rec.ID(), fault: &p})
	if err != nil {
		return nil, nil, nil, err
	}
	if fr.Alarm() || fr.Unconverged() {
		prog.alarm(fr)
	}
	return fr, fsnap, nil, nil
}

// convergedApply: s declared a valid desired state that was reached without an
// alarm (a fault may be due after it; a misoperation is rolled back instead).
func convergedApply(s *StepRecord) bool {
	return s != nil && (s.Kind == model.StepApply || s.Kind == model.StepRecreate) && !s.Misoperation && !s.Alarm() && !s.Unconverged() && jsonEqual(s.Current, s.Desired)
}

func countApply(recs []Record, w int) int {
	n := 0
	for _, r := range recs {
		if r.Type == RecStep && r.Step.Worker == w && (r.Step.Kind == model.StepApply || r.Step.Kind == model.StepRecreate) {
			n++
		}
	}
	return n
}

func countAlarms(recs []Record) int {
	n := 0
	for _, r := range recs {
		if r.Step != nil && r.Step.Alarm() && !r.Step.Misoperation {
			n++
		}
	}
	return n
}

// collect fills the result's steps, findings, counts and covered properties from the journal.
func collect(res *Result, recs []Record) {
	covered := map[string]bool{}
	for _, r := range recs {
		if r.Step == nil || (r.Type != RecStep && r.Type != RecDifferential) {
			continue
		}
		s := r.Step
		res.Steps = append(res.Steps, s)
		res.Findings = append(res.Findings, s.Findings...)
		if s.Kind == model.StepApply || s.Kind == model.StepRecreate {
			res.Done++
			for _, c := range s.Changed {
				covered[c] = true
			}
		}
	}
	for c := range covered {
		res.Covered = append(res.Covered, c)
	}
	sort.Strings(res.Covered)
}

// group sets the result's alarm groups: reports.GroupFindings's bug and
// misoperation groups (warnings are not alarms), with their IDs — the one
// grouping summary.json and report.html show, so their counts and alarms/ID
// folders agree with the result's.
func group(res *Result) {
	res.Groups = nil
	for _, g := range reports.GroupFindings(res.Findings) {
		if g.Warning() {
			continue
		}
		res.Groups = append(res.Groups, &AlarmGroup{ID: g.ID, Signature: g.Signature, Oracle: g.Oracle, Summary: g.Summary,
			Misoperation: g.Misoperation, Steps: g.Steps, Findings: g.Findings})
	}
}

// bench computes the throughput figures: wall is this run's time, prior the
// earlier runs' of a resumed campaign (its steps are among res.Steps).
func bench(res *Result, wall, prior time.Duration) {
	b := &res.Bench
	b.WallSeconds = wall.Seconds()
	active := wall + prior
	b.ActiveSeconds = active.Seconds()
	var conv, over, snap, orc, jr, stab int64
	for _, s := range res.Steps {
		b.Transitions++
		conv += s.Timing.Converge
		over += s.Timing.Overhead
		snap += s.Timing.Snapshot
		orc += s.Timing.Oracles
		jr += s.Timing.Journal
		stab += s.Timing.Stability
		if s.Timing.Overhead > b.MaxOverheadMs {
			b.MaxOverheadMs = s.Timing.Overhead
		}
	}
	if n := float64(b.Transitions); n > 0 {
		b.MeanConvergeMs, b.MeanOverheadMs = float64(conv)/n, float64(over)/n
		b.MeanSnapshotMs, b.MeanOraclesMs, b.MeanJournalMs, b.MeanStabilityMs = float64(snap)/n, float64(orc)/n, float64(jr)/n, float64(stab)/n
	}
	if active > 0 {
		b.TransitionsPerHour = float64(b.Transitions) / active.Hours()
	}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	if err := atomicfile.Write(path, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// progress prints live progress lines.
type progress struct {
	cfg     Config
	planned int
	done    atomic.Int64
	alarms  atomic.Int64
	began   time.Time
	// base is done when this run began (a resumed campaign's earlier steps).
	base int64
	once sync.Once
	// tick is how often progress is looked at (1 s); heartbeat the longest
	// silence in a log (1 min).
	tick, heartbeat time.Duration
}

// alarm counts rec in the progress line's alarms unless it is a misoperation
// (a desired state wrong on purpose, reported apart from bugs: counting it
// told a user watching the line of alarms the report does not hold).
func (p *progress) alarm(rec *StepRecord) {
	if !rec.Misoperation {
		p.alarms.Add(1)
	}
}

func newProgress(cfg Config, planned int) *progress {
	return &progress{cfg: cfg, planned: planned, began: time.Now(), tick: time.Second, heartbeat: time.Minute}
}

func (p *progress) line() string {
	done := p.done.Load()
	el := time.Since(p.began).Round(time.Second)
	eta := "?"
	if ran := done - p.base; ran > 0 && int(done) < p.planned {
		eta = (time.Duration(float64(time.Since(p.began)) / float64(ran) * float64(int64(p.planned)-done))).Round(time.Second).String()
	} else if int(done) >= p.planned {
		eta = "0s"
	}
	return fmt.Sprintf("gauntlet: %d/%d steps, %d alarms, elapsed %s, ETA %s", done, p.planned, p.alarms.Load(), el, eta)
}

// start reports progress until the returned function is called: on a
// terminal, a live progress bar; elsewhere (a CI log) one line whenever steps
// finished and a heartbeat when none did for a minute.
func (p *progress) start() func() {
	if p.cfg.Quiet {
		return func() {}
	}
	var bar *progressbar.ProgressBar
	if f, ok := p.cfg.Progress.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions64(int64(p.planned), progressbar.OptionSetWriter(f), progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionSetElapsedTime(true), progressbar.OptionSetDescription("steps"),
			progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(200*time.Millisecond))
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	lastDone, lastAlarms, lastLine := p.done.Load(), p.alarms.Load(), time.Now()
	go func() {
		defer close(done)
		t := time.NewTicker(p.tick)
		defer t.Stop()
		for {
			select {
			case <-stop:
				if bar != nil {
					_ = bar.Finish()
				}
				return
			case now := <-t.C:
				d, a := p.done.Load(), p.alarms.Load()
				if bar != nil {
					bar.Describe(fmt.Sprintf("steps, %d alarms", a))
					_ = bar.Set64(d)
					continue
				}
				if d != lastDone || a != lastAlarms || now.Sub(lastLine) >= p.heartbeat {
					fmt.Fprintln(p.cfg.Progress, p.line())
					lastDone, lastAlarms, lastLine = d, a, now
				}
			}
		}
	}()
	return func() { p.once.Do(func() { close(stop); <-done }) }
}

func (p *progress) final(res *Result) {
	if p.cfg.Quiet {
		return
	}
	fmt.Fprintf(p.cfg.Progress, "gauntlet: done: %d steps (%d transitions) in %s, %d alarm groups (%d misoperation groups), %.0f transitions/hour, overhead %.0f ms/step; results in %s\n",
		res.Done, res.Bench.Transitions, time.Duration(res.Bench.ActiveSeconds*float64(time.Second)).Round(time.Second), res.Alarms(), len(res.Groups)-res.Alarms(),
		res.Bench.TransitionsPerHour, res.Bench.MeanOverheadMs, res.Dir)
}
