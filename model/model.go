// Package model is the vocabulary every stage of a campaign shares: the desired
// state declared, the system state observed (a snapshot), the transition between
// two states that oracles judge, and the findings they report. It holds data and
// pure helpers only; every package may import it, it imports none of them.
//
// Objects are kept as unstructured JSON maps so a snapshot of any operator's
// resources can be recorded, diffed and re-judged offline (record first, judge later).
package model

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ObjectKey identifies a Kubernetes object.
type ObjectKey struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String is "group/version/Kind/namespace/name" (empty group and namespace kept as
// empty segments), the key of Snapshot.Objects.
func (k ObjectKey) String() string {
	return strings.Join([]string{k.Group, k.Version, k.Kind, k.Namespace, k.Name}, "/")
}

// ParseObjectKey is the inverse of ObjectKey.String; ok is false for a malformed key.
func ParseObjectKey(s string) (ObjectKey, bool) {
	p := strings.Split(s, "/")
	if len(p) != 5 || p[1] == "" || p[2] == "" || p[4] == "" {
		return ObjectKey{}, false
	}
	return ObjectKey{Group: p[0], Version: p[1], Kind: p[2], Namespace: p[3], Name: p[4]}, true
}

// Object is one recorded object, as the API server returned it (unstructured).
type Object = map[string]any

// Event is one Kubernetes Event about an object in the test namespace.
type Event struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"` // Normal or Warning
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Object  string    `json:"object"` // ObjectKey.String() of the involved object
	Count   int32     `json:"count,omitempty"`
}

// Snapshot is the system state S(i): every object in the test namespace (and the
// cluster-scoped objects the CR owns), the events and operator log since the
// previous snapshot, and system-internal samples from monitors.
type Snapshot struct {
	Taken time.Time `json:"taken"`
	// Objects by ObjectKey.String(). The CR under test is among them. A Secret
	// or ConfigMap whose data holds PEM certificates or keys also carries their
	// decoded view, stable across re-issuance, in the synthetic top-level field
	// "gauntlet.dev/x509" (package internal/x509view), keyed by data key.
	Objects map[string]Object `json:"objects"`
	// CR is the key of the custom resource under test in Objects.
	CR          string  `json:"cr"`
	Events      []Event `json:"events,omitempty"`
	OperatorLog string  `json:"operatorLog,omitempty"`
	// Monitors holds system-internal samples keyed by monitor name (e.g. "valkey":
	// per-pod ROLE, replication and CONFIG GET), as JSON-compatible values.
	Monitors map[string]any `json:"monitors,omitempty"`
	// System is the system monitor's reading at snapshot time (nil without a system monitor).
	System *SystemSample `json:"system,omitempty"`
}

// CRObject returns the custom resource under test, or nil.
func (s *Snapshot) CRObject() Object {
	if s == nil {
		return nil
	}
	return s.Objects[s.CR]
}

// Keys returns the snapshot's object keys, sorted.
func (s *Snapshot) Keys() []string {
	keys := slices.Sorted(maps.Keys(s.Objects))
	return keys
}

// StepKind says why a step happened.
type StepKind string

// Step kinds.
const (
	// StepSeed declares the seed CR D0 on a fresh system (reaching S0).
	StepSeed StepKind = "seed"
	// StepApply declares a new desired state D(i) from a test case.
	StepApply StepKind = "apply"
	// StepRecreate deletes and re-creates the CR with D(i) (changes a CEL transition rule forbids).
	StepRecreate StepKind = "recreate"
	// StepRollback re-declares D(i-1) after an alarm (recovery oracle).
	StepRollback StepKind = "rollback"
	// StepFault injects or removes faults on a converged system (D unchanged).
	StepFault StepKind = "fault"
	// StepDifferential declares D(i) from S0 on a fresh namespace or cluster.
	StepDifferential StepKind = "differential"
)

// Fault is one fault injected during a step, as recorded.
type Fault struct {
	// Kind names the fault: a FaultKind.
	Kind string `json:"kind"`
	// Targets are what it hit (pod names, "operator", "primary").
	Targets []string `json:"targets,omitempty"`
	// Persistent faults hold while the next desired state is declared.
	Persistent bool      `json:"persistent,omitempty"`
	Injected   time.Time `json:"injected"`
	Removed    time.Time `json:"removed,omitempty"`
	// Unsupported is set when the back end cannot inject it (reported, never skipped silently).
	Unsupported string `json:"unsupported,omitempty"`
	// Retargeted says why the fault hit the operator rather than the drawn kind's target.
	Retargeted string `json:"retargeted,omitempty"`
	// Effect says what a fault of the operator's view did while it held
	// (events withheld, reads lagged, whether the crash fired).
	Effect string `json:"effect,omitempty"`
}

// Step is one recorded state transition of a worker's sequence.
type Step struct {
	Worker int      `json:"worker"`
	Index  int      `json:"index"`
	Kind   StepKind `json:"kind"`
	// TestCase is the inputgen test case this step executes, if any.
	TestCase string `json:"testCase,omitempty"`
	// Misoperation marks a semantically wrong but schema-valid desired state.
	Misoperation bool `json:"misoperation,omitempty"`
	// MisoperationReason says why the harness, rather than the test case, labelled the
	// step a misoperation (e.g. it names a Secret that does not exist).
	MisoperationReason string `json:"misoperationReason,omitempty"`
	// Changed lists the CR property paths that differ from the previous desired state.
	Changed []string `json:"changed,omitempty"`
	// Desired is D(i), the CR as declared (metadata name/namespace, spec).
	Desired Object    `json:"desired"`
	Faults  []Fault   `json:"faults,omitempty"`
	Started time.Time `json:"started"`
	// Converged is when the system stopped changing; zero when it timed out
	// or got stuck.
	Converged time.Time `json:"converged,omitempty"`
	// TimedOut is set when the step did not converge within the hard timeout.
	TimedOut bool `json:"timedOut,omitempty"`
	// Stuck is set when the step ended early without converging: nothing
	// that readiness depends on changed for the stuck window.
	Stuck bool `json:"stuck,omitempty"`
	// Snapshot is the snapshot's path relative to the results folder.
	Snapshot string `json:"snapshot,omitempty"`
	// Time is where the step's wall time went (see StepTime).
	Time StepTime `json:"time,omitempty"`
}

// Phases of a step's wall time (StepTime keys), in the order a step runs them.
const (
	// PhaseApply is declaring D until the API server answered (a re-creation's delete included).
	PhaseApply = "apply"
	// PhaseFaultHold is a fault step's injection and hold until it healed.
	PhaseFaultHold = "faultHold"
	// PhaseReaction is from the action to the first change the watch saw (the operator reacting).
	PhaseReaction = "reaction"
	// PhaseConverge is from the first change to the last (the system converging).
	PhaseConverge = "converge"
	// PhaseQuiet is the quiet window after the last change (and the readiness re-checks in it).
	PhaseQuiet = "quiet"
	// PhaseSettle is the wait for the system monitor's readings to settle.
	PhaseSettle = "systemSettle"
	// PhaseSnapshot is reading the namespace's objects, events and operator log.
	PhaseSnapshot = "snapshot"
	// PhaseMonitors is the target's monitor and the system history.
	PhaseMonitors = "monitors"
	// PhaseStability is the stability window sampled after convergence.
	PhaseStability = "stability"
	// PhaseOracles is judging the transition.
	PhaseOracles = "oracles"
	// PhaseRecord is writing the step's files and its journal record.
	PhaseRecord = "record"
	// PhaseDifferential is a differential re-run: a fresh system reaching D, and judging.
	PhaseDifferential = "differential"
	// PhaseOther is the rest (reference checks, starting the workload).
	PhaseOther = "other"
)

// StepPhases lists the phases in the order a step runs them.
var StepPhases = []string{PhaseApply, PhaseFaultHold, PhaseReaction, PhaseConverge, PhaseQuiet, PhaseSettle, PhaseSnapshot,
	PhaseMonitors, PhaseStability, PhaseOracles, PhaseRecord, PhaseDifferential, PhaseOther}

// StepTime is where a step's wall time went: milliseconds per phase (the
// Phase constants; a phase the step did not run is absent). The phases add up
// to the step's wall time.
type StepTime map[string]int64

// Total is the step's wall time.
func (t StepTime) Total() time.Duration {
	var ms int64
	for _, v := range t {
		ms += v
	}
	return time.Duration(ms) * time.Millisecond
}

// ConvergeTime is how long the step took to converge (0 if it timed out).
func (s *Step) ConvergeTime() time.Duration {
	if s.Converged.IsZero() {
		return 0
	}
	return s.Converged.Sub(s.Started)
}

// Unconverged reports whether the step ended without converging (timed out
// or stuck): its final state is not the operator's answer to the desired state.
func (s *Step) Unconverged() bool { return s.TimedOut || s.Stuck }

// ID names the step in results and messages: "w<worker>/s<index>".
func (s *Step) ID() string { return "w" + strconv.Itoa(s.Worker) + "/s" + strconv.Itoa(s.Index) }

// Transition is what an oracle judges: from (PrevDesired, Prev) to (Desired, Curr).
type Transition struct {
	Step        *Step
	PrevDesired Object
	Desired     Object
	Prev        *Snapshot
	Curr        *Snapshot
	// Stability holds snapshots sampled during the stability window after convergence.
	Stability []*Snapshot
	// Reference is the state reached by declaring Desired from S0 (differential oracle).
	Reference *Snapshot
	// Masks are field paths known to vary across runs (learned by calibration).
	Masks []string
	// Samples are the system monitor's readings taken while the transition ran (split brain).
	Samples []SystemSample
	// Baseline is the state the session's seed reached (nil when unknown): what
	// the system shows for properties that no desired state set yet, i.e. the
	// operator's defaults. BaselineDesired is that seed.
	Baseline        *Snapshot
	BaselineDesired Object
	// History is the workload's record of this transition: its requests from the
	// step's start to the snapshot, then the read-backs (OpVerify) of every write
	// acknowledged so far in the session.
	History *History
	// OperatorView is what the view proxy between the operator and the API
	// server saw of the operator during the step (nil without the proxy).
	OperatorView *OperatorView
}

// OperatorView is the operator's side of a step as the view proxy saw it.
type OperatorView struct {
	// Faults are the faults of the operator's view held during the step.
	Faults []FaultKind `json:"faults,omitempty"`
	// Writes are the operator's writes the API server accepted, in order.
	Writes []ViewWrite `json:"writes,omitempty"`
}

// ViewWrite is one write of the operator's: its verb and the API resource
// (plural, as in URLs) and object it named.
type ViewWrite struct {
	Verb        string    `json:"verb"`
	Group       string    `json:"group,omitempty"`
	Resource    string    `json:"resource"`
	Subresource string    `json:"subresource,omitempty"`
	Namespace   string    `json:"namespace,omitempty"`
	Name        string    `json:"name,omitempty"`
	Time        time.Time `json:"time"`
}

// Severity ranks findings.
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Evidence is one fact behind a finding.
type Evidence struct {
	// Object is the ObjectKey.String() concerned, if any.
	Object string `json:"object,omitempty"`
	// Path is a field path (e.g. "spec.replicas" or "spec.template.spec.containers[0].image").
	Path     string `json:"path,omitempty"`
	Expected any    `json:"expected,omitempty"`
	Actual   any    `json:"actual,omitempty"`
	// Detail is free text: a log line, an event message, a condition.
	Detail string `json:"detail,omitempty"`
}

// Finding is one alarm raised by an oracle on a transition.
type Finding struct {
	Oracle   string   `json:"oracle"`
	Severity Severity `json:"severity"`
	// Signature groups duplicates: the same bug seen on many steps has one signature.
	Signature string     `json:"signature"`
	Summary   string     `json:"summary"`
	Evidence  []Evidence `json:"evidence,omitempty"`
	// Step is Step.ID() of the transition judged.
	Step string `json:"step"`
	// Misoperation is copied from the step: reported apart from bugs.
	Misoperation bool `json:"misoperation,omitempty"`
	// Cause is, on a misoperation step, why the step is one (the harness's
	// label); the findings of misoperations that share a cause are one group
	// (their Signature is CauseSignature of it).
	Cause string `json:"cause,omitempty"`
}

// quotedValue matches a double-quoted value in a cause: generated names and
// values differ from step to step while the cause is the same.
var quotedValue = regexp.MustCompile(`"[^"]*"`)

// CauseSignature is the signature of the findings raised by a misoperation
// with this cause: one per cause, whatever the oracles found and whatever
// name or value the step used.
func CauseSignature(cause string) string {
	return Signature("misoperation", quotedValue.ReplaceAllString(cause, `"…"`))
}

// Signature derives a stable signature from an oracle name and the parts that
// identify a bug (paths, kinds, reasons — never values that change run to run).
func Signature(oracle string, parts ...string) string {
	ps := append([]string(nil), parts...)
	sort.Strings(ps)
	h := sha256.Sum256([]byte(oracle + "\x00" + strings.Join(ps, "\x00")))
	return oracle + "-" + hex.EncodeToString(h[:6])
}

// Member is one server of a replicated system as a monitor saw it.
type Member struct {
	// Pod is the pod's name; Address is host:port the monitor dialled.
	Pod     string `json:"pod"`
	Address string `json:"address,omitempty"`
	// Reachable is false when the monitor could not talk to it (Error says
	// why, Unreachable says what kind of why).
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// Unreachable classifies why an unreachable member could not be read
	// (UnreachableAuth, UnreachableNoCredentials, UnreachableNoAddress,
	// UnreachableError).
	Unreachable string `json:"unreachable,omitempty"`
	// Role is "primary" or "replica" (empty when unknown).
	Role string `json:"role,omitempty"`
	// Follows is the address (host:port, as the server reports it) a replica replicates from.
	Follows string `json:"follows,omitempty"`
	// LinkUp reports a replica's link to its primary.
	LinkUp bool `json:"linkUp,omitempty"`
	// Offset is the replication offset.
	Offset int64 `json:"offset,omitempty"`
	// Replicas is, for a primary, the number of replicas connected to it.
	Replicas int `json:"replicas,omitempty"`
	// Labels are the pod's labels (the role label the operator publishes among them).
	Labels map[string]string `json:"labels,omitempty"`
	// Config holds the effective value of each configuration key the desired state declares.
	Config map[string]string `json:"config,omitempty"`
}

// Why a monitor could not read a member (Member.Unreachable).
const (
	// UnreachableAuth: the server refused the monitor's credentials (a
	// password switch may be under way); the reading says nothing about
	// whether the server serves its clients.
	UnreachableAuth = "auth"
	// UnreachableNoCredentials: the monitor has nothing to connect with: the
	// desired state names a Secret (password, TLS material) that does not
	// exist or lacks a key. Nothing was dialled; the reading says nothing
	// about the server.
	UnreachableNoCredentials = "no-credentials"
	// UnreachableNoAddress: the pod has no address yet, or has terminated.
	UnreachableNoAddress = "no-address"
	// UnreachableError: anything else (refused, timed out, reset, no
	// credentials to try).
	UnreachableError = "error"
)

// SystemSample is one reading of a replicated system's internal state: every
// member, and which pods the clients' Service selects.
type SystemSample struct {
	Taken   time.Time `json:"taken"`
	Members []Member  `json:"members"`
	// Service is the client Service's name; Selected are the pods its endpoints list
	// (nil when the Service does not exist).
	Service  string   `json:"service,omitempty"`
	Selected []string `json:"selected,omitempty"`
}

// Primaries lists the reachable members that report the primary role.
func (s *SystemSample) Primaries() []Member {
	var out []Member
	for _, m := range s.Members {
		if m.Reachable && m.Role == RolePrimary {
			out = append(out, m)
		}
	}
	return out
}

// Roles.
const (
	RolePrimary = "primary"
	RoleReplica = "replica"
)

// OpKind is the kind of a workload request.
type OpKind string

// Workload request kinds.
const (
	// OpWrite writes a unique key (then WAITs for replicas).
	OpWrite OpKind = "write"
	// OpRead reads back a key written before.
	OpRead OpKind = "read"
	// OpVerify is a read-back after convergence, for the durability check.
	OpVerify OpKind = "verify"
)

// Op is one workload request, as recorded.
type Op struct {
	Kind  OpKind    `json:"kind"`
	Key   string    `json:"key"`
	Value string    `json:"value,omitempty"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// OK is true when the server answered without error (for reads: also when the key is missing).
	OK  bool   `json:"ok"`
	Err string `json:"err,omitempty"`
	// Acks is, for writes, how many replicas acknowledged (the WAIT reply); -1 when WAIT failed.
	// A read-back (OpVerify) carries its write's Value and Acks, so writes of earlier
	// transitions are judged too.
	Acks int `json:"acks,omitempty"`
	// Found and Got are, for reads and verifies, whether the key existed and its value.
	Found bool   `json:"found,omitempty"`
	Got   string `json:"got,omitempty"`
	// Target is the address (pod IP:port) the request went to.
	Target string `json:"target,omitempty"`
	// ReadOnly is, for a write, that the target refused it as a read-only
	// replica: evidence of the target's role at that moment, which the
	// monitor's readings, taken every 250 ms, may miss.
	ReadOnly bool `json:"readOnly,omitempty"`
}

// History is a workload's record over one transition (or a whole session).
type History struct {
	Workload string `json:"workload"`
	// Required is the replication level the system promises for an acknowledged write
	// (writes with Acks >= Required must survive); 0 means no promise (nothing is checked).
	Required int  `json:"required"`
	Ops      []Op `json:"ops"`
}
