// Package monitors is the "what the system says" stage of a campaign: system
// monitors read a managed system's internal state (for Valkey: each pod's ROLE,
// INFO replication and CONFIG GET, and which pods the client Service selects), and
// workloads send requests while transitions run and record every one of them with
// timestamps. Monitors and workloads record; oracles judge (record first, judge later).
//
// A target registers a SystemMonitor and a Workload; the campaign samples the
// monitor (every 250 ms during a transition, and at each snapshot) and runs one
// WorkloadRun per session, taking its history at every step.
package monitors

import (
	"context"
	"log/slog"

	"k8s.io/client-go/kubernetes"

	"github.com/gauntlet-dev/gauntlet/model"
)

// Env is what a monitor or workload needs to find the system under test.
type Env struct {
	// Kube talks to the cluster the system runs on.
	Kube kubernetes.Interface
	// Namespace holds the custom resource and everything it owns. When empty, the
	// CR's metadata.namespace is used.
	Namespace string
	// CR is the desired state as declared (metadata.name, spec), unstructured.
	CR model.Object
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// SystemMonitor reads a replicated system's internal state.
type SystemMonitor interface {
	// Name identifies the monitor in snapshots and reports.
	Name() string
	// Sample takes one reading. It is cheap enough to call every 250 ms and bounded
	// in time even when members are frozen or partitioned (those are reported as
	// unreachable, not waited for). An error means no reading could be taken
	// (e.g. the API server did not answer); a member that cannot be reached is
	// not an error.
	Sample(ctx context.Context, env Env) (*model.SystemSample, error)
}

// Workload sends requests to the system under test while transitions run.
type Workload interface {
	// Name identifies the workload in histories.
	Name() string
	// Start begins a run in the background and returns at once. The run lasts
	// until Stop is called or ctx is cancelled.
	Start(ctx context.Context, env Env) (WorkloadRun, error)
}

// WorkloadRun is a running workload. Its methods are safe for concurrent use.
type WorkloadRun interface {
	// Take returns the requests completed since the previous Take, in completion
	// order, and empties the buffer.
	Take() []model.Op
	// Update tells the run that the desired state changed (replicas, auth, TLS, …).
	Update(cr model.Object)
	// Required is the replication level the system promises now: writes
	// acknowledged with Acks >= Required must survive; 0 means no promise.
	Required() int
	// Verify reads back every write of this run that was acknowledged with the
	// replication level promised when it was written (Acks >= Required >= 1), and
	// returns one OpVerify per write with Value (written), Found and Got set. A
	// read-back that failed is an op with OK false and Err set (never a loss); the
	// error is non-nil when any read-back failed. Verify may be called after Stop.
	Verify(ctx context.Context) ([]model.Op, error)
	// Stop ends the run and waits (within ctx) for the request in flight. Ops
	// completed before Stop can still be taken. Stop is idempotent.
	Stop(ctx context.Context) error
}
