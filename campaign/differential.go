package campaign

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
)

// hashDesired identifies a desired state by its content.
func hashDesired(d model.Object) string {
	spec := map[string]any{"spec": get(d, "spec")}
	b := []byte(fmt.Sprint(jsonString(spec)))
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

func jsonString(v any) string {
	x, _ := jsonMarshal(v)
	return string(x)
}

// differential calibrates masks (seed twice on fresh namespaces) and then
// declares each distinct desired state reached through history on a fresh
// namespace — created directly, so an operator that acts only on a change it
// sees (edge-triggered) differs from one that acts on the state (level-triggered);
// with Config.DifferentialFromSeed the seed is declared first — judging S(i)
// against that reference. The target's DifferentialMasks (state kept by design
// depending on history) apply on top of the learned masks. Runs already in the
// journal are skipped (resume).
func (r *runner) differential(ctx context.Context, envs []*env, recs []Record) error {
	if r.masks == nil {
		masks, err := r.calibrate(ctx, envs[0], recs)
		if err != nil {
			return err
		}
		r.masks = masks
	}
	done := map[string]bool{}
	nextIndex := map[int]int{}
	for _, rec := range recs {
		if rec.Step == nil {
			continue
		}
		if rec.Type == RecDifferential {
			done[strings.TrimPrefix(rec.Step.TestCase, "differential:")] = true
		}
		if rec.Step.Index >= nextIndex[rec.Step.Worker] {
			nextIndex[rec.Step.Worker] = rec.Step.Index + 1
		}
	}
	type job struct {
		hash string
		rec  *StepRecord
	}
	var jobs []job
	seen := map[string]bool{}
	for _, rec := range recs {
		s := rec.Step
		if rec.Type != RecStep || s == nil || (s.Kind != model.StepApply && s.Kind != model.StepRecreate) || s.Unconverged() || !jsonEqual(s.Current, s.Desired) {
			continue
		}
		if s.Misoperation {
			// A misoperation's state is not expected to be reached the same way
			// twice (an operator that refuses it may never converge): judging it
			// against a fresh run only costs a convergence timeout.
			continue
		}
		h := hashDesired(s.Desired)
		if seen[h] || done[h] {
			continue
		}
		seen[h] = true
		jobs = append(jobs, job{h, s})
	}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(len(uniqueEnvs(envs)))
	for i, jb := range jobs {
		e := envs[i%len(envs)]
		w := i % len(envs)
		g.Go(func() error {
			mu.Lock()
			idx := nextIndex[w]
			nextIndex[w]++
			mu.Unlock()
			began := time.Now()
			hist, err := loadSnapshot(filepath.Join(r.dir, jb.rec.Snapshot))
			if err != nil {
				return err
			}
			sess, err := r.newSession(gctx, e, "d")
			if err != nil {
				return err
			}
			defer sess.close(gctx)
			if r.cfg.DifferentialFromSeed {
				if _, _, _, err := sess.declare(gctx, r.seedOf(jb.rec), false); err != nil {
					return fmt.Errorf("differential: reach S0: %w", err)
				}
			}
			var refusal error
			if _, _, _, err := sess.declare(gctx, jb.rec.Desired, r.cfg.DifferentialFromSeed && jb.rec.Kind == model.StepRecreate); err != nil {
				if refused(gctx, err) {
					// The fresh namespace has no custom resource to compare with: what
					// differs is the admission of D, not the state reached.
					refusal = err
				} else {
					r.cfg.Logger.Warn("differential run did not converge", "step", jb.rec.ID(), "err", err)
				}
			}
			ref := rebase(sess.snapshot(gctx), sess.ns, jb.rec.Namespace)
			// Judge S(i) (history) against the fresh run; the recorded step is the differential one.
			_, err = r.judgeOnly(gctx, stepInput{worker: w, index: idx, kind: model.StepDifferential, testCase: "differential:" + jb.hash,
				misop: jb.rec.Misoperation, desired: jb.rec.Desired, prevDesired: jb.rec.Desired, reference: ref, prevID: jb.rec.ID(), refusal: refusal, began: began}, hist)
			return err
		})
	}
	return g.Wait()
}

// seedOf is the seed desired state (the base every worker started from).
func (r *runner) seedOf(*StepRecord) model.Object { return r.base }

// judgesOf are the oracles that judge a transition recorded by judgeOnly. A differential
// step's Curr is S(i) of the history, judged when it was recorded, with no state before
// it here: its new evidence is the reference run, which the differential oracle compares.
// Other oracles would judge S(i) again without its predecessor — the health oracle then
// counted every restart S(i) held since the campaign began (one excused by the fault that
// caused it) as new.
func judgesOf(kind model.StepKind, all []oracles.Oracle) []oracles.Oracle {
	if kind != model.StepDifferential {
		return all
	}
	var out []oracles.Oracle
	for _, o := range all {
		if o.Name() == oracles.NameDifferential {
			out = append(out, o)
		}
	}
	return out
}

// judgeOnly records a transition whose current state is already known (the history's S(i)).
func (r *runner) judgeOnly(ctx context.Context, in stepInput, curr *model.Snapshot) (*StepRecord, error) {
	rec := &StepRecord{Step: model.Step{Worker: in.worker, Index: in.index, Kind: in.kind, TestCase: in.testCase, Misoperation: in.misop,
		Desired: in.desired, Started: curr.Taken, Converged: curr.Taken}, Current: in.desired, Prev: in.prevID}
	masks := r.masksNow()
	if in.kind == model.StepDifferential {
		masks = append(slices.Clone(masks), r.target.DifferentialMasks...)
	}
	tr := &model.Transition{Step: &rec.Step, PrevDesired: in.prevDesired, Desired: in.desired, Curr: curr, Reference: in.reference, Masks: masks}
	if in.refusal != nil {
		// The fresh run could not declare D: the API server (with the operator's admission
		// webhooks) accepted it as an update of S(i-1) but refused it as a new object, so
		// the fresh namespace holds nothing to compare with. One warning says so; comparing
		// S(i) with an empty namespace raised an alarm per object (CloudNativePG on kind,
		// seed 1: 14 groups "exists in the state reached but not in the reference").
		rec.Findings = []model.Finding{{Oracle: oracles.NameDifferential, Severity: model.SeverityWarning,
			Signature: model.Signature("differential", "refused-on-create"),
			Summary:   fmt.Sprintf("the desired state of %s was accepted there as an update but refused as a new object in a fresh namespace, so there is no reference state to compare with: %v", in.prevID, in.refusal)}}
	} else {
		rec.Findings = oracles.Run(ctx, judgesOf(in.kind, r.oracles), tr)
	}
	for i := range rec.Findings {
		rec.Findings[i].Misoperation = in.misop
	}
	rel := filepath.Join("steps", fmt.Sprintf("w%d", in.worker), fmt.Sprintf("s%d", in.index))
	rec.Snapshot = filepath.ToSlash(rel)
	if !in.began.IsZero() {
		rec.Time = model.StepTime{model.PhaseDifferential: time.Since(in.began).Milliseconds()}
	}
	if err := writeStepFiles(filepath.Join(r.dir, rel), rec, in.reference); err != nil {
		return nil, err
	}
	if err := r.journal.Append(Record{Type: RecDifferential, Step: rec}); err != nil {
		return nil, err
	}
	return rec, nil
}

func (r *runner) runOracles(ctx context.Context, tr *model.Transition, misop bool) []model.Finding {
	fs := runOracles(ctx, r, tr)
	for i := range fs {
		fs[i].Misoperation = misop
	}
	return fs
}

// calibrate declares the seed on two fresh namespaces and learns which fields differ.
func (r *runner) calibrate(ctx context.Context, e *env, recs []Record) ([]string, error) {
	var snaps [2]*model.Snapshot
	var nss [2]string
	for i := range snaps {
		sess, err := r.newSession(ctx, e, "c")
		if err != nil {
			return nil, err
		}
		if _, _, _, err := sess.declare(ctx, r.base, false); err != nil {
			sess.close(ctx)
			return nil, fmt.Errorf("calibration: %w", err)
		}
		snaps[i], nss[i] = sess.snapshot(ctx), sess.ns
		sess.close(ctx)
	}
	b := rebase(snaps[1], nss[1], nss[0])
	var masks []string
	if r.cfg.LearnMasks != nil {
		masks = r.cfg.LearnMasks(snaps[0], b)
	} else {
		masks = oracles.LearnMasks(snaps[0], b)
	}
	masks = append(masks, r.target.IgnoreFields...)
	sort.Strings(masks)
	if err := r.journal.Append(Record{Type: RecCalibration, Masks: masks}); err != nil {
		return nil, err
	}
	return masks, nil
}

// rebase rewrites a snapshot taken in namespace from as if taken in namespace to
// (keys, metadata and every string that mentions the namespace), so snapshots
// of different namespaces compare.
func rebase(s *model.Snapshot, from, to string) *model.Snapshot {
	if s == nil || from == to {
		return s
	}
	out := *s
	out.Objects = map[string]model.Object{}
	replace := func(s string) string { return strings.ReplaceAll(s, from, to) }
	for k, o := range s.Objects {
		out.Objects[replace(k)] = jsonv.MapStrings(o, replace).(map[string]any)
	}
	out.CR = strings.ReplaceAll(s.CR, from, to)
	return &out
}

// refused reports whether a declare error is the API server's refusal of the desired state
// (not a convergence timeout, a stuck step or the campaign's end).
func refused(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && !errors.Is(err, ErrConvergenceTimeout) && !errors.Is(err, ErrStuck) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
