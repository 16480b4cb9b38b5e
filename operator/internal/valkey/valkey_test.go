package valkey_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/internal/testing/valkeytest"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

func start(t *testing.T, extra ...string) *valkeytest.Server {
	t.Helper()
	if _, err := valkeytest.Binary(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	s, err := valkeytest.Start(context.Background(), valkeytest.Options{Dir: t.TempDir(), Args: extra})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func pool(t *testing.T) *valkey.Pool {
	p := valkey.NewPool()
	t.Cleanup(p.Close)
	return p
}

func do(t *testing.T, p *valkey.Pool, s *valkeytest.Server, args ...string) valkey.Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := p.Do(ctx, valkey.Endpoint{Addr: s.Addr}, args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return r
}

func info(t *testing.T, p *valkey.Pool, s *valkeytest.Server) valkey.Info {
	t.Helper()
	in, err := valkey.ParseInfo(do(t, p, s, valkey.CmdInfo()...).String())
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestPromotionAndRepointing: A primary with replicas B and C; B is promoted,
// C and then A are pointed at B; every write acknowledged by WAIT survives.
func TestPromotionAndRepointing(t *testing.T) {
	p := pool(t)
	a, b, c := start(t), start(t), start(t)
	for _, r := range []*valkeytest.Server{b, c} {
		do(t, p, r, valkey.CmdReplicaOf("127.0.0.1", a.Port)...)
	}
	waitFor(t, "replicas linked", func() bool {
		return info(t, p, b).MasterLinkUp && info(t, p, c).MasterLinkUp
	})
	for i := 0; i < 50; i++ {
		do(t, p, a, "SET", fmt.Sprintf("k%d", i), "v")
	}
	if n := do(t, p, a, "WAIT", "2", "2000"); n.Int != 2 {
		t.Fatalf("WAIT acknowledged by %d replicas", n.Int)
	}
	ia := info(t, p, a)
	if ia.Role != valkey.RoleMaster || len(ia.Replicas) != 2 || ia.Keys != 50 {
		t.Fatalf("primary INFO: %+v", ia)
	}
	ib := info(t, p, b)
	if !ib.ReplicatingFrom("127.0.0.1", a.Port) || ib.Offset() == 0 || ib.Keys != 50 || ib.ReplicaPriority != 100 || ib.RunID == "" {
		t.Fatalf("replica INFO: %+v", ib)
	}

	a.Stop()
	do(t, p, b, valkey.CmdPromote()...)
	if in := info(t, p, b); in.Role != valkey.RoleMaster {
		t.Fatalf("promoted B reports %s", in.Role)
	}
	do(t, p, c, valkey.CmdReplicaOf("127.0.0.1", b.Port)...)
	waitFor(t, "C linked to B", func() bool { in := info(t, p, c); return in.MasterLinkUp && in.ReplicatingFrom("127.0.0.1", b.Port) })
	if in := info(t, p, c); in.Keys != 50 {
		t.Fatalf("C has %d keys", in.Keys)
	}
	// A connection to the dead server fails, but is not a server error.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := p.Do(ctx, valkey.Endpoint{Addr: a.Addr}, "PING")
	if err == nil {
		t.Fatal("PING to a killed server succeeded")
	}
	if _, ok := valkey.IsServerError(err); ok {
		t.Fatalf("connection failure classified as a server error: %v", err)
	}
}

// TestFailoverCommand: FAILOVER TO swaps the roles of a primary and its replica.
func TestFailoverCommand(t *testing.T) {
	p := pool(t)
	a := start(t)
	b := start(t, "--replica-announce-ip", "127.0.0.1")
	do(t, p, b, valkey.CmdReplicaOf("127.0.0.1", a.Port)...)
	waitFor(t, "B linked", func() bool { return info(t, p, b).MasterLinkUp })
	// FAILOVER TO needs the primary's own view of the replica to be online (after its first ACK).
	waitFor(t, "A sees B online", func() bool {
		return strings.Contains(do(t, p, a, "INFO", "replication").Str, "state=online")
	})
	do(t, p, a, "SET", "x", "1")
	do(t, p, a, valkey.CmdFailover("127.0.0.1", b.Port, 5*time.Second)...)
	waitFor(t, "roles swapped", func() bool {
		ia, ib := info(t, p, a), info(t, p, b)
		return ib.Role == valkey.RoleMaster && ia.ReplicatingFrom("127.0.0.1", b.Port) && ia.FailoverState == "no-failover"
	})
	if got := do(t, p, b, "GET", "x"); got.Str != "1" {
		t.Fatalf("GET x on the new primary: %v", got)
	}
}

// TestFence: a server started as a replica of the closed fence port rejects
// writes and refuses to feed a replica of its own (-NOMASTERLINK).
func TestFence(t *testing.T) {
	p := pool(t)
	f := start(t, "--replicaof", "127.0.0.1", "1")
	r := start(t)
	in := info(t, p, f)
	if !in.ReplicatingFrom("127.0.0.1", 1) || in.MasterLinkUp {
		t.Fatalf("fenced INFO: %+v", in)
	}
	_, err := p.Do(context.Background(), valkey.Endpoint{Addr: f.Addr}, "SET", "k", "v")
	if se, ok := valkey.IsServerError(err); !ok || !strings.Contains(se.Msg, "READONLY") {
		t.Fatalf("write to a fenced server: %v", err)
	}
	do(t, p, r, valkey.CmdReplicaOf("127.0.0.1", f.Port)...)
	time.Sleep(1500 * time.Millisecond)
	if in := info(t, p, r); in.MasterLinkUp {
		t.Fatal("a replica synced from a fenced server")
	}
}

func TestConfigReplies(t *testing.T) {
	p := pool(t)
	s := start(t)
	do(t, p, s, valkey.CmdConfigSet(map[string]string{"maxmemory": "100mb"})...)
	m, err := do(t, p, s, valkey.CmdConfigGet("maxmemory", "maxmemory-policy", "no-such-key")...).StringMap()
	if err != nil {
		t.Fatal(err)
	}
	if m["maxmemory"] != "104857600" || m["maxmemory-policy"] != "noeviction" {
		t.Fatalf("CONFIG GET: %v", m)
	}
	if _, ok := m["no-such-key"]; ok {
		t.Fatal("unknown key returned")
	}
	for _, tc := range []struct {
		kv   map[string]string
		test func(string) bool
	}{
		{map[string]string{"no-such-key": "1"}, valkey.IsUnknownConfig},
		{map[string]string{"databases": "32"}, valkey.IsImmutableConfig},
	} {
		_, err := p.Do(context.Background(), valkey.Endpoint{Addr: s.Addr}, valkey.CmdConfigSet(tc.kv)...)
		se, ok := valkey.IsServerError(err)
		if !ok || !tc.test(se.Msg) {
			t.Fatalf("CONFIG SET %v: %v", tc.kv, err)
		}
	}
}

func TestAuth(t *testing.T) {
	p := pool(t)
	s := start(t, "--requirepass", "n3w")
	ctx := context.Background()
	if _, err := p.Do(ctx, valkey.Endpoint{Addr: s.Addr, Password: "0ld"}, "PING"); err == nil {
		t.Fatal("wrong password accepted")
	}
	// During a rotation the alternative password is tried.
	r, err := p.Do(ctx, valkey.Endpoint{Addr: s.Addr, Password: "0ld", AltPassword: "n3w"}, "PING")
	if err != nil || r.Str != "PONG" {
		t.Fatalf("alt password: %v %v", r, err)
	}
	// Zero-downtime rotation as the operator does it.
	ep := valkey.Endpoint{Addr: s.Addr, Password: "n3w"}
	for _, cmd := range [][]string{{"ACL", "SETUSER", "default", ">n3wer"}, {"ACL", "SETUSER", "default", "<n3w"}} {
		if _, err := p.Do(ctx, ep, cmd...); err != nil {
			t.Fatal(err)
		}
	}
	p2 := pool(t)
	if _, err := p2.Do(ctx, valkey.Endpoint{Addr: s.Addr, Password: "n3wer"}, "PING"); err != nil {
		t.Fatalf("rotated password: %v", err)
	}
	if _, err := p2.Do(ctx, valkey.Endpoint{Addr: s.Addr, Password: "n3w"}, "PING"); err == nil {
		t.Fatal("removed password still accepted")
	}
	_, err = p.Do(ctx, ep, "ACL", "SETUSER", "default", "<gone")
	if _, ok := valkey.IsServerError(err); !ok {
		t.Fatalf("removing an unknown password: %v (want a server error the operator tolerates)", err)
	}
}

func TestPoolClosed(t *testing.T) {
	p := valkey.NewPool()
	p.Close()
	if _, err := p.Do(context.Background(), valkey.Endpoint{Addr: "127.0.0.1:1"}, "PING"); !errors.Is(err, valkey.ErrPoolClosed) {
		t.Fatalf("Do after Close: %v", err)
	}
}
