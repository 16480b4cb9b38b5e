// Package valkeyconn is the per-address core of the Valkey monitor and workload:
// connection settings (password, TLS), a cache of clients keyed by address and
// credentials, and one reading of a server's replication state and configuration.
// It knows nothing about Kubernetes: callers resolve addresses and secrets.
package valkeyconn

import (
	"github.com/gauntlet-dev/gauntlet/model"

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

// Security is how a connection authenticates and encrypts.
type Security struct {
	// Password authenticates as the default user (HELLO AUTH); empty for none.
	Password string
	// TLS, when set, makes the connection use TLS.
	TLS *TLS
}

// TLS is the material of a TLS connection, as PEM.
type TLS struct {
	// CA verifies the server's certificate chain (ca.crt of the cluster's Secret).
	CA []byte
	// Cert and Key are an optional client certificate, presented when the server
	// asks for one (tls-auth-clients yes or optional).
	Cert, Key []byte
	// ServerNames are DNS names the server's certificate may carry instead of the
	// IP address dialled (pods are reached by IP; certificates usually name the
	// headless Service's per-pod DNS names or the client Service).
	ServerNames []string
}

// fingerprint identifies the credentials without keeping them readable in map keys.
func (s Security) fingerprint() string {
	h := sha256.New()
	write := func(b []byte) {
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	write([]byte(s.Password))
	if s.TLS != nil {
		write([]byte("tls"))
		write(s.TLS.CA)
		write(s.TLS.Cert)
		write(s.TLS.Key)
		for _, n := range s.TLS.ServerNames {
			write([]byte(n))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Options tune the clients of a Pool. Zero values take the documented defaults.
type Options struct {
	// DialTimeout bounds connecting and the handshake (TLS, HELLO/AUTH); default 1s.
	DialTimeout time.Duration
	// IOTimeout bounds waiting for a reply on an established connection before it is
	// dropped (a frozen server); default 1s. Blocking commands (WAIT) are bounded by
	// their context deadline instead.
	IOTimeout time.Duration
	// ClientName is sent with HELLO SETNAME (visible in CLIENT LIST); default "gauntlet".
	ClientName string
}

func (o Options) withDefaults() Options {
	if o.DialTimeout <= 0 {
		o.DialTimeout = time.Second
	}
	if o.IOTimeout <= 0 {
		o.IOTimeout = time.Second
	}
	if o.ClientName == "" {
		o.ClientName = "gauntlet"
	}
	return o
}

// Pool caches one client per address, replaced when the credentials for that
// address change. It is safe for concurrent use.
type Pool struct {
	opts Options

	mu      sync.Mutex
	clients map[string]*entry // by address
	closed  bool
}

type entry struct {
	fp     string
	client vk.Client
}

// NewPool returns an empty pool.
func NewPool(opts Options) *Pool {
	return &Pool{opts: opts.withDefaults(), clients: map[string]*entry{}}
}

// ErrPoolClosed is returned by Get after Close.
var ErrPoolClosed = errors.New("valkey connection pool is closed")

// Get returns the cached client for addr ("host:port") with these credentials,
// connecting a new one (within DialTimeout) when there is none or the credentials
// changed (the old client is closed). A failed connection is not cached.
func (p *Pool) Get(addr string, sec Security) (vk.Client, error) {
	fp := sec.fingerprint()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPoolClosed
	}
	if e, ok := p.clients[addr]; ok && e.fp == fp {
		p.mu.Unlock()
		return e.client, nil
	}
	p.mu.Unlock()

	// Connect without holding the lock: a frozen server must not stall other addresses.
	c, err := Dial(addr, sec, p.opts)
	if err != nil {
		return nil, err
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return nil, ErrPoolClosed
	}
	if e, ok := p.clients[addr]; ok {
		if e.fp == fp { // another caller connected meanwhile: keep theirs
			c.Close()
			return e.client, nil
		}
		e.client.Close()
	}
	p.clients[addr] = &entry{fp: fp, client: c}
	return c, nil
}

// GetContext is Get bounded by ctx: when ctx ends first it returns ctx's error at
// once, and a connection that completes later is cached for the next caller.
func (p *Pool) GetContext(ctx context.Context, addr string, sec Security) (vk.Client, error) {
	fp := sec.fingerprint()
	p.mu.Lock()
	if e, ok := p.clients[addr]; ok && e.fp == fp && !p.closed {
		p.mu.Unlock()
		return e.client, nil
	}
	p.mu.Unlock()
	type result struct {
		c   vk.Client
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := p.Get(addr, sec)
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("connect to %s: %w", addr, ctx.Err())
	}
}

// Forget closes and drops the client of addr (after an error that leaves its
// connection in doubt, or when the address is gone).
func (p *Pool) Forget(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.clients[addr]; ok {
		e.client.Close()
		delete(p.clients, addr)
	}
}

// Retain closes the clients of every address not in keep.
func (p *Pool) Retain(keep map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, e := range p.clients {
		if !keep[addr] {
			e.client.Close()
			delete(p.clients, addr)
		}
	}
}

// Len is the number of cached clients.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.clients)
}

// Close closes every client; later Gets fail with ErrPoolClosed.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, e := range p.clients {
		e.client.Close()
		delete(p.clients, addr)
	}
	p.closed = true
}

// Dial connects one client to addr: a single-node client (never cluster or
// sentinel discovery), without client-side caching or retries (every request is
// sent once, so a history records what happened), on one pipelined connection.
func Dial(addr string, sec Security, opts Options) (vk.Client, error) {
	opts = opts.withDefaults()
	o := vk.ClientOption{
		InitAddress:       []string{addr},
		ForceSingleClient: true,
		DisableCache:      true,
		DisableRetry:      true,
		Password:          sec.Password,
		ClientName:        opts.ClientName,
		ClientSetInfo:     vk.DisableClientSetInfo,
		PipelineMultiplex: -1, // 2^0: one pipelined connection
		BlockingPoolSize:  4,
		RingScaleEachConn: 8,
		// Small buffers: replies are small and a campaign may hold many clients.
		ReadBufferEachConn:  64 << 10,
		WriteBufferEachConn: 64 << 10,
		ConnWriteTimeout:    opts.IOTimeout,
		Dialer:              net.Dialer{Timeout: opts.DialTimeout, KeepAlive: opts.IOTimeout},
	}
	if sec.TLS != nil {
		cfg, err := TLSConfig(addr, sec.TLS)
		if err != nil {
			return nil, err
		}
		o.TLSConfig = cfg
	}
	c, err := vk.NewClient(o)
	if err != nil {
		if c != nil {
			c.Close()
		}
		return nil, Describe(fmt.Errorf("connect to %s: %w", addr, err))
	}
	return c, nil
}

// TLSConfig verifies the server's chain against t.CA and its name against the IP
// address of addr or any of t.ServerNames, and presents t's client certificate
// when the server asks for one.
func TLSConfig(addr string, t *TLS) (*tls.Config, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(t.CA) {
		return nil, errors.New("TLS: ca.crt of the TLS Secret holds no PEM certificate: put the issuing CA's certificate under ca.crt")
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("TLS: address %q is not host:port: %w", addr, err)
	}
	names := append([]string{host}, t.ServerNames...)
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The standard verification checks one name; the chain and any of several
		// names are checked in VerifyConnection instead.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("TLS: the server presented no certificate")
			}
			leaf := cs.PeerCertificates[0]
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				return fmt.Errorf("TLS: the server's certificate does not chain to ca.crt: %w", err)
			}
			for _, n := range names {
				if leaf.VerifyHostname(n) == nil {
					return nil
				}
			}
			return fmt.Errorf("TLS: the server's certificate names none of %s: add the pod IP or its DNS name to the certificate's SANs", strings.Join(names, ", "))
		},
	}
	if len(t.ServerNames) > 0 && net.ParseIP(host) != nil {
		cfg.ServerName = t.ServerNames[0] // SNI only; verification is above
	}
	if len(t.Cert) > 0 || len(t.Key) > 0 {
		pair, err := tls.X509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("TLS: client certificate (tls.crt and tls.key of the TLS Secret): %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// ErrAuth marks an authentication failure (wrong or missing password).
var ErrAuth = errors.New("authentication failed: the password from spec.auth.passwordSecret does not match the server's")

// IsAuthError reports whether err is the server refusing the credentials.
func IsAuthError(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrAuth) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "WRONGPASS") || strings.Contains(s, "NOAUTH") ||
		strings.Contains(s, "invalid password") || strings.Contains(s, "without any password configured")
}

// Unreachable classifies an error that kept a member from being read
// (model.Member.Unreachable).
func Unreachable(err error) string {
	if IsAuthError(err) {
		return model.UnreachableAuth
	}
	return model.UnreachableError
}

// Describe wraps authentication failures with ErrAuth so the cause is named; other
// errors are returned unchanged.
func Describe(err error) error {
	if err == nil || errors.Is(err, ErrAuth) || !IsAuthError(err) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrAuth, err)
}
