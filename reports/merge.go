package reports

import (
	"context"
	"errors"
	"fmt"
	"github.com/gauntlet-dev/gauntlet/internal/atomicfile"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// Shard is the slice of its plan a sharded campaign ran (`gauntlet run --shard K/N`).
type Shard struct {
	// Index is the shard's 1-based number, 1..Count.
	Index int `json:"index"`
	// Count is how many shards the plan was split into.
	Count int `json:"count"`
}

// String formats s as K/N.
func (s Shard) String() string { return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count) }

// Merged says which shards a summary written by Merge joined and where each
// one's evidence is.
type Merged struct {
	// Count is how many shards the plan was split into; Present lists the shard
	// numbers merged and Missing those absent, whose test cases are in no
	// count of this summary.
	Count   int   `json:"count"`
	Present []int `json:"present"`
	Missing []int `json:"missing,omitempty"`
	// Shards are the merged shards in shard order.
	Shards []MergedShard `json:"shards"`
}

// Complete reports whether every shard of the plan was merged.
func (m *Merged) Complete() bool { return len(m.Missing) == 0 }

// MergedShard is one shard's results inside a merged results folder.
type MergedShard struct {
	// Index is the shard's 1-based number.
	Index int `json:"index"`
	// Source is the folder it was merged from, as given to Merge.
	Source string `json:"source"`
	// Dir is where its steps/, alarms/, summary.json and report.html were
	// copied, relative to the merged folder ("shards/2").
	Dir string `json:"dir"`
	// FirstWorker renumbers its workers: its step wN/sI is w<FirstWorker+N>/sI
	// in the merged summary; Workers is how many worker numbers it took.
	FirstWorker int `json:"firstWorker"`
	Workers     int `json:"workers"`
	// StepsPlanned, StepsDone, Partial and StopReason are the shard's own.
	StepsPlanned int              `json:"stepsPlanned"`
	StepsDone    int              `json:"stepsDone"`
	Partial      bool             `json:"partial,omitempty"`
	StopReason   model.StopReason `json:"stopReason,omitempty"`
}

// ShardsDir is the folder of a merged results folder that holds each shard's
// evidence, as ShardsDir/K.
const ShardsDir = "shards"

// Named errors of Merge, one per invariant.
var (
	// ErrNotShard: only the results of sharded campaigns merge.
	ErrNotShard = errors.New("only results folders of sharded campaigns merge (gauntlet run --shard K/N)")
	// ErrShardsDiffer: merged shards come from one campaign.
	ErrShardsDiffer = errors.New("merged shards come from one campaign: the same target, seed and shard count")
	// ErrShardTwice: each shard is merged once.
	ErrShardTwice = errors.New("each shard is merged once")
)

// MergeOptions tunes Merge. The zero value is valid.
type MergeOptions struct {
	// Details loads a shard folder's findings and desired states for the
	// merged report.html (step IDs as the shard recorded them); nil, or an
	// error from it, leaves the report with each group's first evidence only.
	Details func(dir string) (Details, error)
}

// Merge joins the results folders of a sharded campaign's shards into out
// (created; it must not exist or be empty): one summary.json, junit.xml and
// report.html, as if one campaign had run every present shard.
//
// Each shard's workers are renumbered after the previous shard's (Merged.Shards
// says how), so step IDs stay "w<N>/s<I>" and unique; its steps/ and alarms/
// trees, summary.json and report.html are hard-linked (copied across file
// systems) under shards/K, and reproducer and Go test paths are rewritten to
// point there. Counts are summed, property coverage unioned, the timeline
// concatenated, and alarm groups merged by signature, bugs and misoperations
// apart: counts summed, steps concatenated, the first group's evidence, and the
// reproducer of the first group (in shard order) that has one. The result is
// partial if any shard is; Merged lists the shards present and missing.
//
// Folders of different targets, seeds or shard counts, of unsharded campaigns,
// or two folders of one shard are refused.
func Merge(ctx context.Context, out string, dirs []string, opts MergeOptions) (Summary, error) {
	if len(dirs) == 0 {
		return Summary{}, errors.New("merge: no shard results folder given")
	}
	type input struct {
		dir string
		sum Summary
	}
	ins := make([]input, 0, len(dirs))
	for _, d := range dirs {
		s, err := ReadSummary(d)
		if err != nil {
			return Summary{}, fmt.Errorf("merge: %w", err)
		}
		if s.Shard == nil {
			why := "its campaign ran the whole plan"
			if s.Merged != nil {
				why = "it is already a merged folder"
			}
			return Summary{}, fmt.Errorf("merge: %s: %s: %w", d, why, ErrNotShard)
		}
		ins = append(ins, input{d, s})
	}
	first := ins[0]
	for _, in := range ins[1:] {
		a, b := first.sum, in.sum
		switch {
		case a.Target != b.Target:
			return Summary{}, fmt.Errorf("merge: %s tested target %q, %s target %q: %w", first.dir, a.Target, in.dir, b.Target, ErrShardsDiffer)
		case a.Seed != b.Seed:
			return Summary{}, fmt.Errorf("merge: %s ran seed %d, %s seed %d (another seed is another plan): %w", first.dir, a.Seed, in.dir, b.Seed, ErrShardsDiffer)
		case a.Shard.Count != b.Shard.Count:
			return Summary{}, fmt.Errorf("merge: %s is shard %s, %s shard %s: %w", first.dir, a.Shard, in.dir, b.Shard, ErrShardsDiffer)
		}
	}
	sort.SliceStable(ins, func(i, j int) bool { return ins[i].sum.Shard.Index < ins[j].sum.Shard.Index })
	for i := 1; i < len(ins); i++ {
		if ins[i].sum.Shard.Index == ins[i-1].sum.Shard.Index {
			return Summary{}, fmt.Errorf("merge: %s and %s are both shard %s: %w", ins[i-1].dir, ins[i].dir, ins[i].sum.Shard, ErrShardTwice)
		}
	}
	if err := emptyDir(out); err != nil {
		return Summary{}, err
	}

	count := first.sum.Shard.Count
	m := Summary{
		Format:     SummaryFormat,
		CampaignID: filepath.Base(filepath.Clean(out)),
		Target:     first.sum.Target,
		Seed:       first.sum.Seed,
		Merged:     &Merged{Count: count},
	}
	present := map[int]bool{}
	var (
		alarms, misops, warnings []AlarmGroup
		oracles                  = map[string]*OracleCount{}
		coverage                 = map[string]*PropertyCoverage{}
		details                  Details
		haveDetails              bool
	)
	if opts.Details != nil {
		details.Desired = map[string]model.Object{}
		haveDetails = true
	}
	next := 0
	for _, in := range ins {
		if err := ctx.Err(); err != nil {
			return Summary{}, fmt.Errorf("merge: %w", err)
		}
		s, k := in.sum, in.sum.Shard.Index
		present[k] = true
		rel := filepath.ToSlash(filepath.Join(ShardsDir, strconv.Itoa(k)))
		workers := shardWorkers(s)
		ren := renumber{offset: next, dir: rel}
		m.Merged.Shards = append(m.Merged.Shards, MergedShard{Index: k, Source: in.dir, Dir: rel, FirstWorker: next, Workers: workers,
			StepsPlanned: s.StepsPlanned, StepsDone: s.StepsDone, Partial: s.Partial, StopReason: s.StopReason})
		m.Merged.Present = append(m.Merged.Present, k)

		if !s.Started.IsZero() && (m.Started.IsZero() || s.Started.Before(m.Started)) {
			m.Started = s.Started
		}
		if s.Finished.After(m.Finished) {
			m.Finished = s.Finished
		}
		m.Workers += workers
		m.StepsPlanned += s.StepsPlanned
		m.StepsDone += s.StepsDone
		m.FaultSteps += s.FaultSteps
		m.FaultsUnsupported += s.FaultsUnsupported
		// Each shard ran its own clusters: its namespaces are its own, so its
		// containers are listed as it recorded them, after the previous shard's.
		m.SimulatedContainers = append(m.SimulatedContainers, s.SimulatedContainers...)
		if s.Partial {
			m.Partial = true
			if m.StopReason == "" || s.StopReason == model.StopSignal {
				m.StopReason = s.StopReason // a signal wins: it stopped the run, not the plan
			}
		}
		m.Budget = max(m.Budget, s.Budget) // shards run side by side: the longest bounds them
		for _, o := range s.Oracles {
			c := oracles[o.Oracle]
			if c == nil {
				c = &OracleCount{Oracle: o.Oracle}
				oracles[o.Oracle] = c
			}
			c.Findings += o.Findings
			c.MisoperationFindings += o.MisoperationFindings
		}
		alarms = mergeGroups(alarms, s.Alarms, ren)
		misops = mergeGroups(misops, s.Misoperations, ren)
		warnings = mergeGroups(warnings, s.Warnings, ren)
		for _, p := range s.Coverage.Properties {
			c := coverage[p.Path]
			if c == nil {
				c = &PropertyCoverage{Path: p.Path}
				coverage[p.Path] = c
			}
			c.TestCases = append(c.TestCases, p.TestCases...)
			c.Steps = append(c.Steps, ren.ids(p.Steps)...)
			c.Effective = c.Effective || p.Effective
		}
		for _, e := range s.Timeline {
			e.Worker += next
			m.Timeline = append(m.Timeline, e)
		}
		if haveDetails {
			d, err := opts.Details(in.dir)
			if err != nil {
				// The summary carries what the report needs; the occurrences are a bonus.
				haveDetails, details = false, Details{}
			} else {
				for _, f := range d.Findings {
					f.Step = ren.id(f.Step)
					details.Findings = append(details.Findings, f)
				}
				for id, obj := range d.Desired {
					details.Desired[ren.id(id)] = obj
				}
			}
		}
		if err := linkShard(ctx, in.dir, filepath.Join(out, filepath.FromSlash(rel))); err != nil {
			return Summary{}, err
		}
		next += workers
	}
	for k := 1; k <= count; k++ {
		if !present[k] {
			m.Merged.Missing = append(m.Merged.Missing, k)
		}
	}
	m.Alarms, m.Misoperations = sortGroups(alarms), sortGroups(misops)
	if len(warnings) > 0 {
		m.Warnings = sortGroups(warnings)
	}
	// Numbered as Group numbers a campaign's groups: bugs, then misoperations.
	for i := range m.Alarms {
		m.Alarms[i].ID = i + 1
	}
	for i := range m.Misoperations {
		m.Misoperations[i].ID = len(m.Alarms) + i + 1
	}
	for _, g := range m.Alarms {
		oracleCount(oracles, g.Oracle).Groups++
	}
	for _, g := range m.Misoperations {
		oracleCount(oracles, g.Oracle).MisoperationGroups++
	}
	for _, c := range oracles {
		m.Oracles = append(m.Oracles, *c)
	}
	sort.Slice(m.Oracles, func(i, j int) bool { return m.Oracles[i].Oracle < m.Oracles[j].Oracle })
	for _, c := range coverage {
		c.TestCases = sortedUnique(c.TestCases)
		sort.SliceStable(c.Steps, func(i, j int) bool { return compareSteps(c.Steps[i], c.Steps[j]) < 0 })
		if c.Covered() {
			m.Coverage.Covered++
		}
		if c.Effective {
			m.Coverage.Effective++
		}
		m.Coverage.Properties = append(m.Coverage.Properties, *c)
	}
	m.Coverage.Total = len(coverage)
	sort.Slice(m.Coverage.Properties, func(i, j int) bool { return m.Coverage.Properties[i].Path < m.Coverage.Properties[j].Path })
	SortTimeline(m.Timeline)
	// Throughput over the merged wall-clock time: the first shard's start to the last one's end.
	if !m.Started.IsZero() && m.Finished.After(m.Started) {
		m.TransitionsPerHour = math.Round(float64(m.StepsDone)/m.Finished.Sub(m.Started).Hours()*10) / 10
	}
	var over []time.Duration
	for _, e := range m.Timeline {
		if e.Overhead > 0 {
			over = append(over, e.Overhead.D())
		}
		if e.Availability != nil && (m.MinAvailability == nil || *e.Availability < *m.MinAvailability) {
			v := *e.Availability
			m.MinAvailability, m.MinAvailabilityStep, m.MinAvailabilityRequests = &v, e.ID(), e.Requests
		}
	}
	m.HarnessOverhead = OverheadStats(over)
	m = normalize(m)

	if err := WriteSummary(out, m); err != nil {
		return Summary{}, fmt.Errorf("merge: %w", err)
	}
	if err := writeFile(filepath.Join(out, JUnitFile), func(w io.Writer) error { return WriteJUnit(w, m) }); err != nil {
		return Summary{}, fmt.Errorf("merge: %w", err)
	}
	if err := writeFile(filepath.Join(out, HTMLFile), func(w io.Writer) error { return WriteHTML(w, m, details) }); err != nil {
		return Summary{}, fmt.Errorf("merge: %w", err)
	}
	return m, nil
}

// StepDir is the folder holding step id's files (cr.yaml, state.json, …),
// relative to the results folder: steps/wN/sI, or in a merged summary the
// shard's copy (shards/K/steps/wN/sI, with the shard's own worker number).
// ok is false for an ID that is not "w<N>/s<I>" or that no merged shard owns.
func (s Summary) StepDir(id string) (dir string, ok bool) {
	w, i, ok := parseStepID(id)
	if !ok {
		return "", false
	}
	if s.Merged == nil {
		return stepDir(w, i), true
	}
	for _, sh := range s.Merged.Shards {
		if w >= sh.FirstWorker && w < sh.FirstWorker+sh.Workers {
			return sh.Dir + "/" + stepDir(w-sh.FirstWorker, i), true
		}
	}
	return "", false
}

func stepDir(w, i int) string { return "steps/w" + strconv.Itoa(w) + "/s" + strconv.Itoa(i) }

// shardWorkers is how many worker numbers a shard's summary uses.
func shardWorkers(s Summary) int {
	n := max(s.Workers, 1)
	see := func(id string) {
		if w, _, ok := parseStepID(id); ok && w >= n {
			n = w + 1
		}
	}
	for _, e := range s.Timeline {
		if e.Worker >= n {
			n = e.Worker + 1
		}
	}
	for _, gs := range [][]AlarmGroup{s.Alarms, s.Misoperations, s.Warnings} {
		for _, g := range gs {
			for _, id := range g.Steps {
				see(id)
			}
		}
	}
	for _, p := range s.Coverage.Properties {
		for _, id := range p.Steps {
			see(id)
		}
	}
	return n
}

// renumber maps one shard's step IDs and paths into the merged folder.
type renumber struct {
	offset int
	dir    string
}

// id renumbers a "w<N>/s<I>" step ID; any other ID is prefixed with the shard's folder.
func (r renumber) id(id string) string {
	w, i, ok := parseStepID(id)
	if !ok {
		return r.dir + ":" + id
	}
	return "w" + strconv.Itoa(w+r.offset) + "/s" + strconv.Itoa(i)
}

func (r renumber) ids(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, r.id(id))
	}
	return out
}

// path rewrites a path relative to the shard's folder ("" stays "").
func (r renumber) path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return r.dir + "/" + filepath.ToSlash(p)
}

// mergeGroups adds one shard's groups to merged, by signature.
func mergeGroups(merged, groups []AlarmGroup, r renumber) []AlarmGroup {
	for _, g := range groups {
		g.Steps = r.ids(g.Steps)
		g.Reproducer, g.GoTest = r.path(g.Reproducer), r.path(g.GoTest)
		i := slices.IndexFunc(merged, func(x AlarmGroup) bool { return x.Signature == g.Signature })
		if i < 0 {
			g.Evidence = slices.Clone(g.Evidence)
			merged = append(merged, g)
			continue
		}
		m := &merged[i]
		m.Count += g.Count
		m.Steps = append(m.Steps, g.Steps...)
		if g.Severity == model.SeverityError {
			m.Severity = model.SeverityError
		}
		if m.Misoperation && m.Oracle == "misoperation" {
			// A group per cause lists what the oracles saw, as Group does.
			for _, e := range g.Evidence {
				if len(m.Evidence) < 12 && !slices.ContainsFunc(m.Evidence, func(x model.Evidence) bool { return x.Detail == e.Detail }) {
					m.Evidence = append(m.Evidence, e)
				}
			}
		}
		if m.Reproducer == "" && g.Reproducer != "" {
			m.Reproducer, m.ReproducerSteps, m.Confirmed = g.Reproducer, g.ReproducerSteps, g.Confirmed
			m.GoTest, m.GoTestError = g.GoTest, g.GoTestError
		}
	}
	return merged
}

// sortGroups orders merged groups as Group does: by the step where each was
// first seen, then by signature.
func sortGroups(gs []AlarmGroup) []AlarmGroup {
	for i := range gs {
		sort.SliceStable(gs[i].Steps, func(a, b int) bool { return compareSteps(gs[i].Steps[a], gs[i].Steps[b]) < 0 })
	}
	sort.SliceStable(gs, func(i, j int) bool {
		if c := compareSteps(first(gs[i].Steps), first(gs[j].Steps)); c != 0 {
			return c < 0
		}
		return gs[i].Signature < gs[j].Signature
	})
	return gs
}

func oracleCount(by map[string]*OracleCount, name string) *OracleCount {
	c := by[name]
	if c == nil {
		c = &OracleCount{Oracle: name}
		by[name] = c
	}
	return c
}

// emptyDir creates dir, or accepts it when it exists and is empty.
func emptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("merge: --out %s: %w", dir, err)
	case len(ents) > 0:
		return fmt.Errorf("merge: --out %s is not empty: merge into a new folder", dir)
	}
	return nil
}

// linkShard puts a shard's evidence (steps/, alarms/) and its own summary and
// report under dst.
func linkShard(ctx context.Context, src, dst string) error {
	for _, name := range []string{"steps", "alarms", SummaryFile, HTMLFile} {
		from := filepath.Join(src, name)
		if _, err := os.Lstat(from); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := linkTree(ctx, from, filepath.Join(dst, name)); err != nil {
			return fmt.Errorf("merge: copy %s: %w", from, err)
		}
	}
	return nil
}

// linkTree hard-links every file of src into dst (copying when a link is not
// possible, e.g. across file systems), recreating folders and symbolic links.
func linkTree(ctx context.Context, src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case !d.Type().IsRegular():
			return nil // sockets, devices: not evidence
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if os.Link(p, to) == nil {
			return nil
		}
		return copyFile(p, to)
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// writeFile replaces path, atomically, with what fn writes.
func writeFile(path string, fn func(io.Writer) error) error {
	return atomicfile.WriteWith(path, 0o644, fn)
}
