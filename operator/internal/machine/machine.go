// Package machine is the ValkeyCluster reconciler as an explicit state machine in
// the style of Anvil: a pure Step(input, lastResponse, state) → (state, request)
// that asks for exactly one external request per step (get, list, create, update
// or delete one object, update the status, or send one command to one Valkey
// server), and a thin loop, elsewhere, that executes the requests.
//
// State is the journal of the responses received in the current pass. Each Step
// replays the reconciliation logic from the top against the journal — every
// decision is a pure function of the input and the responses — until it needs a
// response it does not have, and asks for it. A pass ends with a Done request.
// Nothing survives a pass: the next one starts from an empty journal and reads
// the world again, so whatever intermediate state a crash leaves behind, the
// next pass sees it and converges (level-triggered).
package machine

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/failover"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

// Input is the desired side of a pass: the custom resource as read at the start
// of the pass, and what the operator knows outside the API (health checks, clock).
type Input struct {
	// Cluster is the ValkeyCluster as read (Step applies the defaults).
	Cluster *v1alpha1.ValkeyCluster
	// Health holds the health checks of the cluster's pods, by pod name.
	Health map[string]failover.Health
	// Now is the time of the pass.
	Now time.Time
}

// Kind of a request.
type Kind int

// Request kinds.
const (
	// Done ends the pass.
	Done Kind = iota
	// Get reads Object (its name and namespace are set); NotFound is a normal answer.
	Get
	// List reads List in Namespace with the label selector Labels.
	List
	// Create creates Object.
	Create
	// Update updates Object (optimistic concurrency on its resourceVersion).
	Update
	// Delete deletes Object (with the UID precondition when set; orphaning
	// dependents when Orphan).
	Delete
	// UpdateStatus writes Object's status subresource.
	UpdateStatus
	// Valkey sends one command to one server.
	Valkey
)

func (k Kind) String() string {
	return [...]string{"Done", "Get", "List", "Create", "Update", "Delete", "UpdateStatus", "Valkey"}[k]
}

// Request is one external request.
type Request struct {
	Kind      Kind
	Object    client.Object
	List      client.ObjectList
	Namespace string
	Labels    map[string]string
	// Orphan deletes without deleting dependents (propagation Orphan).
	Orphan bool
	// Valkey is the command of a Valkey request.
	Valkey *ValkeyCommand
	// RequeueAfter (Done) asks for the next pass after this delay (0: only on events).
	RequeueAfter time.Duration
	// Err (Done) ends the pass with an error (retried with back-off).
	Err error
	// Events are to be recorded on the ValkeyCluster before the request runs.
	Events []Event
	// Why explains the request (for logs).
	Why string
}

// ValkeyCommand is a command for one pod's server.
type ValkeyCommand struct {
	Pod      string
	Endpoint valkey.Endpoint
	Args     []string
	Timeout  time.Duration
}

// Event is a Kubernetes event about the ValkeyCluster.
type Event struct {
	Type    string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason  string
	Message string
}

// Response is the answer to the last request.
type Response struct {
	// Object is what Get, Create, Update and UpdateStatus returned.
	Object client.Object
	// List is what List returned.
	List client.ObjectList
	// Reply is the Valkey reply.
	Reply valkey.Reply
	// Err is the request's error (apierrors for API requests; *valkey.ServerError
	// for error replies).
	Err error
}

// State is the journal of a pass. Start every pass with the zero State. Step may
// modify the maps of the State it is given: pass each returned State to the next
// Step and keep no other copy.
type State struct {
	// Results holds the responses received, by request key.
	Results map[string]Response
	// Pending is the key of the request in flight.
	Pending string
	// Steps counts the requests of the pass.
	Steps int
}

// MaxSteps bounds a pass; a pass that needs more ends and the next continues.
const MaxSteps = 400

// errNeed is the internal signal that a request must be issued.
type errNeed struct{ req Request }

func (e *errNeed) Error() string { return "request needed: " + e.req.Kind.String() }

// ErrTooManySteps ends a pass that did not finish within MaxSteps.
var ErrTooManySteps = errors.New("machine: the pass did not converge within the step budget; the next pass continues from a fresh read")

// Step is the pure transition: it records resp as the answer to the pending
// request, replays the pass, and returns the next request.
func Step(in Input, resp Response, s State) (State, Request) {
	return step(resp, s, func(s *State) Request { return newPass(in, s).run() })
}

// step is the journal handling every reconciler's transition shares: it
// records resp as the answer to the pending request, ends a pass that used up
// MaxSteps, runs the replay and counts the step unless the pass is done.
func step(resp Response, s State, replay func(*State) Request) (State, Request) {
	if s.Results == nil {
		s.Results = map[string]Response{}
	}
	if s.Pending != "" {
		s.Results[s.Pending] = resp
		s.Pending = ""
	}
	if s.Steps >= MaxSteps {
		return s, Request{Kind: Done, Err: ErrTooManySteps, RequeueAfter: time.Second}
	}
	req := replay(&s)
	if req.Kind != Done {
		s.Steps++
	}
	return s, req
}

// pass is one replay of the reconciliation over the journal.
type pass struct {
	in     Input
	s      *State
	events []Event
	// key of the request the replay stopped at
	need *Request
	// working values rebuilt on each replay
	c *v1alpha1.ValkeyCluster
	w world
}

func newPass(in Input, s *State) *pass {
	return &pass{in: in, s: s}
}

// call returns the recorded response to the request with this key, or asks for
// the request (panicking with errNeed, recovered by run).
func (p *pass) call(key string, mk func() Request) Response {
	if r, ok := p.s.Results[key]; ok {
		return r
	}
	req := mk()
	p.s.Pending = key
	panic(&errNeed{req: req})
}

// emit queues an event; it is attached to the next request, so an event is
// recorded once even though the pass is replayed.
func (p *pass) emit(key, typ, reason, msg string) {
	if _, done := p.s.Results["event:"+key]; done {
		return
	}
	p.events = append(p.events, Event{Type: typ, Reason: reason, Message: msg})
	p.s.Results["event:"+key] = Response{}
}

func (p *pass) run() (req Request) {
	defer func() {
		if r := recover(); r != nil {
			need, ok := r.(*errNeed)
			if !ok {
				panic(r)
			}
			req = need.req
			req.Events = p.events
		}
	}()
	req = p.reconcile()
	req.Kind = Done
	req.Events = p.events
	return req
}

// done ends the pass.
func done(after time.Duration, err error) Request {
	return Request{Kind: Done, RequeueAfter: after, Err: err}
}

// endPass is raised to end the pass from deep inside a stage.
type endPass struct{ req Request }

func (p *pass) end(after time.Duration, err error, why string) {
	r := done(after, err)
	r.Why = why
	panic(&endPass{req: r})
}

func (p *pass) reconcile() (req Request) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(*endPass); ok {
				req = e.req
				return
			}
			panic(r)
		}
	}()
	return p.reconcileCluster()
}

// Helpers for API requests.

func (p *pass) get(key string, obj client.Object) (client.Object, bool, error) {
	r := p.call(key, func() Request { return Request{Kind: Get, Object: obj, Why: "read " + key} })
	if r.Err != nil {
		if isNotFound(r.Err) {
			return nil, false, nil
		}
		return nil, false, r.Err
	}
	return r.Object, true, nil
}

func (p *pass) write(key string, kind Kind, obj client.Object, why string) (client.Object, error) {
	r := p.call(key, func() Request { return Request{Kind: kind, Object: obj, Why: why} })
	return r.Object, r.Err
}

func (p *pass) valkeyCmd(key string, pod podRef, why string, args ...string) (valkey.Reply, error) {
	r := p.call(key, func() Request {
		return Request{Kind: Valkey, Why: why, Valkey: &ValkeyCommand{
			Pod: pod.name, Endpoint: p.endpoint(pod), Args: args, Timeout: p.opTimeout(),
		}}
	})
	return r.Reply, r.Err
}

// apiErr ends the pass on an unexpected API error: conflicts retry at once, the
// rest with back-off.
//
// A write the API server refuses as invalid (the spec renders an object its
// validation rejects, e.g. a security context that the CRD's schema allows but
// the core validation does not) blocks the cluster with reason SpecRejected and
// the server's message, instead of retrying unseen; a corrected spec is picked
// up at once (the change triggers a pass).
func (p *pass) apiErr(what string, err error) {
	if isConflict(err) {
		p.end(100*time.Millisecond, nil, what+": conflict, retrying with a fresh read")
	}
	if apierrors.IsInvalid(err) && p.c != nil && p.w.cr != nil {
		p.block("SpecRejected", fmt.Sprintf("%s: the API server refused it: %v", what, err), time.Minute)
	}
	p.end(0, fmt.Errorf("%s: %w", what, err), "")
}

var _ = corev1.EventTypeNormal
