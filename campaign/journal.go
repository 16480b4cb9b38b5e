package campaign

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// Journal record types.
const (
	RecStart        = "start"
	RecStep         = "step"
	RecWorkerDone   = "worker-done"
	RecCalibration  = "calibration"
	RecDifferential = "differential"
	RecReproducer   = "reproducer"
	RecEnd          = "end"
	// RecResume marks where a resumed run began (its Time): the time between
	// the journal's previous record and it was not run.
	RecResume = "resume"
)

// Record is one line of journal.jsonl.
type Record struct {
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	// Start is set on the first record: everything needed to resume.
	Start *StartRecord `json:"start,omitempty"`
	// Step is set on step and differential records.
	Step *StepRecord `json:"step,omitempty"`
	// Worker is set on worker-done records.
	Worker int `json:"worker,omitempty"`
	// Masks are set on calibration records.
	Masks []string `json:"masks,omitempty"`
	// Reproducer is set on reproducer records.
	Reproducer *Reproducer `json:"reproducer,omitempty"`
}

// StartRecord is what a campaign was started with.
type StartRecord struct {
	Target     string   `json:"target"`
	RepoRoot   string   `json:"repoRoot,omitempty"`
	Seed       int64    `json:"seed"`
	Workers    int      `json:"workers"`
	MaxSteps   int      `json:"maxSteps,omitempty"`
	GoTests    bool     `json:"goTests,omitempty"`
	Properties []string `json:"properties,omitempty"`
	// Assignments lists per worker the test case IDs it runs, in order.
	Assignments [][]string `json:"assignments"`
	Planned     int        `json:"planned"`
	// Faults are the fault options the campaign started with (a resume uses them again).
	Faults *FaultOptions `json:"faults,omitempty"`
	// Shard is the slice of the plan the campaign runs (nil: the whole plan);
	// Assignments hold only its cases.
	Shard *Shard `json:"shard,omitempty"`
	// CoreValidated is true when the plan was generated with the API server
	// judging core-typed values (PlanOptions.CoreValidator): a resume keeps the
	// recorded plan, and CheckCoreValidation refuses a request for the other.
	CoreValidated bool `json:"coreValidated,omitempty"`
}

// shard is the recorded shard (the zero value for the whole plan).
func (s *StartRecord) shard() Shard {
	if s.Shard == nil {
		return Shard{}
	}
	return *s.Shard
}

// Cursor is a worker's position in its assignment after a step: the next
// state of the test case at index Case (State counts states already declared).
type Cursor struct {
	Case  int `json:"case"`
	State int `json:"state"`
}

// Timing holds a step's benchmark figures, in milliseconds.
type Timing struct {
	// Converge is the operator's convergence time (apply to quiet).
	Converge int64 `json:"convergeMs"`
	// Stability is the stability window sampled after convergence.
	Stability int64 `json:"stabilityMs"`
	// Snapshot, Oracles and Journal are the harness's own work.
	Snapshot int64 `json:"snapshotMs"`
	Oracles  int64 `json:"oraclesMs"`
	Journal  int64 `json:"journalMs"`
	// SystemSettle is the wait for the system monitor's readings to settle after the objects did.
	SystemSettle int64 `json:"systemSettleMs,omitempty"`
	// Overhead is Snapshot+Oracles+Journal plus writing the step's files.
	Overhead int64 `json:"overheadMs"`
}

// StepRecord is one executed step with its verdict.
type StepRecord struct {
	model.Step
	// CaseBase is the desired state in effect when the step's test case started (its states are
	// derived from it, so a resumed worker derives the same ones).
	CaseBase model.Object `json:"caseBase,omitempty"`
	// Current is the desired state in effect after the step (D(i); D(i-1) after a rollback).
	Current model.Object `json:"current"`
	// Cursor is the worker's position after the step.
	Cursor Cursor `json:"cursor"`
	// Namespace the step ran in.
	Namespace string          `json:"namespace"`
	Findings  []model.Finding `json:"findings,omitempty"`
	// NotReady lists what was not ready when the system settled (it stopped changing).
	NotReady []string `json:"notReady,omitempty"`
	Timing   Timing   `json:"timing"`
	// Prev is the ID of the step whose state this step started from (w0/s3).
	Prev string `json:"prev,omitempty"`
	// Recreated is set when the CR was deleted and re-created with Desired (recreate steps,
	// and rollbacks the API server refused as an update).
	Recreated bool `json:"recreated,omitempty"`
	// FaultPlan is the fault drawn for the step (replays re-inject it).
	FaultPlan *FaultPlan `json:"faultPlan,omitempty"`
	// Availability is the workload's success rate during the transition.
	Availability *AvailabilityFigure `json:"availability,omitempty"`
}

// AvailabilityFigure is a transition's workload success rate.
type AvailabilityFigure struct {
	Rate     float64 `json:"rate"`
	Requests int     `json:"requests"`
}

// Alarm reports whether the step raised a bug finding (misoperations excluded).
func (s *StepRecord) Alarm() bool {
	for _, f := range s.Findings {
		if f.Severity != model.SeverityWarning {
			return true
		}
	}
	return false
}

// ActiveTime is how long the campaign recorded in recs ran before now: each run
// from its start (the start record, then each resume record) to its last
// record. A journal written before resume records existed counts as one run
// from its start record to its last record.
func ActiveTime(recs []Record) time.Duration {
	var total time.Duration
	var from, last time.Time
	flush := func() {
		if !from.IsZero() && last.After(from) {
			total += last.Sub(from)
		}
	}
	for _, r := range recs {
		if r.Time.IsZero() {
			continue
		}
		if r.Type == RecStart || r.Type == RecResume {
			flush()
			from, last = r.Time, r.Time
			continue
		}
		if from.IsZero() {
			from = r.Time
		}
		if r.Time.After(last) {
			last = r.Time
		}
	}
	flush()
	return total
}

// Journal is an append-only JSON-lines file; each record is fsync'ed before
// Append returns.
type Journal struct {
	mu sync.Mutex
	f  *os.File
}

// OpenJournal opens (creating) path for appending. A torn last line left by a
// crash is cut off first, so the next record starts on a fresh line.
func OpenJournal(path string) (*Journal, []Record, error) {
	recs, good, err := ReadJournal(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open journal: %w", err)
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("cut the torn last journal line: %w", err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("seek journal: %w", err)
	}
	return &Journal{f: f}, recs, nil
}

// Append writes r as one line and syncs it to disk.
func (j *Journal) Append(r Record) error {
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode journal record: %w", err)
	}
	b = append(b, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.f.Write(b); err != nil {
		return fmt.Errorf("append to journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("sync journal: %w", err)
	}
	return nil
}

// Close closes the file.
func (j *Journal) Close() error { return j.f.Close() }

// ReadJournal returns the complete records of path and the byte length they
// occupy. A last line without newline, or that does not decode (a write torn
// by SIGKILL), is ignored; a bad line before the last is an error.
func ReadJournal(path string) ([]Record, int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	var recs []Record
	var good int64
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	off := int64(0)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		end := off + int64(len(b)) + 1
		complete := end <= int64(len(data)) && data[end-1] == '\n'
		off = end
		if len(bytes.TrimSpace(b)) == 0 {
			if complete {
				good = end
			}
			continue
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil || !complete {
			if end >= int64(len(data)) {
				break // torn last line
			}
			return nil, 0, fmt.Errorf("journal %s line %d is corrupt (%v): only the last line may be torn by a crash", path, line, err)
		}
		recs = append(recs, r)
		good = end
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("read journal %s: %w", path, err)
	}
	return recs, good, nil
}

// WorkerState is a worker's position rebuilt from the journal.
type WorkerState struct {
	Worker int
	Done   bool
	// Last is the worker's last step record (nil: not started).
	Last *StepRecord
	// Steps counts the worker's recorded steps.
	Steps int
	// Applied counts the desired states the worker reached without an alarm (the
	// fault schedule counts them).
	Applied int
}

// Replay rebuilds each worker's position from the records of a journal.
func Replay(recs []Record) (*StartRecord, []WorkerState, error) {
	if len(recs) == 0 || recs[0].Type != RecStart || recs[0].Start == nil {
		return nil, nil, errors.New("journal does not begin with a start record: it is not a campaign journal, or the campaign died before planning (start it again)")
	}
	st := recs[0].Start
	ws := make([]WorkerState, st.Workers)
	for i := range ws {
		ws[i].Worker = i
	}
	for _, r := range recs[1:] {
		switch r.Type {
		case RecStep:
			if r.Step == nil || r.Step.Worker < 0 || r.Step.Worker >= len(ws) {
				return nil, nil, fmt.Errorf("journal step record names an unknown worker")
			}
			s := r.Step
			ws[s.Worker].Last = s
			ws[s.Worker].Steps++
			if convergedApply(s) {
				ws[s.Worker].Applied++
			}
		case RecWorkerDone:
			if r.Worker >= 0 && r.Worker < len(ws) {
				ws[r.Worker].Done = true
			}
		}
	}
	return st, ws, nil
}
