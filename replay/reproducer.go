package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// CRDRef names the custom resource type a reproducer declares.
type CRDRef struct {
	Group   string `json:"group,omitempty"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// Resource is the plural resource name ("valkeyclusters"); when empty it
	// is found through discovery.
	Resource string `json:"resource,omitempty"`
}

// Step is one desired state of a reproducer, declared in order after the seed.
type Step struct {
	Kind    model.StepKind `json:"kind"`
	Desired model.Object   `json:"desired"`
	// Recreate deletes the custom resource and creates it again with Desired
	// (a change the API server refuses as an update).
	Recreate bool `json:"recreate,omitempty"`
	// Fault is injected with the step: for a fault step (Kind "fault") on the
	// state Desired converged to, otherwise held while Desired is declared (a
	// persistent fault) or striking the operator mid-reconcile. It is
	// targeted on the live system as the campaign targeted it (Role, Pick).
	Fault *FaultPlan `json:"fault,omitempty"`
	// Faults are the faults as the recorded run injected them (with the pods
	// hit), for the reader; the replay injects Fault.
	Faults []model.Fault `json:"faults,omitempty"`
}

// Reproducer is a minimized sequence of desired states that raises an alarm.
// A campaign writes it to alarms/N/reproducer.json, `gauntlet reproduce`
// replays it there, reports.WriteGoTest renders it into a Go regression test
// and package testkit replays that test: one type, one replay.
type Reproducer struct {
	// Group is the alarm group it reproduces (its number in the results).
	Group int `json:"group"`
	// Oracle, Signature and Summary are the alarm the sequence raises.
	Signature string `json:"signature"`
	Oracle    string `json:"oracle"`
	Summary   string `json:"summary"`
	// Check describes the invariant in words (a Go test's comment and
	// failure messages).
	Check string `json:"check,omitempty"`
	// Evidence is the alarm's evidence; it decides what a Go test asserts.
	Evidence []model.Evidence `json:"evidence,omitempty"`
	// FromStep is the recorded step the reproducer was derived from.
	FromStep string `json:"fromStep"`
	// Seed is D0, declared first on a fresh namespace (S0).
	Seed model.Object `json:"seed"`
	// Steps follow the seed.
	Steps []Step `json:"steps"`
	// Confirmed is true when a re-run on a fresh namespace raised the signature again.
	Confirmed bool `json:"confirmed"`
	// Tried counts the candidate sequences run.
	Tried int    `json:"tried"`
	Note  string `json:"note,omitempty"`
	// Target names the operator under test as `gauntlet run --target` takes
	// it: a built-in target ("builtin:valkey") or a target file's path.
	Target string `json:"target"`
	// CRD is the custom resource type the steps declare.
	CRD CRDRef `json:"crd,omitzero"`

	// Name identifies a Go test's reproducer (TestReproduce<Name in
	// CamelCase>); Package is its file's package ("reproducers" when empty).
	Name    string `json:"name,omitempty"`
	Package string `json:"package,omitempty"`
	// Namespace is where a Go test declares the custom resource.
	Namespace string `json:"namespace,omitempty"`
	// ConvergeTimeout bounds each step's wait (DefaultConvergeTimeout when
	// zero); Quiet is how long the namespace's objects must stay unchanged to
	// count as converged (DefaultQuiet when zero).
	ConvergeTimeout time.Duration `json:"convergeTimeout,omitempty"`
	Quiet           time.Duration `json:"quiet,omitempty"`
	// ReplayDir is the reproducer's folder as `gauntlet reproduce` takes it
	// (<results>/alarms/N).
	ReplayDir string `json:"replayDir,omitempty"`
}

// Defaults of a reproducer's timing.
const (
	DefaultConvergeTimeout = 5 * time.Minute
	DefaultQuiet           = 5 * time.Second
)

// WithDefaults returns r with zero timings set to their defaults.
func (r Reproducer) WithDefaults() Reproducer {
	if r.ConvergeTimeout <= 0 {
		r.ConvergeTimeout = DefaultConvergeTimeout
	}
	if r.Quiet <= 0 {
		r.Quiet = DefaultQuiet
	}
	return r
}

// Alarm is the alarm in one line: "<oracle> alarm <signature>: <summary>".
func (r Reproducer) Alarm() string {
	return fmt.Sprintf("%s alarm %s: %s", r.Oracle, r.Signature, r.Summary)
}

// FaultKinds lists the fault kinds the steps inject, in order of appearance.
func (r Reproducer) FaultKinds() []string {
	var out []string
	for _, s := range r.Steps {
		if s.Fault == nil {
			continue
		}
		for _, k := range s.Fault.Kinds() {
			if !contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// ErrNoSteps is returned for a reproducer without steps.
var ErrNoSteps = errors.New("the reproducer has no steps: its group could not be minimized (see its note)")

// Validate reports what keeps r from being replayed in a namespace of its
// own: a missing CRD version or kind, namespace, seed or step, a desired
// state without metadata.name, and a fault plan no replay can inject.
func (r Reproducer) Validate() error {
	if r.CRD.Version == "" || r.CRD.Kind == "" {
		return errors.New("the CRD's version and kind are required")
	}
	if r.Namespace == "" {
		return errors.New("the namespace is required")
	}
	if r.Seed == nil {
		return errors.New("no seed: a reproducer declares its seed (D0) first")
	}
	if _, err := CleanDesired(r.Seed, r.CRD); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	for i, s := range r.Steps {
		if _, err := CleanDesired(s.Desired, r.CRD); err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
		if s.Fault != nil {
			if err := s.Fault.Validate(); err != nil {
				return fmt.Errorf("step %d: %w", i+1, err)
			}
		}
	}
	return nil
}

// CleanDesired returns the desired state as a replay declares it: apiVersion
// and kind filled in from crd when missing, status dropped, and metadata cut
// down to name, labels, annotations and finalizers (the namespace is the
// replay's; server-set fields would be refused or ignored).
func CleanDesired(obj model.Object, crd CRDRef) (model.Object, error) {
	if obj == nil {
		return nil, errors.New("desired state is empty")
	}
	clean := model.Object{}
	for k, val := range obj {
		if k != "status" {
			clean[k] = val
		}
	}
	apiVersion := crd.Version
	if crd.Group != "" {
		apiVersion = crd.Group + "/" + crd.Version
	}
	if _, ok := clean["apiVersion"]; !ok {
		clean["apiVersion"] = apiVersion
	}
	if _, ok := clean["kind"]; !ok {
		clean["kind"] = crd.Kind
	}
	meta, _ := clean["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if name == "" {
		return nil, errors.New("desired state has no metadata.name")
	}
	keep := map[string]any{}
	for _, k := range []string{"name", "labels", "annotations", "finalizers"} {
		if val, ok := meta[k]; ok {
			keep[k] = val
		}
	}
	clean["metadata"] = keep
	return clean, nil
}

// ReproducerFile is the name of a reproducer in its alarm folder.
const ReproducerFile = "reproducer.json"

// ReadReproducer reads alarmDir/reproducer.json (a results folder's
// alarms/N), strictly: a field it does not know is an error naming it. Files
// written before the reproducer type was shared with the Go tests hold a
// subset of its fields and read as they are.
func ReadReproducer(alarmDir string) (*Reproducer, error) {
	path := filepath.Join(alarmDir, ReproducerFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read reproducer (give a results folder's alarms/N): %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var rep Reproducer
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("decode %s (a reproducer.json that gauntlet run wrote; a newer gauntlet's file needs that version): %w", path, err)
	}
	return &rep, nil
}
