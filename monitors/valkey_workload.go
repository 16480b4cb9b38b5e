package monitors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	vk "github.com/valkey-io/valkey-go"
	"k8s.io/client-go/kubernetes"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/monitors/internal/valkeyconn"
)

// ValkeyWorkloadOptions tune a ValkeyWorkload. Zero values take the documented defaults.
type ValkeyWorkloadOptions struct {
	// Port is the port dialled on each endpoint IP; default ValkeyPort (6379).
	Port int
	// Interval between writes; default 50ms. A request that takes longer delays the
	// next one (requests are sequential, as one client's would be).
	Interval time.Duration
	// RequestTimeout bounds a request, including connecting; default 500ms. A write
	// gets RequestTimeout + WaitTimeout in all.
	RequestTimeout time.Duration
	// WaitTimeout is the timeout of the WAIT that follows each write; default 200ms.
	WaitTimeout time.Duration
	// ReadEvery reads the latest successfully written key back after every
	// ReadEvery writes; default 10, negative disables reads.
	ReadEvery int
	// ResolveEvery is how often the client Service's endpoints (and the credentials)
	// are looked up again; default 1s. After a failed request they are looked up
	// again after ResolveEvery/4 already, and after Update at once.
	ResolveEvery time.Duration
	// VerifyBatch is the number of keys per MGET in Verify; default 500.
	VerifyBatch int
	// VerifyTimeout bounds each Verify request (ROLE, one MGET); default 5s.
	VerifyTimeout time.Duration
	// RunID names the run in its keys ("gauntlet:<RunID>:<seq>"); default a
	// base-36 timestamp taken at Start.
	RunID string
}

func (o ValkeyWorkloadOptions) withDefaults() ValkeyWorkloadOptions {
	if o.Port == 0 {
		o.Port = ValkeyPort
	}
	if o.Interval <= 0 {
		o.Interval = 50 * time.Millisecond
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 500 * time.Millisecond
	}
	if o.WaitTimeout <= 0 {
		o.WaitTimeout = 200 * time.Millisecond
	}
	if o.ReadEvery == 0 {
		o.ReadEvery = 10
	}
	if o.ResolveEvery <= 0 {
		o.ResolveEvery = time.Second
	}
	if o.VerifyBatch <= 0 {
		o.VerifyBatch = 500
	}
	if o.VerifyTimeout <= 0 {
		o.VerifyTimeout = 5 * time.Second
	}
	return o
}

// ValkeyWorkload writes unique keys to a ValkeyCluster of the bundled operator
// through its client Service, each write followed by WAIT for the replication
// level the cluster promises, and now and then reads the latest key back.
//
// Ops: a write's Key is "gauntlet:<run>:<seq>" and its Value is <seq>; OK is
// true when SET succeeded, and Acks is the WAIT reply, or -1 when there is none
// (SET failed, or WAIT did: Err says which). A read is a GET of the latest key
// written successfully, with Value the value written. Target is the endpoint
// (pod IP:port) the request went to.
type ValkeyWorkload struct {
	opts ValkeyWorkloadOptions
}

var _ Workload = (*ValkeyWorkload)(nil)

// NewValkeyWorkload returns a workload with the given options.
func NewValkeyWorkload(opts ValkeyWorkloadOptions) *ValkeyWorkload {
	return &ValkeyWorkload{opts: opts}
}

// Name is "valkey-writes".
func (w *ValkeyWorkload) Name() string { return "valkey-writes" }

// Start begins writing in the background. Requests go to the ready endpoints of
// the client Service (named like the CR), round robin as kube-proxy would spread
// them; when there is none, each attempt is recorded as a failed op.
func (w *ValkeyWorkload) Start(ctx context.Context, env Env) (WorkloadRun, error) {
	_, ns, err := clusterOf(env)
	if err != nil {
		return nil, fmt.Errorf("valkey workload: %w", err)
	}
	opts := w.opts.withDefaults()
	return startValkeyRun(ctx, opts, env.Logger, env.CR, kubeResolver(env.Kube, ns, opts.Port)), nil
}

// target is one address requests may go to.
type target struct {
	pod  string
	addr string
	sec  valkeyconn.Security
}

// resolveFunc finds where requests go for the cluster spec describes. An error
// wrapping errNoTarget means there is definitely nowhere to send them (no Service,
// no ready endpoint, missing credentials); other errors are lookup failures, after
// which the previous targets stay in use (as kube-proxy keeps its rules when the
// API server is unreachable).
type resolveFunc func(ctx context.Context, spec valkeySpec) ([]target, error)

// errNoTarget marks resolutions that found nowhere to send requests.
var errNoTarget = errors.New("no endpoint to send requests to")

// kubeResolver resolves the client Service's ready endpoints and the credentials.
func kubeResolver(kube kubernetes.Interface, ns string, port int) resolveFunc {
	return func(ctx context.Context, spec valkeySpec) ([]target, error) {
		exists, eps, err := clientService(ctx, kube, ns, spec.name)
		if err != nil {
			return nil, err
		}
		if !exists {
			return nil, fmt.Errorf("%w: the client Service %s/%s does not exist", errNoTarget, ns, spec.name)
		}
		if len(eps) == 0 {
			return nil, fmt.Errorf("%w: the client Service %s/%s has no ready endpoint (no pod labelled %s=primary is ready)", errNoTarget, ns, spec.name, ValkeyRoleLabel)
		}
		sec, err := security(ctx, kube, ns, spec)
		if err != nil {
			if errors.Is(err, errSecretMissing) {
				return nil, fmt.Errorf("%w: %w", errNoTarget, err)
			}
			return nil, err
		}
		out := make([]target, 0, len(eps))
		for _, e := range eps {
			out = append(out, target{pod: e.pod, addr: hostPort(e.ip, port), sec: withServerNames(sec, ns, spec.name, e.pod)})
		}
		return out, nil
	}
}

// promise is a write acknowledged with the replication level promised when it was made.
type promise struct {
	key, value string
	acks       int
}

// valkeyRun is a running ValkeyWorkload.
type valkeyRun struct {
	opts    ValkeyWorkloadOptions
	log     *slog.Logger
	resolve resolveFunc
	pool    *valkeyconn.Pool
	prefix  string

	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once

	mu       sync.Mutex
	spec     valkeySpec
	dirty    bool // the desired state changed: resolve again before the next request
	buf      []model.Op
	promised []promise

	// Owned by the loop goroutine.
	targets    []target
	resolveErr error
	resolvedAt time.Time
	stale      bool
	next       int // round-robin position
	seq        int
	writes     int
	lastKey    string
	lastValue  string
	logged     string // the last resolution problem logged (logged once, not per request)
}

var _ WorkloadRun = (*valkeyRun)(nil)

// startValkeyRun starts the loop. cr must parse (the caller checked).
func startValkeyRun(ctx context.Context, opts ValkeyWorkloadOptions, log *slog.Logger, cr model.Object, resolve resolveFunc) *valkeyRun {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	spec, _ := parseValkeyCR(cr)
	runID := opts.RunID
	if runID == "" {
		runID = strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &valkeyRun{
		opts:    opts,
		log:     log.With("workload", "valkey-writes", "run", runID),
		resolve: resolve,
		pool:    valkeyconn.NewPool(valkeyconn.Options{DialTimeout: opts.RequestTimeout, IOTimeout: opts.RequestTimeout + opts.WaitTimeout, ClientName: "gauntlet-workload"}),
		prefix:  "gauntlet:" + runID + ":",
		cancel:  cancel,
		done:    make(chan struct{}),
		spec:    spec,
		stale:   true,
	}
	go r.loop(ctx)
	return r
}

func (r *valkeyRun) loop(ctx context.Context) {
	defer close(r.done)
	defer r.pool.Close()
	t := time.NewTicker(r.opts.Interval)
	defer t.Stop()
	for {
		r.step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// step refreshes the targets when due, writes one key and, every ReadEvery
// writes, reads the latest written key back.
func (r *valkeyRun) step(ctx context.Context) {
	r.mu.Lock()
	spec, dirty := r.spec, r.dirty
	r.dirty = false
	r.mu.Unlock()
	required := spec.requiredAcks()

	// After a failure, look again sooner, but not before every request: an outage
	// must not turn the workload into an API server load test.
	since := time.Since(r.resolvedAt)
	if dirty || since >= r.opts.ResolveEvery || (r.stale && since >= r.opts.ResolveEvery/4) {
		r.refresh(ctx, spec)
	}
	if ctx.Err() != nil {
		return
	}

	seq := r.seq
	r.seq++
	op := r.write(ctx, r.prefix+strconv.Itoa(seq), strconv.Itoa(seq), required)
	if ctx.Err() != nil {
		return // stopped mid-request: the failure is ours, not the system's
	}
	r.record(op, required)
	if op.OK {
		r.lastKey, r.lastValue = op.Key, op.Value
	}
	r.writes++
	if r.opts.ReadEvery > 0 && r.writes%r.opts.ReadEvery == 0 && r.lastKey != "" {
		op := r.read(ctx, r.lastKey, r.lastValue)
		if ctx.Err() != nil {
			return
		}
		r.record(op, required)
	}
}

// refresh looks the targets up again.
func (r *valkeyRun) refresh(ctx context.Context, spec valkeySpec) {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ts, err := r.resolve(rctx, spec)
	r.resolvedAt = time.Now()
	r.stale = false
	switch {
	case err == nil && len(ts) == 0:
		err = fmt.Errorf("%w: the client Service lists no endpoint", errNoTarget)
		fallthrough
	case errors.Is(err, errNoTarget):
		r.targets, r.resolveErr = nil, err
	case err != nil:
		if ctx.Err() == nil && err.Error() != r.logged {
			r.logged = err.Error()
			r.log.Warn("looking up the client Service failed; keeping the previous endpoints", "err", err)
		}
		r.resolveErr = err
		return
	default:
		if !sameTargets(r.targets, ts) {
			r.log.Debug("client Service endpoints", "targets", targetNames(ts))
		}
		r.targets, r.resolveErr, r.logged = ts, nil, ""
	}
	if r.resolveErr != nil && r.resolveErr.Error() != r.logged {
		r.logged = r.resolveErr.Error()
		r.log.Info("no endpoint to send requests to; recording them as failed", "reason", r.resolveErr)
	}
	keep := map[string]bool{}
	for _, t := range r.targets {
		keep[t.addr] = true
	}
	r.pool.Retain(keep)
}

func sameTargets(a, b []target) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].addr != b[i].addr || a[i].pod != b[i].pod {
			return false
		}
	}
	return true
}

func targetNames(ts []target) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.pod + "=" + t.addr
	}
	return out
}

// pick returns the next target, round robin.
func (r *valkeyRun) pick() (target, error) {
	if len(r.targets) == 0 {
		err := r.resolveErr
		if err == nil {
			err = errNoTarget
		}
		return target{}, err
	}
	t := r.targets[r.next%len(r.targets)]
	r.next++
	return t, nil
}

// begin picks the next target for op and connects to it within timeout. On
// failure it completes op with the error and returns a nil client. The caller
// always calls cancel.
func (r *valkeyRun) begin(ctx context.Context, op *model.Op, timeout time.Duration) (context.Context, context.CancelFunc, vk.Client, target) {
	t, err := r.pick()
	op.Start = time.Now()
	if err != nil {
		op.End, op.Err, r.stale = op.Start, err.Error(), true
		return ctx, func() {}, nil, t
	}
	op.Target = t.addr
	ctx, cancel := context.WithTimeout(ctx, timeout)
	c, err := r.pool.GetContext(ctx, t.addr, t.sec)
	if err != nil {
		op.End, op.Err, r.stale = time.Now(), err.Error(), true
		return ctx, cancel, nil, t
	}
	return ctx, cancel, c, t
}

// readOnlyReplica reports whether err is a replica's refusal of a write
// (READONLY You can't write against a read only replica).
func readOnlyReplica(err error) bool {
	ve, ok := vk.IsValkeyErr(err)
	return ok && strings.HasPrefix(ve.Error(), "READONLY")
}

// write sends SET key value then WAIT required WaitTimeout on the same
// connection, within RequestTimeout + WaitTimeout.
func (r *valkeyRun) write(ctx context.Context, key, value string, required int) model.Op {
	op := model.Op{Kind: model.OpWrite, Key: key, Value: value, Acks: -1}
	ctx, cancel, c, t := r.begin(ctx, &op, r.opts.RequestTimeout+r.opts.WaitTimeout)
	defer cancel()
	if c == nil {
		return op
	}
	// WAIT is a blocking command: valkey-go sends the pair on one dedicated
	// connection, so WAIT counts the replicas that acknowledged this SET.
	res := c.DoMulti(ctx,
		c.B().Set().Key(key).Value(value).Build(),
		c.B().Wait().Numreplicas(int64(required)).Timeout(r.opts.WaitTimeout.Milliseconds()).Build(),
	)
	op.End = time.Now()
	if err := res[0].Error(); err != nil {
		op.Err = "SET: " + valkeyconn.Describe(err).Error()
		op.ReadOnly = readOnlyReplica(err)
		r.failed(t.addr, err)
		return op
	}
	op.OK = true
	acks, err := res[1].AsInt64()
	if err != nil {
		op.Err = "WAIT: " + valkeyconn.Describe(err).Error()
		r.failed(t.addr, err)
		return op
	}
	op.Acks = int(acks)
	return op
}

// read GETs key (written with value) within RequestTimeout.
func (r *valkeyRun) read(ctx context.Context, key, value string) model.Op {
	op := model.Op{Kind: model.OpRead, Key: key, Value: value}
	ctx, cancel, c, t := r.begin(ctx, &op, r.opts.RequestTimeout)
	defer cancel()
	if c == nil {
		return op
	}
	got, err := c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
	op.End = time.Now()
	switch {
	case err == nil:
		op.OK, op.Found, op.Got = true, true, got
	case vk.IsValkeyNil(err):
		op.OK = true
	default:
		op.Err = "GET: " + valkeyconn.Describe(err).Error()
		r.failed(t.addr, err)
	}
	return op
}

// failed reacts to a request error: resolve again before the next request, and
// drop the connection unless the server itself answered with an error.
func (r *valkeyRun) failed(addr string, err error) {
	r.stale = true
	if _, isReply := vk.IsValkeyErr(err); !isReply {
		r.pool.Forget(addr)
	}
}

// record appends op to the buffer, and remembers a write acknowledged with the
// promised replication level.
func (r *valkeyRun) record(op model.Op, required int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, op)
	if op.Kind == model.OpWrite && op.OK && required >= 1 && op.Acks >= required {
		r.promised = append(r.promised, promise{key: op.Key, value: op.Value, acks: op.Acks})
	}
}

// Take returns the ops completed since the previous Take.
func (r *valkeyRun) Take() []model.Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.buf
	r.buf = nil
	return out
}

// Update records the new desired state; the endpoints and credentials are looked
// up again before the next request. A CR that does not parse is logged and ignored.
func (r *valkeyRun) Update(cr model.Object) {
	spec, err := parseValkeyCR(cr)
	if err != nil {
		r.log.Warn("ignoring an unusable desired state", "err", err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spec = spec
	r.dirty = true
}

// Required is 1 when the desired state has at least two replicas, else 0.
func (r *valkeyRun) Required() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spec.requiredAcks()
}

// Verify reads back every promised write with MGET on the one endpoint of the
// client Service that reports role master.
func (r *valkeyRun) Verify(ctx context.Context) ([]model.Op, error) {
	r.mu.Lock()
	promised := append([]promise(nil), r.promised...)
	spec := r.spec
	r.mu.Unlock()

	ops := make([]model.Op, len(promised))
	for i, p := range promised {
		ops[i] = model.Op{Kind: model.OpVerify, Key: p.key, Value: p.value, Acks: p.acks}
	}
	if len(ops) == 0 {
		return ops, nil
	}
	fail := func(ops []model.Op, start time.Time, err error) {
		end := time.Now()
		for i := range ops {
			ops[i].Start, ops[i].End, ops[i].Err = start, end, err.Error()
		}
	}

	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, r.opts.VerifyTimeout)
	ts, err := r.resolve(rctx, spec)
	cancel()
	if err == nil && len(ts) == 0 {
		err = fmt.Errorf("%w: the client Service lists no endpoint", errNoTarget)
	}
	if err != nil {
		err = fmt.Errorf("verify: %w", err)
		fail(ops, start, err)
		return ops, err
	}
	// A pool of its own: the loop prunes its pool to its current endpoints.
	pool := valkeyconn.NewPool(valkeyconn.Options{DialTimeout: r.opts.VerifyTimeout, IOTimeout: r.opts.VerifyTimeout, ClientName: "gauntlet-verify"})
	defer pool.Close()
	primary, c, err := r.findPrimary(ctx, pool, ts)
	if err != nil {
		err = fmt.Errorf("verify: %w", err)
		fail(ops, start, err)
		return ops, err
	}

	var errs []error
	for lo := 0; lo < len(ops); lo += r.opts.VerifyBatch {
		batch := ops[lo:min(lo+r.opts.VerifyBatch, len(ops))]
		keys := make([]string, len(batch))
		for i := range batch {
			keys[i] = batch[i].Key
			batch[i].Target = primary.addr
		}
		bstart := time.Now()
		bctx, cancel := context.WithTimeout(ctx, r.opts.VerifyTimeout)
		vals, err := c.Do(bctx, c.B().Mget().Key(keys...).Build()).ToArray()
		cancel()
		if err == nil && len(vals) != len(keys) {
			err = fmt.Errorf("MGET of %d keys returned %d values", len(keys), len(vals))
		}
		if err != nil {
			err = fmt.Errorf("verify: MGET on %s: %w", primary.addr, valkeyconn.Describe(err))
			fail(batch, bstart, err)
			errs = append(errs, err)
			continue
		}
		end := time.Now()
		for i := range batch {
			batch[i].Start, batch[i].End, batch[i].OK = bstart, end, true
			if vals[i].IsNil() {
				continue
			}
			if s, err := vals[i].ToString(); err == nil {
				batch[i].Found, batch[i].Got = true, s
			}
		}
	}
	r.forgetLost(ops)
	return ops, errors.Join(errs...)
}

// forgetLost stops reading back the writes this verification found lost (or
// changed): the loss is reported once, not again at every later step.
func (r *valkeyRun) forgetLost(ops []model.Op) {
	lost := map[string]bool{}
	for _, op := range ops {
		if op.OK && (!op.Found || op.Got != op.Value) {
			lost[op.Key] = true
		}
	}
	if len(lost) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.promised[:0]
	for _, p := range r.promised {
		if !lost[p.key] {
			kept = append(kept, p)
		}
	}
	r.promised = kept
}

// findPrimary returns the one target that reports role master, and a client to it.
func (r *valkeyRun) findPrimary(ctx context.Context, pool *valkeyconn.Pool, ts []target) (target, vk.Client, error) {
	type answer struct {
		t    target
		c    vk.Client
		role string
		err  error
	}
	answers := make([]answer, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Go(func() {
			actx, cancel := context.WithTimeout(ctx, r.opts.VerifyTimeout)
			defer cancel()
			a := answer{t: t}
			a.c, a.err = pool.GetContext(actx, t.addr, t.sec)
			if a.err == nil {
				var arr []vk.ValkeyMessage
				arr, a.err = a.c.Do(actx, a.c.B().Role().Build()).ToArray()
				if a.err == nil && len(arr) > 0 {
					a.role, a.err = arr[0].ToString()
				}
			}
			answers[i] = a
		})
	}
	wg.Wait()
	var masters []answer
	var problems []string
	for _, a := range answers {
		switch {
		case a.err != nil:
			problems = append(problems, fmt.Sprintf("%s (%s): %v", a.t.pod, a.t.addr, valkeyconn.Describe(a.err)))
		case a.role == "master":
			masters = append(masters, a)
		default:
			problems = append(problems, fmt.Sprintf("%s (%s) reports role %s", a.t.pod, a.t.addr, a.role))
		}
	}
	switch len(masters) {
	case 1:
		return masters[0].t, masters[0].c, nil
	case 0:
		return target{}, nil, fmt.Errorf("no endpoint of the client Service reports role master: %s", strings.Join(problems, "; "))
	default:
		var names []string
		for _, m := range masters {
			names = append(names, fmt.Sprintf("%s (%s)", m.t.pod, m.t.addr))
		}
		sort.Strings(names)
		return target{}, nil, fmt.Errorf("the client Service selects %d servers that report role master (%s): cannot tell which holds the data", len(masters), strings.Join(names, ", "))
	}
}

// Stop ends the loop, which closes its connections. Verify still works after Stop.
func (r *valkeyRun) Stop(ctx context.Context) error {
	var err error
	r.stopOnce.Do(func() {
		r.cancel()
		select {
		case <-r.done:
		case <-ctx.Done():
			r.pool.Close() // unblocks the request in flight; the loop closes it again on exit
			err = fmt.Errorf("valkey workload: stop: the request in flight did not end: %w", ctx.Err())
		}
	})
	return err
}
