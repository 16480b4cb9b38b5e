package pidfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestKillAllSkipsOtherPIDFiles: a program's own PID file under the cluster's
// folder (PostgreSQL's postmaster.pid in a pod's volume) is not a record: the
// cluster's deletion failed on it and left its folder behind. Records are still
// killed and removed.
func TestKillAllSkipsOtherPIDFiles(t *testing.T) {
	root := t.TempDir()
	vol := filepath.Join(root, "volumes", "pvc-1", "pgdata")
	if err := os.MkdirAll(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	pg := filepath.Join(vol, "postmaster.pid")
	if err := os.WriteFile(pg, []byte("27\n/var/lib/postgresql/data/pgdata\n1764191234\n5432\n/controller/run\n*\n  5432001 0\nready\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	rec := filepath.Join(root, "containers", "c1"+Suffix)
	if err := Write(rec, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	killed, err := KillAll(root, 5*time.Second)
	if err != nil || killed != 1 {
		t.Fatalf("KillAll = %d, %v; want 1 killed, no error", killed, err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the recorded process still runs")
	}
	if _, err := os.Stat(rec); !os.IsNotExist(err) {
		t.Errorf("the record is left: %v", err)
	}
	if _, err := os.Stat(pg); err != nil {
		t.Errorf("PostgreSQL's PID file was touched: %v", err)
	}
}
