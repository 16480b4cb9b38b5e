package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	if d := Diff("a\nb\n", "a\nb\n"); d != "" {
		t.Errorf("Diff of equal texts = %q, want empty", d)
	}
	d := Diff("a\nb\nc", "a\nB\nc\nd")
	for _, want := range []string{"line 2:\n  want: b\n  got:  B\n", "line 4:\n  want: \n  got:  d\n"} {
		if !strings.Contains(d, want) {
			t.Errorf("Diff = %q, lacks %q", d, want)
		}
	}
	if strings.Contains(d, "line 1") || strings.Contains(d, "line 3") {
		t.Errorf("Diff = %q shows equal lines", d)
	}
	if n := strings.Count(Diff(strings.Repeat("x\n", 20), strings.Repeat("y\n", 20)), "line "); n != maxShown {
		t.Errorf("Diff of 20 differing lines shows %d, want %d", n, maxShown)
	}
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Name() string              { return "TestX" }
func (r *recorder) Errorf(f string, a ...any) { r.failed, r.msg = true, f }
func (r *recorder) Fatalf(f string, a ...any) { r.failed, r.msg = true, f; panic(r) }
func (r *recorder) Fatal(a ...any)            { r.failed = true; panic(r) }

func check(path string, got []byte, update bool) (r *recorder) {
	r = &recorder{}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	Check(r, path, got, update)
	return r
}

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "out.golden")
	if r := check(path, []byte("one\n"), false); !r.failed || !strings.Contains(r.msg, "-update to create it") {
		t.Errorf("a missing golden file: failed %v (%q), want a failure naming -update", r.failed, r.msg)
	}
	if r := check(path, []byte("one\n"), true); r.failed {
		t.Errorf("update failed: %s", r.msg)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "one\n" {
		t.Fatalf("update wrote %q, %v; want %q", b, err, "one\n")
	}
	if r := check(path, []byte("one\n"), false); r.failed {
		t.Errorf("the same output failed: %s", r.msg)
	}
	if r := check(path, []byte("two\n"), false); !r.failed || !strings.Contains(r.msg, "differs from") {
		t.Errorf("a different output: failed %v (%q), want a failure", r.failed, r.msg)
	}
}
