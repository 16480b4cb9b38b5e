// Package view is the operator's view of the API server, perturbed on
// command: a reverse proxy the operator's connection is pointed at (its
// kubeconfig, or the in-cluster KUBERNETES_SERVICE_HOST/PORT with a serving
// certificate the cluster's CA signed) that passes every request through
// unchanged with the operator's own credentials and, when told, serves reads
// and watch events from a lagging view, withholds chosen watch events, or cuts
// the operator's connections right after its Nth write of a kind and has it
// restarted (Sieve's stale, unobserved and intermediate states). It records
// every request, watch event and change it made as JSON lines.
package view

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
)

// Config configures a Proxy.
type Config struct {
	// Upstream reaches the API server: its address and TLS trust are used, its
	// credentials never (each request carries the operator's own).
	Upstream *rest.Config
	// Listen is the address to listen on (default "127.0.0.1:0"), unless
	// Listener is set: then the proxy serves on it (and closes it).
	Listen   string
	Listener net.Listener
	// Cert is the serving certificate; nil serves plain HTTP.
	Cert *tls.Certificate
	// Restart restarts the operator after a crash-after-write cut (nil: the
	// connections are cut and nothing else happens). New connections are
	// refused until it returns.
	Restart func(ctx context.Context) error
	// Log receives what goes wrong (default: discarded).
	Log *slog.Logger
}

// Proxy is a running view proxy.
type Proxy struct {
	cfg       Config
	log       *slog.Logger
	ln        net.Listener
	srv       *http.Server
	rp        *httputil.ReverseProxy
	transport http.RoundTripper
	target    *url.URL
	infos     *request.RequestInfoFactory
	clock     *clock
	rec       recorder
	streams   atomic.Uint64
	bg        context.Context
	stopBG    context.CancelFunc
	wg        sync.WaitGroup

	mu       sync.Mutex
	rules    Rules
	crash    *writeCounter
	withheld []int // per Rules.Withhold entry: events withheld so far
	conns    map[net.Conn]struct{}
	cutting  bool
	live     map[uint64]*liveStream // watch streams being served
}

// errCut is how a response that must not reach the operator ends.
var errCut = errors.New("view: connection cut after the chosen write")

// history is how long the proxy remembers when it saw each resource version.
const history = 10 * time.Minute

// Start listens and serves until Close.
func Start(ctx context.Context, cfg Config) (*Proxy, error) {
	if cfg.Upstream == nil {
		return nil, errors.New("view: no upstream API server configuration")
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	anon := rest.AnonymousClientConfig(cfg.Upstream)
	transport, err := rest.TransportFor(anon)
	if err != nil {
		return nil, fmt.Errorf("view: transport to the API server %s: %w", cfg.Upstream.Host, err)
	}
	target, err := url.Parse(anon.Host)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("view: API server address %q is not a URL: %v", anon.Host, err)
	}
	if target.Scheme == "" {
		target.Scheme = "https"
	}
	ln := cfg.Listener
	if ln == nil {
		var lc net.ListenConfig
		if ln, err = lc.Listen(ctx, "tcp", cfg.Listen); err != nil {
			return nil, fmt.Errorf("view: listen on %s: %w", cfg.Listen, err)
		}
	}
	p := &Proxy{
		cfg: cfg, log: cfg.Log, ln: ln, transport: transport, target: target,
		infos: &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")},
		clock: newClock(history),
		conns: map[net.Conn]struct{}{},
		live:  map[uint64]*liveStream{},
	}
	p.bg, p.stopBG = context.WithCancel(context.Background())
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// The transport asks for gzip itself and decompresses, so that
			// answers can be read; the operator gets them uncompressed.
			pr.Out.Header.Del("Accept-Encoding")
		},
		Transport:      transport,
		FlushInterval:  -1,
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.errorHandler,
		ErrorLog:       slog.NewLogLogger(cfg.Log.Handler(), slog.LevelDebug),
	}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 30 * time.Second,
		ConnState:         p.connState,
		ErrorLog:          slog.NewLogLogger(cfg.Log.Handler(), slog.LevelDebug),
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		var err error
		if cfg.Cert != nil {
			p.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*cfg.Cert}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12}
			err = p.srv.ServeTLS(ln, "", "")
		} else {
			err = p.srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error("view proxy stopped", "err", err)
		}
	}()
	return p, nil
}

// Addr is the address the proxy listens on (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is the proxy's base URL.
func (p *Proxy) URL() string {
	scheme := "http"
	if p.cfg.Cert != nil {
		scheme = "https"
	}
	return scheme + "://" + p.Addr()
}

// Close stops serving and closes every connection.
func (p *Proxy) Close() error {
	p.stopBG()
	err := p.srv.Close()
	p.wg.Wait()
	if err != nil {
		return fmt.Errorf("view: close: %w", err)
	}
	return nil
}

// SetRules replaces the perturbations (the zero Rules: pass through). Counts
// of withheld events and writes start again, and so do Effects.
func (p *Proxy) SetRules(r Rules) {
	p.rec.counts(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = r
	p.withheld = make([]int, len(r.Withhold))
	p.crash = nil
	if r.CrashAfter != nil {
		p.crash = &writeCounter{m: *r.CrashAfter}
	}
}

// Effects counts what the proxy did to the operator's requests and events
// since the rules were last set, by Record.Action ("lagged", "delayed",
// "withheld", "cut", "restarted", "expired", ...; passing is not counted).
func (p *Proxy) Effects() map[string]int { return p.rec.counts(false) }

// Rules returns the perturbations in force.
func (p *Proxy) Rules() Rules {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rules
}

// SetRecord sends the following records to w as JSON lines (nil: none) and
// returns the first error writing to the previous writer.
func (p *Proxy) SetRecord(w io.Writer) error {
	if err := p.rec.setWriter(w); err != nil {
		return fmt.Errorf("view: write the record: %w", err)
	}
	return nil
}

func (p *Proxy) connState(c net.Conn, s http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch s {
	case http.StateNew:
		if p.cutting {
			_ = c.Close()
			return
		}
		p.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(p.conns, c)
	}
}

// reqState is what the handler learns of one request while it is proxied.
type reqState struct {
	info   *request.RequestInfo
	start  time.Time
	cut    bool
	status int
	action string
	detail string
	stream uint64
}

type stateKey struct{}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := &reqState{start: time.Now(), action: "passed"}
	st.info, _ = p.infos.NewRequestInfo(r)
	p.mu.Lock()
	cutting := p.cutting
	rules := p.rules
	if p.crash != nil && p.crash.next(st.info) {
		st.cut = true
	}
	p.mu.Unlock()
	if cutting {
		// A request on a connection that raced the cut: the operator is going.
		panic(http.ErrAbortHandler)
	}
	defer func() {
		if st.info != nil && st.info.Verb == "watch" && st.status == http.StatusOK {
			return // recorded when its answer started; its end by the stream
		}
		p.record(r, st, "request")
	}()
	preferJSON(r.Header)
	if lag := rules.lagFor(st.info); lag > 0 && st.info != nil && st.info.IsResourceRequest && st.info.Subresource == "" {
		switch st.info.Verb {
		case "list":
			if rv, ok := p.lagVersion(r, lag); ok {
				q := r.URL.Query()
				q.Set("resourceVersion", rv)
				q.Set("resourceVersionMatch", "Exact")
				r.URL.RawQuery = q.Encode()
				st.action, st.detail = "lagged", "list at resourceVersion "+rv
			}
		case "watch":
			if r.URL.Query().Get("sendInitialEvents") == "true" {
				// A streaming list starts from the current state, which a lag
				// cannot hold back: refused, client-go's reflector lists instead
				// (at the lagged version) and watches from there.
				st.action, st.detail = "lagged", "streaming list refused: the client lists at the lagged version instead"
				st.status = http.StatusBadRequest
				writeStatus(w, http.StatusBadRequest, "BadRequest", "the view proxy serves a lagging view: list, then watch (sendInitialEvents is refused while the lag holds)", nil)
				return
			}
		case "get":
			if rv, ok := p.lagVersion(r, lag); ok {
				st.action, st.detail = "lagged", "get at resourceVersion "+rv
				p.laggedGet(w, r, st, rv)
				return
			}
		}
	}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), stateKey{}, st)))
}

// lagVersion is the resource version to read at for a read lagging by lag:
// none for a request that names its own consistent point (a continue token or
// a version match), or when the proxy saw no version that long ago.
func (p *Proxy) lagVersion(r *http.Request, lag time.Duration) (string, bool) {
	q := r.URL.Query()
	if q.Get("continue") != "" || q.Get("resourceVersionMatch") != "" {
		return "", false
	}
	return p.clock.at(time.Now().Add(-lag))
}

// preferJSON drops protobuf and CBOR from an Accept header that also accepts
// JSON, so that answers and watch events can be read and recorded.
func preferJSON(h http.Header) {
	accept := h.Get("Accept")
	if accept == "" {
		return
	}
	var keep []string
	for _, part := range strings.Split(accept, ",") {
		mt := strings.TrimSpace(part)
		if strings.HasPrefix(mt, "application/vnd.kubernetes.protobuf") || strings.HasPrefix(mt, "application/cbor") {
			continue
		}
		keep = append(keep, mt)
	}
	if len(keep) > 0 && len(keep) < len(strings.Split(accept, ",")) {
		h.Set("Accept", strings.Join(keep, ", "))
	}
}

func (p *Proxy) record(r *http.Request, st *reqState, what string) {
	rec := Record{What: what, Path: r.URL.RequestURI(), Status: st.status, Action: st.action, Detail: st.detail, Stream: st.stream,
		Millis: float64(time.Since(st.start).Microseconds()) / 1000}
	if len(rec.Path) > 400 {
		rec.Path = rec.Path[:400] + "…"
	}
	if ri := st.info; ri != nil {
		rec.Verb, rec.Group, rec.Resource, rec.Subresource, rec.Namespace, rec.Name = ri.Verb, ri.APIGroup, ri.Resource, ri.Subresource, ri.Namespace, ri.Name
		if !ri.IsResourceRequest {
			rec.Verb = strings.ToLower(r.Method)
		}
	}
	p.rec.add(rec)
}

func (p *Proxy) modifyResponse(resp *http.Response) error {
	st, _ := resp.Request.Context().Value(stateKey{}).(*reqState)
	if st == nil {
		return nil
	}
	st.status = resp.StatusCode
	if st.cut {
		return errCut
	}
	if st.info == nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if st.info != nil && st.info.Verb == "watch" && resp.StatusCode == http.StatusOK {
			st.detail = "watch answered in " + resp.Header.Get("Content-Type") + ": events passed unread"
			p.record(resp.Request, st, "request")
		}
		return nil
	}
	switch {
	case st.info.Verb == "watch":
		st.stream = p.streams.Add(1)
		p.record(resp.Request, st, "request")
		resp.Body = p.filterWatch(resp.Request, st, resp.Body)
	case st.info.Verb == "list" || isWrite(st.info):
		// The collection's (or the written object's) resource version is the
		// cluster's revision now: the lag bookkeeping's best reading.
		if err := p.observeBody(resp); err != nil {
			st.detail = "answer not read: " + err.Error()
		}
	}
	return nil
}

func (p *Proxy) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	st, _ := r.Context().Value(stateKey{}).(*reqState)
	if errors.Is(err, errCut) && st != nil {
		st.action, st.detail = "cut", "crash after "+p.Rules().CrashAfter.String()
		p.cut()
		panic(http.ErrAbortHandler)
	}
	if st != nil {
		st.status = http.StatusBadGateway
		st.detail = err.Error()
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	p.log.Debug("view: upstream error", "path", r.URL.Path, "err", err)
	http.Error(w, "view proxy: "+err.Error(), http.StatusBadGateway)
}

// cut closes every connection, refuses new ones and restarts the operator;
// connections are accepted again once the restart returned.
func (p *Proxy) cut() {
	p.mu.Lock()
	p.cutting = true
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	p.rec.add(Record{What: "cut", Action: "cut", Detail: fmt.Sprintf("closed %d connections", len(conns))})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		rec := Record{What: "restart", Action: "restarted"}
		if p.cfg.Restart != nil {
			if err := p.cfg.Restart(p.bg); err != nil {
				rec.Action, rec.Detail = "restart-failed", err.Error()
				p.log.Error("view: restart the operator after the cut", "err", err)
			}
		} else {
			rec.Action, rec.Detail = "not-restarted", "no restart configured"
		}
		p.mu.Lock()
		p.cutting = false
		p.mu.Unlock()
		p.rec.add(rec)
	}()
}

// upstreamURL is u's path and query on the API server.
func (p *Proxy) upstreamURL(u *url.URL) string {
	t := p.target.JoinPath(u.Path)
	t.RawQuery = u.RawQuery
	return t.String()
}

// writeStatus answers with a Kubernetes Status object.
func writeStatus(w http.ResponseWriter, code int, reason, message string, details map[string]any) {
	st := map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure",
		"message": message, "reason": reason, "code": code}
	if details != nil {
		st["details"] = details
	}
	b, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
