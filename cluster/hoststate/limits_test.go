package hoststate

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRaiseKernelLimits: a setting below its minimum is raised and logged,
// one above it is left alone, one that cannot be read is an error naming it.
func TestRaiseKernelLimits(t *testing.T) {
	dir := t.TempDir()
	write := func(setting, v string) {
		p := filepath.Join(dir, setting)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("fs/inotify/max_user_instances", "128\n")
	write("fs/inotify/max_user_watches", "1048576\n")
	var logs bytes.Buffer
	err := RaiseKernelLimits(slog.New(slog.NewTextHandler(&logs, nil)), dir, append(InotifyMinimums(), KernelMinimum{Setting: "fs/absent", Min: 1}))
	if err == nil || !strings.Contains(err.Error(), "fs.absent") {
		t.Fatalf("err = %v, want one naming fs.absent", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "fs/inotify/max_user_instances")); strings.TrimSpace(string(b)) != "8192" {
		t.Errorf("max_user_instances = %q, want raised to 8192", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "fs/inotify/max_user_watches")); strings.TrimSpace(string(b)) != "1048576" {
		t.Errorf("max_user_watches = %q, want left at 1048576", b)
	}
	if l := logs.String(); !strings.Contains(l, "setting=fs.inotify.max_user_instances from=128 to=8192") || strings.Contains(l, "max_user_watches") {
		t.Errorf("log = %q, want the one raise", l)
	}
}
