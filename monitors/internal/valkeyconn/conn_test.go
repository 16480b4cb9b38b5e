package valkeyconn

import (
	vk "github.com/valkey-io/valkey-go"

	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/internal/testing/valkeytest"
	"github.com/gauntlet-dev/gauntlet/model"
)

func needServer(t *testing.T) {
	t.Helper()
	if _, err := valkeytest.Binary(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
}

func start(t *testing.T, opts valkeytest.Options) *valkeytest.Server {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	s, err := valkeytest.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// waitLinked waits until the replica at addr reports its link to the primary up.
func waitLinked(t *testing.T, p *Pool, addr string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := p.Get(addr, Security{})
		if err == nil && probe(c, nil, time.Second).LinkUp {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s did not link to its primary within 15s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestProbeReplication(t *testing.T) {
	needServer(t)
	primary := start(t, valkeytest.Options{Args: []string{"--maxmemory-policy", "allkeys-lru", "--hz", "17", "--repl-diskless-sync-delay", "0"}})
	replica := start(t, valkeytest.Options{Args: []string{"--replicaof", primary.Host, strconv.Itoa(primary.Port)}})
	pool := NewPool(Options{})
	t.Cleanup(pool.Close)
	waitLinked(t, pool, replica.Addr)

	// Write something so offsets move past the initial sync.
	c, err := pool.Get(primary.Addr, Security{})
	if err != nil {
		t.Fatalf("connect primary: %v", err)
	}
	if err := c.Do(context.Background(), c.B().Set().Key("k").Value("v").Build()).Error(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	// Wait until the replica has applied it (replication is asynchronous).
	for deadline := time.Now().Add(10 * time.Second); ; {
		var pm, rm model.Member
		rc, err := pool.Get(replica.Addr, Security{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		Probe(ctx, c, nil, &pm)
		Probe(ctx, rc, nil, &rm)
		cancel()
		if pm.Offset > 0 && rm.Offset == pm.Offset {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica offset %d never caught up with the primary's %d", rm.Offset, pm.Offset)
		}
		time.Sleep(20 * time.Millisecond)
	}

	keys := []string{"hz", "maxmemory-policy", "no-such-directive"}
	tests := []struct {
		name   string
		addr   string
		check  func(t *testing.T, m model.Member)
		config map[string]string
	}{
		{
			name: "primary",
			addr: primary.Addr,
			check: func(t *testing.T, m model.Member) {
				if m.Role != model.RolePrimary || m.Replicas != 1 || m.Follows != "" || m.LinkUp {
					t.Errorf("primary: got role %q replicas %d follows %q linkUp %v, want primary, 1, none, false", m.Role, m.Replicas, m.Follows, m.LinkUp)
				}
			},
			config: map[string]string{"hz": "17", "maxmemory-policy": "allkeys-lru"},
		},
		{
			name: "replica",
			addr: replica.Addr,
			check: func(t *testing.T, m model.Member) {
				if m.Role != model.RoleReplica || m.Follows != primary.Addr || !m.LinkUp || m.Replicas != 0 {
					t.Errorf("replica: got role %q follows %q linkUp %v replicas %d, want replica, %s, true, 0", m.Role, m.Follows, m.LinkUp, m.Replicas, primary.Addr)
				}
			},
			config: map[string]string{"hz": "10", "maxmemory-policy": "noeviction"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := pool.Get(tc.addr, Security{})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			m := model.Member{Address: tc.addr}
			Probe(ctx, c, keys, &m)
			if !m.Reachable || m.Error != "" {
				t.Fatalf("reachable %v error %q, want reachable without error", m.Reachable, m.Error)
			}
			tc.check(t, m)
			if m.Offset <= 0 {
				t.Errorf("offset %d, want > 0", m.Offset)
			}
			if len(m.Config) != len(tc.config) {
				t.Errorf("config %v, want exactly %v (unknown keys left out)", m.Config, tc.config)
			}
			for k, v := range tc.config {
				if m.Config[k] != v {
					t.Errorf("config[%s] = %q, want %q", k, m.Config[k], v)
				}
			}
		})
	}
}

func TestAuth(t *testing.T) {
	needServer(t)
	s := start(t, valkeytest.Options{Args: []string{"--requirepass", "s3cret"}})
	tests := []struct {
		name     string
		password string
		wantAuth bool
	}{
		{"right password", "s3cret", false},
		{"wrong password", "nope", true},
		{"no password", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pool := NewPool(Options{})
			defer pool.Close()
			c, err := pool.Get(s.Addr, Security{Password: tc.password})
			if tc.wantAuth {
				if err == nil {
					t.Fatalf("connected with password %q, want an authentication error", tc.password)
				}
				if !errors.Is(err, ErrAuth) || !IsAuthError(err) {
					t.Fatalf("error %v, want one wrapping ErrAuth", err)
				}
				if pool.Len() != 0 {
					t.Errorf("a failed connection was cached")
				}
				return
			}
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			probePrimary(t, c, nil)
		})
	}
}

func TestUnreachable(t *testing.T) {
	needServer(t)
	t.Run("stopped server is refused", func(t *testing.T) {
		s := start(t, valkeytest.Options{})
		s.Stop()
		pool := NewPool(Options{})
		defer pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := pool.GetContext(ctx, s.Addr, Security{})
		if err == nil {
			t.Fatal("connected to a stopped server")
		}
		if ctx.Err() != nil {
			t.Fatalf("connecting to a stopped server took the whole 2s deadline: %v", err)
		}
	})
	t.Run("paused server times out, cached client too", func(t *testing.T) {
		s := start(t, valkeytest.Options{})
		pool := NewPool(Options{DialTimeout: 500 * time.Millisecond, IOTimeout: 500 * time.Millisecond})
		defer pool.Close()
		c, err := pool.Get(s.Addr, Security{})
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if err := s.Pause(); err != nil {
			t.Fatalf("SIGSTOP: %v", err)
		}
		t.Cleanup(func() { _ = s.Resume() })

		// The cached connection: the probe gives up at its deadline.
		if m := probe(c, []string{"hz"}, 700*time.Millisecond); m.Reachable || m.Error == "" {
			t.Fatalf("member %+v, want unreachable with an error", m)
		}
		// A new connection: the handshake is bounded.
		pool.Forget(s.Addr)
		outer, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		inner, cancel2 := context.WithTimeout(outer, 700*time.Millisecond)
		defer cancel2()
		if _, err := pool.GetContext(inner, s.Addr, Security{}); err == nil {
			t.Fatal("connected to a paused server")
		}
		if outer.Err() != nil {
			t.Fatal("GetContext ignored its deadline")
		}
		// Once resumed, the same pool connects again.
		if err := s.Resume(); err != nil {
			t.Fatalf("SIGCONT: %v", err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			c, err := pool.Get(s.Addr, Security{})
			if err == nil {
				if probe(c, nil, time.Second).Reachable {
					break
				}
				pool.Forget(s.Addr)
			}
			if time.Now().After(deadline) {
				t.Fatalf("server not reachable again 5s after SIGCONT: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

func TestPoolCredentialsAndRetain(t *testing.T) {
	needServer(t)
	a := start(t, valkeytest.Options{})
	b := start(t, valkeytest.Options{})
	pool := NewPool(Options{})
	defer pool.Close()
	c1, err := pool.Get(a.Addr, Security{})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := pool.Get(a.Addr, Security{})
	if err != nil {
		t.Fatal(err)
	}
	if c1 != c2 {
		t.Error("same address and credentials gave a new client")
	}
	// The server has no password: any password is accepted by the default user
	// (nopass), which lets the test change credentials against one server.
	c3, err := pool.Get(a.Addr, Security{Password: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if c3 == c1 || pool.Len() != 1 {
		t.Errorf("changed credentials: got same client %v, %d cached, want a new client replacing the old", c3 == c1, pool.Len())
	}
	if _, err := pool.Get(b.Addr, Security{}); err != nil {
		t.Fatal(err)
	}
	pool.Retain(map[string]bool{b.Addr: true})
	if pool.Len() != 1 {
		t.Errorf("after Retain: %d clients, want 1", pool.Len())
	}
	pool.Close()
	if _, err := pool.Get(b.Addr, Security{}); !errors.Is(err, ErrPoolClosed) {
		t.Errorf("Get after Close: %v, want ErrPoolClosed", err)
	}
}

func TestTLS(t *testing.T) {
	needServer(t)
	dir := t.TempDir()
	ca, err := valkeytest.NewPKI()
	if err != nil {
		t.Fatal(err)
	}
	other, err := valkeytest.NewPKI()
	if err != nil {
		t.Fatal(err)
	}

	// tlsServer serves TLS on a port of its own; the server keeps a plain port
	// too, for testserver's readiness probe.
	tlsServer := func(t *testing.T, ips, dns []string) (string, *valkeytest.Cert) {
		cert, err := ca.Issue(dir, ips, dns)
		if err != nil {
			t.Fatal(err)
		}
		port, err := valkeytest.FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		start(t, valkeytest.Options{Dir: dir, Args: cert.TLSArgs(port)})
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cert
	}
	byIP, cert := tlsServer(t, []string{"127.0.0.1"}, nil)
	byName, _ := tlsServer(t, nil, []string{"pod-0.vk-headless.ns.svc"})

	tests := []struct {
		name    string
		addr    string
		tls     *TLS
		wantErr string
	}{
		{"IP SAN", byIP, &TLS{CA: ca.CAPEM}, ""},
		{"IP SAN with client certificate", byIP, &TLS{CA: ca.CAPEM, Cert: cert.CertPEM, Key: cert.KeyPEM}, ""},
		{"DNS SAN accepted by server name", byName, &TLS{CA: ca.CAPEM, ServerNames: []string{"pod-0.vk-headless.ns.svc"}}, ""},
		{"DNS SAN without server name", byName, &TLS{CA: ca.CAPEM}, "names none of"},
		{"other CA", byIP, &TLS{CA: other.CAPEM}, "does not chain to ca.crt"},
		{"CA without PEM", byIP, &TLS{CA: []byte("junk")}, "holds no PEM certificate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pool := NewPool(Options{})
			defer pool.Close()
			c, err := pool.Get(tc.addr, Security{TLS: tc.tls})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			if m := probePrimary(t, c, []string{"tls-auth-clients"}); m.Config["tls-auth-clients"] != "optional" {
				t.Fatalf("member %+v, want tls-auth-clients optional", m)
			}
		})
	}
}

func TestParseInfo(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"resp2", "# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\nmaster_port:6379\r\n", map[string]string{"role": "slave", "master_host": "10.0.0.1", "master_port": "6379"}},
		{"resp3 verbatim prefix", "txt:# Replication\r\nrole:master\r\nconnected_slaves:2\r\n", map[string]string{"role": "master", "connected_slaves": "2"}},
		{"value with colons", "slave0:ip=10.0.0.2,port=6379,state=online\r\n", map[string]string{"slave0": "ip=10.0.0.2,port=6379,state=online"}},
		{"junk lines", "no colon here\n\n#comment:x\nk:v", map[string]string{"k": "v"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseInfo(tc.in)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		err  error
		auth bool
	}{
		{nil, false},
		{errors.New("WRONGPASS invalid username-password pair or user is disabled."), true},
		{errors.New("NOAUTH HELLO must be called with the client already authenticated"), true},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false},
	}
	for _, tc := range tests {
		got := Describe(tc.err)
		if errors.Is(got, ErrAuth) != tc.auth {
			t.Errorf("Describe(%v) = %v, auth %v, want auth %v", tc.err, got, errors.Is(got, ErrAuth), tc.auth)
		}
		if tc.err != nil && !errors.Is(got, tc.err) {
			t.Errorf("Describe(%v) lost the cause", tc.err)
		}
	}
}

// probePrimary probes c, reading the config keys, and fails the test unless it
// answers as a reachable primary.
func probePrimary(t *testing.T, c vk.Client, keys []string) model.Member {
	t.Helper()
	m := probe(c, keys, 2*time.Second)
	if !m.Reachable || m.Role != model.RolePrimary {
		t.Fatalf("member %+v, want a reachable primary", m)
	}
	return m
}

// probe probes c within timeout, reading the config keys.
func probe(c vk.Client, keys []string, timeout time.Duration) model.Member {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var m model.Member
	Probe(ctx, c, keys, &m)
	return m
}
