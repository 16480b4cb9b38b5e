// Package campaign runs state-transition campaigns against an operator: it
// plans test cases with inputgen, partitions them over workers (each with its
// own cluster), drives every desired state with server-side apply, waits for
// event-driven convergence, snapshots the namespace, judges each transition
// with oracles, rolls back after alarms, re-runs desired states from S0 for the
// differential oracle, minimizes alarms into confirmed reproducers, and
// records everything in a results folder with an fsync'ed journal, so a
// campaign killed with SIGKILL resumes where it stopped.
package campaign

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/gauntlet-dev/gauntlet/capacity"
	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
	"github.com/gauntlet-dev/gauntlet/reports"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// Config configures Run. Zero values take the documented defaults.
type Config struct {
	// Target is the operator under test (required).
	Target *targets.Target
	// Provider creates one cluster per worker (required).
	Provider cluster.Provider
	// SharedCluster runs every worker in its own namespace of one cluster instead of one
	// cluster per worker (less memory; the operator's log is then shared).
	SharedCluster bool
	// OperatorView puts a view proxy (package view) between each cluster's
	// operator and its API server, recorded in each step's view.jsonl (the
	// embedded cluster only). Off: the operator talks to the API server.
	OperatorView bool
	// Workers is the number of parallel workers (default 1; `gauntlet run`
	// picks it with capacity.Decide unless --workers N forces it).
	Workers int
	// Gate, when set, holds a worker's next iteration (a desired state with
	// its fault and rollback) back while the host is saturated and another is
	// in flight (capacity.Gate); nil starts every iteration at once.
	Gate *capacity.Gate
	// AfterSeed, when set, is called once, when the first worker's seed
	// converged, with the number of clusters running (`gauntlet run` measures
	// a cluster's memory then, for the next --workers auto).
	AfterSeed func(ctx context.Context, clusters int)
	// Seed fixes every random choice (plan generation and partitioning); recorded in the results.
	Seed int64
	// OutDir is the results folder (default "gauntlet-results").
	OutDir string
	// MaxSteps bounds the planned desired-state steps (0: the whole plan). With
	// a Shard it bounds the whole ordered plan before it is sliced: the shards
	// together run what one unsharded campaign would.
	MaxSteps int
	// Shard runs one slice of the plan, for campaigns spread over machines
	// (see Shard; SelectCases lists it). The zero value runs the whole plan. It
	// is journalled: a resume keeps it and refuses another.
	Shard Shard
	// Order is the order test cases run in: OrderBreadth (default: a seeded
	// round-robin over properties, operation-heavy ones first) or OrderPlan.
	Order string
	// Budget is the campaign's wall-clock limit (0: none). No iteration starts
	// once what is left of it would not cover a mean iteration so far plus the
	// time kept for tearing down and writing the reports, and one still running
	// when only that time is left is abandoned (not recorded); the campaign then
	// ends partial (StopBudget), with its reports, and Resume continues it.
	Budget time.Duration
	// Plan holds the plan's generation options (the API server's check of
	// core-typed values, lenient seeds). A resume reads the plan it recorded.
	Plan PlanOptions
	// AfterPlan, when set, is called once a new campaign's plan is made (before
	// any cluster starts), e.g. to stop the API server of Plan.CoreValidator.
	AfterPlan func()
	// CaseFilter, when set, keeps only the test cases it accepts (after the target's property
	// restriction).
	CaseFilter func(*inputgen.TestCase) bool
	// Resume continues the campaign recorded in OutDir's journal.
	Resume bool
	// GoTests asks for a Go regression test per alarm group (when a writer is wired).
	GoTests bool
	// Oracles judge every transition; nil means oracles.Default configured from the
	// target (OracleConfig). The target's custom oracles are added.
	Oracles []oracles.Oracle
	// LearnMasks learns masks from two snapshots of the same desired state reached on fresh
	// namespaces (calibration); nil uses a structural diff of the two.
	LearnMasks func(a, b *model.Snapshot) []string
	// Monitor samples system-internal state into Snapshot.Monitors (optional).
	Monitor func(ctx context.Context, c cluster.Cluster, namespace string) (map[string]any, error)
	// Faults turns on fault campaigns (transient and persistent faults, operator crashes);
	// nil injects none.
	Faults *FaultOptions
	// Converge tunes convergence detection.
	Converge ConvergeOptions
	// MisoperationTimeout bounds the convergence of a step known to be a
	// misoperation before it runs (default 1m): it is not expected to converge.
	MisoperationTimeout time.Duration
	// Stability is the window after convergence in which the state must not change (default 2s).
	Stability time.Duration
	// DifferentialFromSeed declares the seed before each differential re-run instead of
	// creating the desired state directly (Acto's S0 → D; misses edge-triggered bugs).
	DifferentialFromSeed bool
	// NoDifferential skips differential re-runs; NoMinimize skips reproducer minimization.
	NoDifferential bool
	NoMinimize     bool
	// MinimizeMisoperations also minimizes the misoperation groups (off: their
	// cause is already known, and replays of misoperations cost the most).
	MinimizeMisoperations bool
	// MinimizeBudget bounds the time all reproducer replays may take (default 15m); groups
	// left when it is spent get their unconfirmed two-operation candidate.
	MinimizeBudget time.Duration
	// Progress receives live progress lines unless Quiet (default: discarded).
	Progress io.Writer
	Quiet    bool
	// Report, when set, writes the reports (summary.json, junit.xml, report.html, Go tests) into
	// the results folder; without it Run writes summary.json itself.
	Report func(dir string, r *Result) error
	// Logger receives progress and diagnostics (default: discarded).
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Workers <= 0 {
		c.Workers = 1
	}
	if c.OutDir == "" {
		c.OutDir = "gauntlet-results"
	}
	if c.Stability <= 0 {
		c.Stability = 2 * time.Second
	}
	if c.MisoperationTimeout <= 0 {
		c.MisoperationTimeout = time.Minute
	}
	if c.MinimizeBudget <= 0 {
		c.MinimizeBudget = 15 * time.Minute
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c.Converge = c.Converge.withDefaults()
	c.Faults = c.Faults.withDefaults()
	// Run and Reproduce judge with the standard oracles unless told otherwise.
	if c.Oracles == nil && c.Target != nil {
		c.Oracles = oracles.Default(OracleConfig(c.Target))
	}
	return c
}

// Result is what a campaign produced (also written as summary.json).
type Result struct {
	Dir      string    `json:"dir"`
	Target   string    `json:"target"`
	Seed     int64     `json:"seed"`
	Workers  int       `json:"workers"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Planned and Done count desired-state steps (apply and recreate).
	Planned int `json:"planned"`
	Done    int `json:"done"`
	// Steps are every recorded step, per worker in order, then differential steps.
	Steps []*StepRecord `json:"-"`
	// Findings are every finding of every step.
	Findings []model.Finding `json:"findings,omitempty"`
	// Groups are alarms grouped by signature (bugs and misoperations apart).
	Groups []*AlarmGroup `json:"groups,omitempty"`
	// Masks are the masks learned by calibration plus the target's ignored fields.
	Masks []string `json:"masks,omitempty"`
	// Covered lists the properties changed by executed test cases.
	Covered []string `json:"covered,omitempty"`
	// FaultKinds are the fault kinds the campaign drew from; UnsupportedFaults the requested
	// kinds the cluster back end cannot inject, with why.
	FaultKinds        []string `json:"faultKinds,omitempty"`
	UnsupportedFaults []string `json:"unsupportedFaults,omitempty"`
	Bench             Bench    `json:"bench"`
	// Stopped says why the campaign ended before its plan was done (StopBudget,
	// StopSignal); empty when it ran to the end. A stopped campaign's journal
	// has no end record: Resume continues it.
	Stopped model.StopReason `json:"stopped,omitempty"`
	// Budget is Config.Budget, when one was set.
	Budget model.Budget `json:"budget,omitempty"`
	// Shard is the slice of the plan the campaign ran (nil: the whole plan).
	Shard *Shard `json:"shard,omitempty"`
	// Simulated lists the containers that ran simulated (Running and Ready without
	// a process: an image-mapping rule with simulate: true) on the campaign's
	// clusters when it ended.
	Simulated []reports.SimulatedContainer `json:"simulatedContainers,omitempty"`
}

// Why a campaign stopped early (Result.Stopped).
const (
	StopBudget = model.StopBudget
	StopSignal = model.StopSignal
)

// Alarms counts the bug groups (misoperations excluded).
func (r *Result) Alarms() int {
	n := 0
	for _, g := range r.Groups {
		if !g.Misoperation {
			n++
		}
	}
	return n
}

// AlarmGroup is the findings sharing one signature.
type AlarmGroup struct {
	ID           int             `json:"id"`
	Signature    string          `json:"signature"`
	Oracle       string          `json:"oracle"`
	Summary      string          `json:"summary"`
	Misoperation bool            `json:"misoperation,omitempty"`
	Steps        []string        `json:"steps"`
	Findings     []model.Finding `json:"findings"`
	Reproducer   *Reproducer     `json:"reproducer,omitempty"`
}

// Bench holds the campaign's throughput figures.
type Bench struct {
	// Transitions counts judged transitions (every step kind).
	Transitions int `json:"transitions"`
	// Wall is the campaign's wall-clock time in seconds (this process only when resumed).
	WallSeconds float64 `json:"wallSeconds"`
	// ActiveSeconds is how long the campaign ran over all its runs (WallSeconds
	// plus the earlier runs of a resumed campaign, without the time between
	// them); TransitionsPerHour is Transitions (every run's) over it.
	ActiveSeconds      float64 `json:"activeSeconds,omitempty"`
	TransitionsPerHour float64 `json:"transitionsPerHour"`
	// Mean figures per step, in milliseconds.
	MeanConvergeMs  float64 `json:"meanConvergeMs"`
	MeanOverheadMs  float64 `json:"meanOverheadMs"`
	MaxOverheadMs   int64   `json:"maxOverheadMs"`
	MeanSnapshotMs  float64 `json:"meanSnapshotMs"`
	MeanOraclesMs   float64 `json:"meanOraclesMs"`
	MeanJournalMs   float64 `json:"meanJournalMs"`
	MeanStabilityMs float64 `json:"meanStabilityMs"`
	// Setup is the time spent creating clusters and deploying the operator, in seconds.
	SetupSeconds float64 `json:"setupSeconds"`
	// BackoffWaits counts the iterations Config.Gate held back on a saturated
	// host; BackoffSeconds is how long they waited together.
	BackoffWaits   int     `json:"backoffWaits,omitempty"`
	BackoffSeconds float64 `json:"backoffSeconds,omitempty"`
}
