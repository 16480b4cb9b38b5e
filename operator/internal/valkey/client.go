package valkey

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	vk "github.com/valkey-io/valkey-go"
)

// Endpoint is how to reach and authenticate to one server.
type Endpoint struct {
	// Addr is "ip:port".
	Addr string
	// Password authenticates the connection (AUTH / HELLO); empty for none.
	Password string
	// AltPassword is tried when Password is refused (during a password rotation
	// the servers may still have the previous one).
	AltPassword string
	// TLS, when set, makes the connection use TLS.
	TLS *TLS
}

// TLS is the material of a TLS connection, as PEM.
type TLS struct {
	// CA verifies the server's certificate chain (ca.crt of the cluster's Secret).
	CA []byte
	// Cert and Key are an optional client certificate (tls.crt and tls.key), sent
	// when the server requires client authentication.
	Cert, Key []byte
	// ServerName is an acceptable DNS name of the server's certificate besides the
	// IP address of Addr (e.g. "<pod>.<headless service>.<namespace>.svc").
	ServerName string
}

// ReplyKind is the type of a reply.
type ReplyKind int

// Reply kinds. Maps (RESP3) are flattened into arrays of key, value, ...
const (
	KindNil ReplyKind = iota
	KindString
	KindInt
	KindArray
)

// Reply is a server reply that is not an error.
type Reply struct {
	Kind  ReplyKind
	Str   string
	Int   int64
	Elems []Reply
}

// String returns the reply as text: strings as is, integers in decimal.
func (r Reply) String() string {
	switch r.Kind {
	case KindString:
		return r.Str
	case KindInt:
		return fmt.Sprint(r.Int)
	case KindArray:
		parts := make([]string, len(r.Elems))
		for i, e := range r.Elems {
			parts[i] = e.String()
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return "(nil)"
}

// StringMap reads a flat array of key, value, ... (CONFIG GET) as a map.
func (r Reply) StringMap() (map[string]string, error) {
	if r.Kind != KindArray || len(r.Elems)%2 != 0 {
		return nil, fmt.Errorf("expected an array of key/value pairs, got %s", r.String())
	}
	out := make(map[string]string, len(r.Elems)/2)
	for i := 0; i < len(r.Elems); i += 2 {
		out[r.Elems[i].String()] = r.Elems[i+1].String()
	}
	return out, nil
}

// ServerError is an error reply of the server ("ERR ...", "READONLY ...").
type ServerError struct{ Msg string }

func (e *ServerError) Error() string { return "server replied: " + e.Msg }

// IsServerError reports whether err is an error reply (the command reached the
// server) as opposed to a connection failure or timeout.
func IsServerError(err error) (*ServerError, bool) {
	var se *ServerError
	ok := errors.As(err, &se)
	return se, ok
}

// Client sends one command to one server.
type Client interface {
	// Do sends args as one command to ep and returns its reply; an error reply is
	// a *ServerError, anything else an error of the connection.
	Do(ctx context.Context, ep Endpoint, args ...string) (Reply, error)
}

// Pool is a Client over valkey-go that keeps one small connection per server and
// credentials, and closes the ones unused for IdleTimeout.
type Pool struct {
	// DialTimeout bounds connecting (default 2s).
	DialTimeout time.Duration
	// IdleTimeout closes connections unused that long (default 5m).
	IdleTimeout time.Duration

	mu      sync.Mutex
	clients map[string]*pooled
	closed  bool
}

type pooled struct {
	c        vk.Client
	addr     string
	lastUsed time.Time
}

// NewPool returns an empty pool.
func NewPool() *Pool {
	return &Pool{clients: map[string]*pooled{}}
}

// ErrPoolClosed is returned by Do after Close.
var ErrPoolClosed = errors.New("valkey: the connection pool is closed (the operator is shutting down)")

// Do implements Client.
func (p *Pool) Do(ctx context.Context, ep Endpoint, args ...string) (Reply, error) {
	if len(args) == 0 {
		return Reply{}, errors.New("valkey: empty command")
	}
	c, err := p.client(ctx, ep)
	if err != nil {
		return Reply{}, err
	}
	res := c.Do(ctx, c.B().Arbitrary(args[0]).Args(args[1:]...).Build())
	if err := res.Error(); err != nil {
		if ve, ok := vk.IsValkeyErr(err); ok {
			if ve.IsNil() {
				return Reply{Kind: KindNil}, nil
			}
			return Reply{}, &ServerError{Msg: ve.Error()}
		}
		return Reply{}, fmt.Errorf("%s to %s: %w", strings.ToUpper(args[0]), ep.Addr, err)
	}
	msg, err := res.ToMessage()
	if err != nil {
		return Reply{}, fmt.Errorf("%s to %s: %w", strings.ToUpper(args[0]), ep.Addr, err)
	}
	return convert(&msg)
}

func convert(m *vk.ValkeyMessage) (Reply, error) {
	switch {
	case m.IsNil():
		return Reply{Kind: KindNil}, nil
	case m.IsInt64():
		n, err := m.AsInt64()
		return Reply{Kind: KindInt, Int: n}, err
	case m.IsString():
		s, err := m.ToString()
		return Reply{Kind: KindString, Str: s}, err
	case m.IsMap():
		kv, err := m.ToMap()
		if err != nil {
			return Reply{}, err
		}
		out := Reply{Kind: KindArray}
		for k, v := range kv {
			r, err := convert(&v)
			if err != nil {
				return Reply{}, err
			}
			out.Elems = append(out.Elems, Reply{Kind: KindString, Str: k}, r)
		}
		return out, nil
	case m.IsArray():
		arr, err := m.ToArray()
		if err != nil {
			return Reply{}, err
		}
		out := Reply{Kind: KindArray, Elems: make([]Reply, 0, len(arr))}
		for i := range arr {
			r, err := convert(&arr[i])
			if err != nil {
				return Reply{}, err
			}
			out.Elems = append(out.Elems, r)
		}
		return out, nil
	case m.IsBool():
		b, err := m.ToBool()
		if b {
			return Reply{Kind: KindInt, Int: 1}, err
		}
		return Reply{Kind: KindInt, Int: 0}, err
	case m.IsFloat64():
		f, err := m.ToFloat64()
		return Reply{Kind: KindString, Str: fmt.Sprint(f)}, err
	}
	s, err := m.ToString()
	return Reply{Kind: KindString, Str: s}, err
}

func endpointKey(ep Endpoint) string {
	h := sha256.New()
	h.Write([]byte(ep.Addr))
	h.Write([]byte{0})
	h.Write([]byte(ep.Password))
	h.Write([]byte{0})
	h.Write([]byte(ep.AltPassword))
	if ep.TLS != nil {
		for _, b := range [][]byte{ep.TLS.CA, ep.TLS.Cert, ep.TLS.Key, []byte(ep.TLS.ServerName)} {
			h.Write([]byte{0})
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (p *Pool) client(ctx context.Context, ep Endpoint) (vk.Client, error) {
	key := endpointKey(ep)
	now := time.Now()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPoolClosed
	}
	if p.clients == nil {
		p.clients = map[string]*pooled{}
	}
	if e, ok := p.clients[key]; ok {
		e.lastUsed = now
		p.mu.Unlock()
		return e.c, nil
	}
	p.evictLocked(now)
	p.mu.Unlock()

	opt, err := p.options(ctx, ep)
	if err != nil {
		return nil, err
	}
	c, err := vk.NewClient(opt)
	if err != nil && ep.AltPassword != "" && isAuthError(err) {
		opt.Password = ep.AltPassword
		c, err = vk.NewClient(opt)
	}
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", ep.Addr, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return nil, ErrPoolClosed
	}
	if e, ok := p.clients[key]; ok { // lost a race: keep the first
		c.Close()
		e.lastUsed = now
		return e.c, nil
	}
	p.clients[key] = &pooled{c: c, addr: ep.Addr, lastUsed: now}
	return c, nil
}

func (p *Pool) evictLocked(now time.Time) {
	idle := p.IdleTimeout
	if idle <= 0 {
		idle = 5 * time.Minute
	}
	for k, e := range p.clients {
		if now.Sub(e.lastUsed) > idle {
			e.c.Close()
			delete(p.clients, k)
		}
	}
}

func isAuthError(err error) bool {
	m := err.Error()
	return strings.Contains(m, "WRONGPASS") || strings.Contains(m, "NOAUTH") || strings.Contains(m, "invalid password")
}

// Forget closes the connections to addr (a pod that went away).
func (p *Pool) Forget(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, e := range p.clients {
		if e.addr == addr {
			e.c.Close()
			delete(p.clients, k)
		}
	}
}

// Close closes every connection; later calls to Do fail with ErrPoolClosed.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for k, e := range p.clients {
		e.c.Close()
		delete(p.clients, k)
	}
}

func (p *Pool) options(ctx context.Context, ep Endpoint) (vk.ClientOption, error) {
	dial := p.DialTimeout
	if dial <= 0 {
		dial = 2 * time.Second
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left > 0 && left < dial {
			dial = left
		}
	}
	opt := vk.ClientOption{
		InitAddress:       []string{ep.Addr},
		Password:          ep.Password,
		ForceSingleClient: true,
		DisableCache:      true,
		DisableRetry:      true,
		PipelineMultiplex: -1,
		// Small buffers: the operator's replies (INFO, CONFIG GET) are a few KiB.
		ReadBufferEachConn:  32 << 10,
		WriteBufferEachConn: 32 << 10,
		RingScaleEachConn:   8,
		BlockingPoolSize:    2,
		ConnWriteTimeout:    10 * time.Second,
		ClientName:          "valkey-operator",
		Dialer:              net.Dialer{Timeout: dial, KeepAlive: time.Second},
	}
	if ep.TLS != nil {
		cfg, err := tlsConfig(ep)
		if err != nil {
			return vk.ClientOption{}, err
		}
		opt.TLSConfig = cfg
	}
	return opt, nil
}

// tlsConfig verifies the server's chain against the CA, and its name against the
// IP address of the endpoint or TLS.ServerName: pods are reached by IP, and
// certificates usually name the headless Service's DNS names.
func tlsConfig(ep Endpoint) (*tls.Config, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ep.TLS.CA) {
		return nil, errors.New("TLS: the CA (ca.crt of the TLS Secret) holds no PEM certificate: put the issuing CA's certificate under ca.crt")
	}
	host, _, err := net.SplitHostPort(ep.Addr)
	if err != nil {
		return nil, fmt.Errorf("TLS: address %q: %w", ep.Addr, err)
	}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verification is done below, against the IP or the DNS name.
		InsecureSkipVerify: true, //nolint:gosec // replaced by VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("TLS: the server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			leaf := cs.PeerCertificates[0]
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter}); err != nil {
				return fmt.Errorf("TLS: the server's certificate does not chain to ca.crt: %w", err)
			}
			if leaf.VerifyHostname(host) == nil {
				return nil
			}
			if ep.TLS.ServerName != "" && leaf.VerifyHostname(ep.TLS.ServerName) == nil {
				return nil
			}
			return fmt.Errorf("TLS: the server's certificate names neither %s nor %q: add the pod IPs or the headless Service's DNS names to its SANs", host, ep.TLS.ServerName)
		},
	}
	if len(ep.TLS.Cert) > 0 {
		pair, err := tls.X509KeyPair(ep.TLS.Cert, ep.TLS.Key)
		if err != nil {
			return nil, fmt.Errorf("TLS: client certificate (tls.crt/tls.key of the TLS Secret): %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
