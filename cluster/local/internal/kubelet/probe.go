package kubelet

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/container"
)

// probeKind is startup, readiness or liveness.
type probeKind string

const (
	probeStartup   probeKind = "Startup"
	probeReadiness probeKind = "Readiness"
	probeLiveness  probeKind = "Liveness"
)

const (
	probeOutputMax = 10 * 1024
	probeUserAgent = "kube-probe/1.35"
)

// startProbes starts the probe workers of a running instance. Without a
// startup probe the container counts as started at once; liveness and
// readiness probes wait until it has started.
func (w *podWorker) startProbes(ctx context.Context, c *ctrRun, proc *container.Process, spec corev1.Container, podIP netip.Addr, startedAt time.Time) {
	started := make(chan struct{})
	if spec.StartupProbe == nil {
		w.setStarted(c, proc)
		close(started)
	} else {
		go w.probeLoop(ctx, probeStartup, spec.StartupProbe, c, proc, spec, podIP, startedAt, nil, started)
	}
	if spec.ReadinessProbe != nil {
		go w.probeLoop(ctx, probeReadiness, spec.ReadinessProbe, c, proc, spec, podIP, startedAt, started, nil)
	}
	if spec.LivenessProbe != nil {
		go w.probeLoop(ctx, probeLiveness, spec.LivenessProbe, c, proc, spec, podIP, startedAt, started, nil)
	}
}

// probeSettings are a probe's timing with the API's defaults applied.
type probeSettings struct {
	initialDelay, period, timeout time.Duration
	success, failure              int
}

func settingsOf(p *corev1.Probe) probeSettings {
	secs := func(v, def int32) time.Duration {
		if v <= 0 {
			v = def
		}
		return time.Duration(v) * time.Second
	}
	s := probeSettings{
		initialDelay: time.Duration(max(p.InitialDelaySeconds, 0)) * time.Second,
		period:       secs(p.PeriodSeconds, 10),
		timeout:      secs(p.TimeoutSeconds, 1),
		success:      int(p.SuccessThreshold),
		failure:      int(p.FailureThreshold),
	}
	if s.success <= 0 {
		s.success = 1
	}
	if s.failure <= 0 {
		s.failure = 3
	}
	return s
}

// probeLoop runs one probe periodically for one instance.
func (w *podWorker) probeLoop(ctx context.Context, kind probeKind, probe *corev1.Probe, c *ctrRun, proc *container.Process,
	spec corev1.Container, podIP netip.Addr, startedAt time.Time, waitFor <-chan struct{}, started chan struct{}) {
	s := settingsOf(probe)
	if waitFor != nil {
		select {
		case <-ctx.Done():
			return
		case <-waitFor:
		}
	}
	first := startedAt.Add(s.initialDelay)
	if kind != probeReadiness {
		// A kubelet's startup and liveness probes run on a ticker started
		// with the pod's probe worker, not with the container: the first
		// probe of a new container comes at the next tick, up to a period
		// after it started (readiness is probed at once when the container
		// has started). Probing at once made a one-failure startup budget
		// (CloudNativePG's startDelay 8 s: failureThreshold 1, period 10 s)
		// fail on every start.
		if now := time.Now(); first.Before(now) {
			first = now
		}
		first = nextTick(w.created, s.period, first)
	}
	if d := time.Until(first); d > 0 {
		if !sleepCtx(ctx, d) {
			return
		}
	}
	tick := time.NewTicker(s.period)
	defer tick.Stop()
	successes, failures := 0, 0
	for {
		ok, out := w.probeOnce(ctx, probe.ProbeHandler, s.timeout, c, proc, spec, podIP)
		if ctx.Err() != nil {
			return
		}
		if ok {
			successes++
			failures = 0
		} else {
			failures++
			successes = 0
			w.eventCtr(c, corev1.EventTypeWarning, "Unhealthy", fmt.Sprintf("%s probe failed: %s", kind, out))
		}
		switch kind {
		case probeStartup:
			if ok && successes >= s.success {
				w.setStarted(c, proc)
				close(started)
				return
			}
			if failures >= s.failure {
				w.requestKill(c, fmt.Sprintf("Container %s failed startup probe", c.name))
				return
			}
		case probeReadiness:
			if ok && successes >= s.success {
				w.setReadiness(c, proc, true)
			} else if !ok && failures >= s.failure {
				w.setReadiness(c, proc, false)
			}
		case probeLiveness:
			if failures >= s.failure {
				w.requestKill(c, fmt.Sprintf("Container %s failed liveness probe", c.name))
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// nextTick is the first tick of a ticker started at origin with period
// (origin + k·period, k ≥ 1) that is not before t.
func nextTick(origin time.Time, period time.Duration, t time.Time) time.Time {
	if period <= 0 {
		return t
	}
	k := int64(1)
	if t.After(origin) {
		k = max(1, int64((t.Sub(origin)+period-1)/period))
	}
	return origin.Add(time.Duration(k) * period)
}

// requestKill asks the container's supervisor to kill it for a probe.
func (w *podWorker) requestKill(c *ctrRun, msg string) {
	w.mu.Lock()
	policy := w.pod.Spec.RestartPolicy
	w.mu.Unlock()
	if policy != corev1.RestartPolicyNever || c.kind == kindSidecar {
		msg += ", will be restarted"
	}
	select {
	case c.probeKill <- msg:
	default:
	}
}

// probeGraceOverride is the probe-level terminationGracePeriodSeconds of
// the liveness or startup probe, if set.
func probeGraceOverride(spec corev1.Container) *time.Duration {
	for _, p := range []*corev1.Probe{spec.LivenessProbe, spec.StartupProbe} {
		if p != nil && p.TerminationGracePeriodSeconds != nil {
			d := time.Duration(*p.TerminationGracePeriodSeconds) * time.Second
			return &d
		}
	}
	return nil
}

// probeOnce runs a probe handler once; the string explains a failure.
func (w *podWorker) probeOnce(ctx context.Context, h corev1.ProbeHandler, timeout time.Duration, c *ctrRun, proc *container.Process, spec corev1.Container, podIP netip.Addr) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case h.Exec != nil:
		return execProbe(ctx, proc, staticExpand(h.Exec.Command, spec.Env))
	case h.HTTPGet != nil:
		return httpProbe(ctx, h.HTTPGet, spec, podIP)
	case h.TCPSocket != nil:
		return tcpProbe(ctx, h.TCPSocket.Host, h.TCPSocket.Port, spec, podIP)
	case h.GRPC != nil:
		return grpcProbe(ctx, h.GRPC, podIP)
	}
	return false, "probe has no handler"
}

// staticExpand expands $(VAR) in an exec probe's command with the
// container's literal env values, as the kubelet does.
func staticExpand(cmd []string, env []corev1.EnvVar) []string {
	vals := map[string]string{}
	for _, e := range env {
		if e.ValueFrom == nil {
			vals[e.Name] = e.Value
		}
	}
	lookup := func(k string) (string, bool) { v, ok := vals[k]; return v, ok }
	out := make([]string, len(cmd))
	for i, s := range cmd {
		out[i] = expand(s, lookup)
	}
	return out
}

// limitedBuffer keeps the first probeOutputMax bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := probeOutputMax - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func execProbe(ctx context.Context, proc *container.Process, argv []string) (bool, string) {
	if len(argv) == 0 {
		return false, "exec probe has no command"
	}
	var out limitedBuffer
	code, err := proc.Exec(ctx, container.ExecOptions{Argv: argv, Stdout: &out, Stderr: &out})
	if ctx.Err() != nil {
		return false, fmt.Sprintf("command %q timed out", strings.Join(argv, " "))
	}
	if err != nil {
		return false, fmt.Sprintf("exec %q: %v", strings.Join(argv, " "), err)
	}
	if code != 0 {
		return false, strings.TrimSpace(out.String())
	}
	return true, out.String()
}

// resolvePort turns a port number or name into a number.
func resolvePort(p intstr.IntOrString, spec corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		if p.IntVal <= 0 || p.IntVal > 65535 {
			return 0, fmt.Errorf("invalid port %d", p.IntVal)
		}
		return int(p.IntVal), nil
	}
	for _, cp := range spec.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil && n > 0 && n <= 65535 {
		return n, nil
	}
	return 0, fmt.Errorf("couldn't find port %q in container %s", p.StrVal, spec.Name)
}

func hostOr(host string, podIP netip.Addr) string {
	if host != "" {
		return host
	}
	return podIP.String()
}

func httpProbe(ctx context.Context, g *corev1.HTTPGetAction, spec corev1.Container, podIP netip.Addr) (bool, string) {
	code, body, err := httpGet(ctx, g, spec, podIP)
	if err != nil {
		return false, err.Error()
	}
	if code >= 200 && code < 400 {
		return true, body
	}
	return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", code)
}

// httpGet performs an httpGet probe or hook request.
func httpGet(ctx context.Context, g *corev1.HTTPGetAction, spec corev1.Container, podIP netip.Addr) (int, string, error) {
	port, err := resolvePort(g.Port, spec)
	if err != nil {
		return 0, "", err
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	p := g.Path
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	u, err := url.Parse(fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(hostOr(g.Host, podIP), strconv.Itoa(port)), p))
	if err != nil {
		return 0, "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("User-Agent", probeUserAgent)
	req.Header.Set("Accept", "*/*")
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	transport := &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes do not verify, as the kubelet's
		DisableKeepAlives: true,
		Proxy:             nil,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{
		Transport: transport,
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			// Follow redirects to the same host only; a redirect elsewhere
			// counts as success, as the kubelet's probes do.
			if len(via) >= 10 || r.URL.Hostname() != u.Hostname() {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, probeOutputMax))
	return resp.StatusCode, string(b), nil
}

func tcpProbe(ctx context.Context, host string, port intstr.IntOrString, spec corev1.Container, podIP netip.Addr) (bool, string) {
	n, err := resolvePort(port, spec)
	if err != nil {
		return false, err.Error()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(hostOr(host, podIP), strconv.Itoa(n)))
	if err != nil {
		return false, err.Error()
	}
	conn.Close()
	return true, ""
}

func grpcProbe(ctx context.Context, g *corev1.GRPCAction, podIP netip.Addr) (bool, string) {
	addr := net.JoinHostPort(podIP.String(), strconv.Itoa(int(g.Port)))
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUserAgent(probeUserAgent))
	if err != nil {
		return false, fmt.Sprintf("failed to connect service %q: %v", addr, err)
	}
	defer conn.Close()
	service := ""
	if g.Service != nil {
		service = *g.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return false, fmt.Sprintf("timeout: health rpc did not complete within the probe timeout")
		}
		return false, fmt.Sprintf("error: health rpc probe failed: %v", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return false, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())
	}
	return true, ""
}

// lifecycleHandler returns the postStart (post true) or preStop handler.
func lifecycleHandler(l *corev1.Lifecycle, post bool) *corev1.LifecycleHandler {
	if l == nil {
		return nil
	}
	if post {
		return l.PostStart
	}
	return l.PreStop
}

// runHook runs the lifecycle hook named hook ("PostStartHook", "PreStopHook")
// and, when it fails, records the Failed<hook> warning event with its output.
func (w *podWorker) runHook(ctx context.Context, c *ctrRun, proc *container.Process, spec corev1.Container, podIP netip.Addr, h *corev1.LifecycleHandler, hook string) error {
	out, err := w.runHandler(ctx, c, proc, spec, podIP, h)
	if err != nil {
		msg := fmt.Sprintf("%s failed: %v", hook, err)
		if out != "" {
			msg += ": " + out
		}
		w.eventCtr(c, corev1.EventTypeWarning, "Failed"+hook, msg)
	}
	return err
}

// runHandler runs a lifecycle hook: exec in the container, httpGet, or sleep.
func (w *podWorker) runHandler(ctx context.Context, c *ctrRun, proc *container.Process, spec corev1.Container, podIP netip.Addr, h *corev1.LifecycleHandler) (string, error) {
	switch {
	case h.Exec != nil:
		var out limitedBuffer
		code, err := proc.Exec(ctx, container.ExecOptions{Argv: h.Exec.Command, Stdout: &out, Stderr: &out})
		if err != nil {
			return out.String(), err
		}
		if code != 0 {
			return out.String(), fmt.Errorf("command %q exited with %d", strings.Join(h.Exec.Command, " "), code)
		}
		return out.String(), nil
	case h.HTTPGet != nil:
		code, body, err := httpGet(ctx, h.HTTPGet, spec, podIP)
		if err != nil {
			return "", err
		}
		if code < 200 || code >= 400 {
			return body, fmt.Errorf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed with status code %d", h.HTTPGet.Path, c.name, w.key, code)
		}
		return "", nil
	case h.Sleep != nil:
		if !sleepCtx(ctx, time.Duration(h.Sleep.Seconds)*time.Second) {
			return "", nil
		}
		return "", nil
	case h.TCPSocket != nil:
		return "", nil // deprecated and not run by the kubelet either
	}
	return "", nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
