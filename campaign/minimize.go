package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
	"github.com/gauntlet-dev/gauntlet/replay"
)

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func runOracles(ctx context.Context, r *runner, tr *model.Transition) []model.Finding {
	return oracles.Run(ctx, r.oracles, tr)
}

// ReproStep is one desired state of a reproducer, declared in order from S0.
type ReproStep = replay.Step

// Reproducer is a minimized sequence that raises an alarm group's signature:
// replay's, the one type reproducer.json, `gauntlet reproduce` and the Go
// tests share.
type Reproducer = replay.Reproducer

// candidates lists the sequences to try for a failing step, shortest first:
// (S0, D(i)) alone; Acto's two operations (S0, D(i-1)), (S(i-1), D(i)); and for
// a failed rollback, D(i-1), D(i) then the rollback to D(i-1). base is D0 (the
// seed every candidate starts from): a candidate that would re-declare it is
// shortened, since S0 is already the state it reaches.
func candidates(fail, prev *StepRecord, base model.Object) [][]ReproStep {
	rs := func(s *StepRecord) ReproStep {
		return ReproStep{Kind: s.Kind, Desired: s.Desired, Recreate: s.Kind == model.StepRecreate || s.Recreated, Fault: s.FaultPlan, Faults: s.Faults}
	}
	isBase := func(d model.Object) bool { return base != nil && jsonEqual(d, base) }
	var out [][]ReproStep
	switch fail.Kind {
	case model.StepRollback:
		if prev != nil {
			// prev is the failing forward step (D(i)); the rollback target D(i-1) is fail.Desired.
			if isBase(fail.Desired) {
				out = append(out, []ReproStep{rs(prev), rs(fail)})
			} else {
				out = append(out, []ReproStep{{Kind: model.StepApply, Desired: fail.Desired}, rs(prev), rs(fail)})
			}
		}
	case model.StepSeed:
		out = append(out, nil)
	case model.StepFault:
		// The fault strikes the converged D: declare D, then inject it again.
		if isBase(fail.Desired) {
			out = append(out, []ReproStep{rs(fail)})
		} else {
			out = append(out, []ReproStep{{Kind: model.StepApply, Desired: fail.Desired}, rs(fail)})
		}
	default:
		out = append(out, []ReproStep{rs(fail)})
		if prev != nil && prev.Kind != model.StepSeed && !jsonEqual(prev.Current, fail.Desired) && !isBase(prev.Current) {
			out = append(out, []ReproStep{{Kind: model.StepApply, Desired: prev.Current}, rs(fail)})
		}
	}
	return out
}

// minimize runs candidates in order and returns the first that fires; tried
// counts runs. When none fires, the last (longest) candidate is returned unconfirmed.
func minimize(ctx context.Context, cands [][]ReproStep, fires func(context.Context, []ReproStep) (bool, error)) ([]ReproStep, bool, int, error) {
	tried := 0
	for _, c := range cands {
		tried++
		ok, err := fires(ctx, c)
		if err != nil {
			return nil, false, tried, err
		}
		if ok {
			return c, true, tried, nil
		}
	}
	if len(cands) == 0 {
		return nil, false, 0, nil
	}
	return cands[len(cands)-1], false, tried, nil
}

// stepIndex maps step IDs to records.
func stepIndex(recs []Record) map[string]*StepRecord {
	m := map[string]*StepRecord{}
	for _, r := range recs {
		if r.Step != nil && r.Type == RecStep {
			m[r.Step.ID()] = r.Step
		}
	}
	return m
}

// reproducerFor builds the candidate list of a group from the recorded history
// (base is D0, the seed the candidates start from).
func reproducerFor(g *AlarmGroup, idx map[string]*StepRecord, base model.Object) (*StepRecord, [][]ReproStep, string) {
	for _, id := range g.Steps {
		s := idx[id]
		if s == nil {
			continue
		}
		return s, candidates(s, idx[s.Prev], base), ""
	}
	return nil, nil, "the group's steps are differential re-runs: the reproducer is the recorded history up to the step"
}

// minimizeGroups derives, runs and confirms a reproducer for each group.
func (r *runner) minimizeGroups(ctx context.Context, e *env, res *Result, recs []Record) {
	idx := stepIndex(recs)
	// Replays converge within a bound learned from the campaign, and all of them share
	// one time budget: a timed-out step would otherwise cost a full timeout per candidate.
	rr := *r
	rr.cfg.Converge.Timeout = replayTimeout(r.cfg.Converge.Timeout, recs)
	deadline := time.Now().Add(r.cfg.MinimizeBudget)
	for _, g := range res.Groups {
		if g.Misoperation && !r.cfg.MinimizeMisoperations {
			continue
		}
		from, cands, note := reproducerFor(g, idx, r.base)
		rep := &Reproducer{Group: g.ID, Signature: g.Signature, Oracle: g.Oracle, Summary: g.Summary, Seed: r.base, Target: r.target.Source, Note: note}
		switch {
		case from != nil && time.Now().After(deadline):
			rep.FromStep = from.ID()
			rep.Steps = longest(cands)
			rep.Note = fmt.Sprintf("minimization budget (%s) spent: this is the unconfirmed two-operation candidate; run `gauntlet reproduce` on it", r.cfg.MinimizeBudget)
		case from != nil:
			rep.FromStep = from.ID()
			bctx, cancel := context.WithDeadline(ctx, deadline)
			steps, ok, tried, err := minimize(bctx, cands, func(ctx context.Context, seq []ReproStep) (bool, error) {
				fs, err := rr.replay(ctx, e, r.base, seq)
				return hasSignature(fs, g.Signature), err
			})
			cancel()
			rep.Steps, rep.Confirmed, rep.Tried = steps, ok, tried
			switch {
			case err != nil && bctx.Err() != nil && ctx.Err() == nil:
				rep.Steps = longest(cands)
				rep.Note = fmt.Sprintf("minimization budget (%s) spent during the replays: this is the unconfirmed two-operation candidate", r.cfg.MinimizeBudget)
			case err != nil:
				rep.Note = "minimization failed: " + err.Error()
			case !ok:
				rep.Note = "no candidate raised the signature again on a fresh namespace (flaky, or it needs the longer history)"
			}
		}
		g.Reproducer = rep
		_ = r.journal.Append(Record{Type: RecReproducer, Reproducer: rep})
	}
}

// longest is the last (longest) candidate, or nil.
func longest(cands [][]ReproStep) []ReproStep {
	if len(cands) == 0 {
		return nil
	}
	return cands[len(cands)-1]
}

// replayTimeout bounds convergence in replays: three times the slowest convergence
// the campaign saw (at least a minute), never more than the campaign's own timeout.
func replayTimeout(campaign time.Duration, recs []Record) time.Duration {
	var slowest int64
	for _, rec := range recs {
		if rec.Step != nil && !rec.Step.Unconverged() && rec.Step.Timing.Converge > slowest {
			slowest = rec.Step.Timing.Converge
		}
	}
	t := max(time.Minute, 3*time.Duration(slowest)*time.Millisecond)
	return min(t, campaign)
}

func hasSignature(fs []model.Finding, sig string) bool {
	for _, f := range fs {
		if f.Signature == sig {
			return true
		}
	}
	return false
}

// replay declares seed then seq on a fresh namespace, judging each transition
// like the campaign does (rollback steps get the state reached by the earlier
// declaration of the same desired state as reference), and returns every finding.
func (r *runner) replay(ctx context.Context, e *env, seed model.Object, seq []ReproStep) ([]model.Finding, error) {
	rr := *r
	rr.journal, rr.dir = nil, ""
	sess, err := rr.newSession(ctx, e, "r")
	if err != nil {
		return nil, err
	}
	defer sess.close(ctx)
	recs, _, err := sess.replaySteps(ctx, seed, seq, true)
	var all []model.Finding
	for i, rec := range recs {
		if i > 0 { // the seed's are not the sequence's
			all = append(all, rec.Findings...)
		}
	}
	return all, err
}

// replaySteps declares seed (not judged) then seq in the session's namespace,
// each step as a campaign's worker runs it (session.run: declared, its fault
// injected and healed, converged); with judge, the steps after the seed are
// judged by the oracles (rollbacks against the state reached by the earlier
// declaration of the same desired state). It returns the step records, seed
// first, and the state the last step reached.
func (s *session) replaySteps(ctx context.Context, seed model.Object, seq []ReproStep, judge bool) ([]*StepRecord, *model.Snapshot, error) {
	rec0, s0, err := s.run(ctx, stepInput{kind: model.StepSeed, desired: seed, noJudge: true})
	if err != nil {
		return nil, nil, err
	}
	recs := []*StepRecord{rec0}
	seen := []struct {
		d model.Object
		s *model.Snapshot
	}{{seed, s0}}
	prevD, prevS := seed, s0
	for i, st := range seq {
		in := stepInput{index: i + 1, kind: st.Kind, desired: st.Desired, prevDesired: prevD, prev: prevS, recreate: st.Recreate,
			changed: changedPaths(prevD, st.Desired), fault: st.Fault, noJudge: !judge}
		if st.Kind == model.StepRollback {
			for _, x := range seen {
				if jsonEqual(x.d, st.Desired) {
					in.reference = x.s
				}
			}
		}
		rec, snap, err := s.run(ctx, in)
		if err != nil {
			return recs, prevS, err
		}
		recs = append(recs, rec)
		prevD, prevS = st.Desired, snap
		seen = append(seen, struct {
			d model.Object
			s *model.Snapshot
		}{st.Desired, snap})
	}
	return recs, prevS, nil
}

// writeAlarms writes alarms/<n>/group.json and reproducer.json.
func (r *runner) writeAlarms(res *Result) error {
	for _, g := range res.Groups {
		d := filepath.Join(r.dir, "alarms", fmt.Sprint(g.ID))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("alarm folder: %w", err)
		}
		if err := writeJSON(filepath.Join(d, "group.json"), g); err != nil {
			return err
		}
		if g.Reproducer != nil {
			if err := writeJSON(filepath.Join(d, replay.ReproducerFile), g.Reproducer); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadReproducer reads DIR/alarms/N/reproducer.json (replay.ReadReproducer).
func ReadReproducer(alarmDir string) (*Reproducer, error) { return replay.ReadReproducer(alarmDir) }

// ReproduceResult says whether a replayed reproducer raised its signature again.
type ReproduceResult struct {
	Reproduced bool            `json:"reproduced"`
	Findings   []model.Finding `json:"findings"`
}

// ErrNoSteps is returned for a reproducer without steps.
var ErrNoSteps = replay.ErrNoSteps

// Reproduce replays a reproducer on a fresh cluster from cfg.Provider with the
// operator of cfg.Target deployed, judging with cfg.Oracles.
func Reproduce(ctx context.Context, cfg Config, rep *Reproducer) (*ReproduceResult, error) {
	cfg = cfg.withDefaults()
	if cfg.Target == nil || cfg.Provider == nil {
		return nil, errors.New("reproduce: Config.Target and Config.Provider are required")
	}
	var err error
	if cfg.Provider, err = prepareImages(cfg.Provider, cfg.Target); err != nil {
		return nil, err
	}
	if len(rep.Steps) == 0 && !strings.HasPrefix(rep.FromStep, "w") {
		return nil, ErrNoSteps
	}
	if cfg.Faults == nil && slices.ContainsFunc(rep.Steps, func(s ReproStep) bool { return s.Fault != nil }) {
		cfg.Faults = (&FaultOptions{}).withDefaults()
	}
	cfg.OperatorView = cfg.OperatorView || needsView(rep.Steps)
	r := &runner{cfg: cfg, target: cfg.Target, base: rep.Seed, lastAppend: new(atomic.Int64), publishesGen: new(atomic.Bool)}
	r.oracles = append(append([]oracles.Oracle{}, cfg.Oracles...), cfg.Target.Oracles...)
	envs, _, err := r.startEnvs(ctx, 1, runTag("reproduce", 0))
	defer func() {
		for _, e := range uniqueEnvs(envs) {
			e.kube.stop()
			_ = e.cluster.Delete(context.WithoutCancel(ctx))
		}
	}()
	if err != nil {
		return nil, err
	}
	fs, err := r.replay(ctx, envs[0], rep.Seed, rep.Steps)
	if err != nil {
		return nil, err
	}
	return &ReproduceResult{Reproduced: hasSignature(fs, rep.Signature), Findings: fs}, nil
}
