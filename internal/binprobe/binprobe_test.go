package binprobe

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// script writes an executable shell script that appends a line to count on each run.
func script(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "prog")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func runs(t *testing.T, count string) int {
	t.Helper()
	b, err := os.ReadFile(count)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func TestOutputCachedPerFile(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	prog := script(t, dir, `echo run >> `+count+`; echo "prog v1 $1"`)
	p := Prober{Dir: filepath.Join(dir, "cache")}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		out, err := p.Output(ctx, prog, "--version")
		if err != nil {
			t.Fatal(err)
		}
		if out != "prog v1 --version\n" {
			t.Fatalf("output %q", out)
		}
	}
	if n := runs(t, count); n != 1 {
		t.Fatalf("program ran %d times, want 1 (cached after the first)", n)
	}
	if _, err := p.Output(ctx, prog, "-plugins"); err != nil {
		t.Fatal(err)
	}
	if n := runs(t, count); n != 2 {
		t.Fatalf("other arguments: program ran %d times in all, want 2", n)
	}
	// A rebuilt binary (new content, new mtime) is probed again.
	time.Sleep(10 * time.Millisecond)
	script(t, dir, `echo run >> `+count+`; echo "prog v2 rebuilt"`)
	out, err := p.Output(ctx, prog, "--version")
	if err != nil {
		t.Fatal(err)
	}
	if out != "prog v2 rebuilt\n" {
		t.Fatalf("after a rebuild: %q, want the new answer", out)
	}
}

func TestOutputFailureNotCached(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	prog := script(t, dir, `echo run >> `+count+`; echo broken; exit 3`)
	p := Prober{Dir: filepath.Join(dir, "cache")}
	for i := 0; i < 2; i++ {
		out, err := p.Output(context.Background(), prog, "--version")
		if err == nil {
			t.Fatal("want the exit status as an error")
		}
		if out != "broken\n" {
			t.Fatalf("output %q", out)
		}
	}
	if n := runs(t, count); n != 2 {
		t.Fatalf("a failing program ran %d times, want 2 (failures are not cached)", n)
	}
}

func TestOutputRetriesTimeoutOnce(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	// The first run is slow (as under load), the second answers at once.
	prog := script(t, dir, `echo run >> `+count+`; if [ "$(wc -l < `+count+`)" -eq 1 ]; then sleep 30; fi; echo ok`)
	p := Prober{Timeout: time.Second} // the retry gets 3 s: room for a loaded machine
	out, err := p.Output(context.Background(), prog)
	if err != nil {
		t.Fatalf("want the retry to answer: %v", err)
	}
	if out != "ok\n" || runs(t, count) != 2 {
		t.Fatalf("output %q after %d runs, want ok after 2", out, runs(t, count))
	}
}

func TestOutputTimeoutNamesProgram(t *testing.T) {
	dir := t.TempDir()
	prog := script(t, dir, `sleep 5`)
	p := Prober{Timeout: 100 * time.Millisecond}
	_, err := p.Output(context.Background(), prog, "--version")
	if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") || !strings.Contains(err.Error(), prog) {
		t.Fatalf("err = %v, want the program and the retry's limit named", err)
	}
}

func TestCacheBounded(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	p := Prober{Dir: cache}
	for i := 0; i < maxEntries+10; i++ {
		p.store(fmt.Sprintf("entry-%03d", i), "x")
	}
	ents, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != maxEntries {
		t.Fatalf("%d entries, want the cache bounded at %d", len(ents), maxEntries)
	}
}
