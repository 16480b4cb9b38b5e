package valkeytest

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/testenv"
)

// get sends an inline command and returns the first line of the reply.
func get(t *testing.T, addr, cmd string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(line, "*") { // CONFIG GET: name, then value
		for range 4 {
			if line, err = r.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
	}
	return strings.TrimSpace(line)
}

// A server from a config file takes its settings, the Args win over them, and
// it lives in its own folder below Dir; Stop ends it.
func TestStartFromConfig(t *testing.T) {
	if _, err := Binary(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "valkey.conf")
	if err := os.WriteFile(file, []byte("maxmemory-policy allkeys-lru\nhz 17\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	s, err := Start(ctx, Options{Host: "127.0.0.3", Dir: dir, Config: file, Args: []string{"--hz", "23"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if got := get(t, s.Addr, "CONFIG GET maxmemory-policy"); got != "allkeys-lru" {
		t.Errorf("maxmemory-policy = %q, want the config file's allkeys-lru", got)
	}
	if got := get(t, s.Addr, "CONFIG GET hz"); got != "23" {
		t.Errorf("hz = %q, want the argument's 23", got)
	}
	if got := get(t, s.Addr, "CONFIG GET dir"); got != s.Dir || filepath.Dir(s.Dir) != dir {
		t.Errorf("dir = %q, server folder %q, want a folder below %s", got, s.Dir, dir)
	}
	s.Stop()
	if !s.Exited() {
		t.Error("the server still runs after Stop")
	}
}

func TestStartNeedsDir(t *testing.T) {
	if _, err := Binary(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	if _, err := Start(context.Background(), Options{}); err == nil || !strings.Contains(err.Error(), "Dir") {
		t.Errorf("Start without Dir: %v, want an error naming Options.Dir", err)
	}
}
