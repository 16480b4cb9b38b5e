package container

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/testing/testio"
)

const sampleLog = `2024-01-01T00:00:01Z stdout F one
2024-01-01T00:00:02.5Z stderr F two
not a CRI record
2024-01-01T00:00:03Z stdout P thr
2024-01-01T00:00:03.5Z stdout F ee
2024-01-01T00:00:04Z stdout F
2024-01-01T00:00:05Z stdout F five
`

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestReadLogs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	if err := os.WriteFile(path, []byte(sampleLog), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts LogOptions
		want string
	}{
		{"all", LogOptions{Tail: -1}, "one\ntwo\nthree\n\nfive\n"},
		{"tail 1", LogOptions{Tail: 1}, "five\n"},
		{"tail 3 joins partial records", LogOptions{Tail: 3}, "three\n\nfive\n"},
		{"tail 5 is everything", LogOptions{Tail: 5}, "one\ntwo\nthree\n\nfive\n"},
		{"tail beyond the start", LogOptions{Tail: 100}, "one\ntwo\nthree\n\nfive\n"},
		{"tail 0", LogOptions{Tail: 0}, ""},
		{"since", LogOptions{Tail: -1, SinceTime: ts("2024-01-01T00:00:02Z")}, "two\nthree\n\nfive\n"},
		{"since after all", LogOptions{Tail: -1, SinceTime: ts("2025-01-01T00:00:00Z")}, ""},
		{"timestamps", LogOptions{Tail: 3, Timestamps: true},
			"2024-01-01T00:00:03Z three\n2024-01-01T00:00:04Z \n2024-01-01T00:00:05Z five\n"},
		{"limit bytes", LogOptions{Tail: -1, LimitBytes: 6}, "one\ntw"},
		{"limit bytes at a line end", LogOptions{Tail: -1, LimitBytes: 4}, "one\n"},
		{"limit bytes with timestamps", LogOptions{Tail: 1, LimitBytes: 22, Timestamps: true}, "2024-01-01T00:00:05Z f"},
		{"tail and since", LogOptions{Tail: 2, SinceTime: ts("2024-01-01T00:00:04.5Z")}, "five\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := ReadLogs(context.Background(), path, tc.opts, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got %q, want %q", out.String(), tc.want)
			}
		})
	}
}

func TestReadLogsMissingFile(t *testing.T) {
	err := ReadLogs(context.Background(), filepath.Join(t.TempDir(), "nope.log"), LogOptions{Tail: -1}, io.Discard)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadLogs of a missing file: %v, want fs.ErrNotExist", err)
	}
}

// TestTailLargeLog crosses tailStart's chunk boundaries.
func TestTailLargeLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.log")
	var b strings.Builder
	const lines = 20000
	for i := 0; i < lines; i++ {
		fmt.Fprintf(&b, "2024-01-01T00:00:00.%09dZ stdout F line %d\n", i, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 7, 1000, 4321, lines - 1, lines, lines + 5} {
		var out bytes.Buffer
		if err := ReadLogs(context.Background(), path, LogOptions{Tail: n}, &out); err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		want := min(n, lines)
		if len(got) != want || got[len(got)-1] != fmt.Sprintf("line %d", lines-1) || got[0] != fmt.Sprintf("line %d", lines-want) {
			t.Errorf("tail %d: %d lines, first %q, last %q", n, len(got), got[0], got[len(got)-1])
		}
	}
}

func TestReadLogsFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.log")
	l, err := openLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	l.write("stdout", tagFull, []byte("before"))

	ctx, cancel := context.WithCancel(context.Background())
	var out testio.Buffer
	done := make(chan error, 1)
	go func() { done <- ReadLogs(ctx, path, LogOptions{Tail: 1, Follow: true}, &out) }()

	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for out.String() != want {
			if time.Now().After(deadline) {
				t.Fatalf("followed output %q, want %q", out.String(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("before\n")
	l.write("stderr", tagFull, []byte("after"))
	waitFor("before\nafter\n")
	l.write("stdout", tagPartial, []byte("part"))
	l.write("stdout", tagFull, []byte("ial"))
	waitFor("before\nafter\npartial\n")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ReadLogs after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadLogs kept following after the context ended")
	}
}

// TestLogWriter checks the records the stream copier writes: long lines split
// into partial records and a last line without a newline.
func TestLogWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.log")
	l, err := openLog(path)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 2*maxLogLine+100)
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := l.copyStreams(outR, errR)
	go func() {
		_, _ = io.WriteString(outW, "short\n"+long+"\n\nlast")
		_ = outW.Close()
	}()
	_, _ = io.WriteString(errW, "oops\n")
	_ = errW.Close()
	c.finish(5 * time.Second)
	l.close()

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		rec, err := parseRecord([]byte(line))
		if err != nil {
			t.Fatalf("bad record %q: %v", line, err)
		}
		tag := "F"
		if rec.partial {
			tag = "P"
		}
		if rec.stream == "stdout" {
			tags = append(tags, fmt.Sprintf("%s%d", tag, len(rec.content)))
		}
	}
	want := []string{"F5", "P16384", "P16384", "F100", "F0", "F4"}
	if strings.Join(tags, " ") != strings.Join(want, " ") {
		t.Errorf("stdout records %v, want %v", tags, want)
	}
	var out bytes.Buffer
	if err := ReadLogs(context.Background(), path, LogOptions{Tail: -1}, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	// The two streams are copied concurrently: stderr's line may fall between
	// any two of stdout's records, so stdout is checked with it taken out.
	if !strings.Contains(got, "oops\n") {
		t.Errorf("ReadLogs output lacks stderr's %q", "oops\n")
	}
	if stdout := strings.Replace(got, "oops\n", "", 1); stdout != "short\n"+long+"\n\nlast\n" {
		t.Errorf("ReadLogs output without stderr's line is %.60q…, want %.60q…", stdout, "short\n"+long+"\n\nlast\n")
	}
	if len(got) != len("short\n"+long+"\n\nlast\noops\n") {
		t.Errorf("ReadLogs output is %d bytes, want %d", len(got), len("short\n"+long+"\n\nlast\noops\n"))
	}
}

func TestParseRecord(t *testing.T) {
	tests := []struct {
		line    string
		ok      bool
		stream  string
		partial bool
		content string
	}{
		{"2024-01-01T00:00:01Z stdout F hello world", true, "stdout", false, "hello world"},
		{"2024-01-01T00:00:01.123456789+02:00 stderr P  lead", true, "stderr", true, " lead"},
		{"2024-01-01T00:00:01Z stdout F", true, "stdout", false, ""},
		{"2024-01-01T00:00:01Z stdout X hi", false, "", false, ""},
		{"2024-01-01T00:00:01Z stdin F hi", false, "", false, ""},
		{"yesterday stdout F hi", false, "", false, ""},
		{"", false, "", false, ""},
	}
	for _, tc := range tests {
		rec, err := parseRecord([]byte(tc.line))
		if (err == nil) != tc.ok {
			t.Errorf("%q: error %v, want ok=%v", tc.line, err, tc.ok)
			continue
		}
		if tc.ok && (rec.stream != tc.stream || rec.partial != tc.partial || string(rec.content) != tc.content) {
			t.Errorf("%q: got %+v", tc.line, rec)
		}
	}
}
