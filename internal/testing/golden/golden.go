// Package golden compares a test's output with a golden file and rewrites the
// file when asked to (each test package keeps its own -update flag and passes
// its value). It is test support.
package golden

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxShown is how many differing lines Diff shows.
const maxShown = 8

// Check compares got with the file at path. With update it writes got there
// (creating the folder) instead and passes. A missing file fails naming the
// -update flag; a different one fails naming the file and showing its first
// differing lines (Diff).
func Check(tb testing.TB, path string, got []byte, update bool) {
	tb.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read the golden file (run go test -run '^%s$' -update to create it): %v", tb.Name(), err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("the output differs from %s (run go test -run '^%s$' -update after checking the change):\n%s", path, tb.Name(), Diff(string(want), string(got)))
	}
}

// Diff shows the first differing lines of want and got (at most eight), each
// as "line N:\n  want: …\n  got:  …"; it is empty when they are equal.
func Diff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w == g {
			continue
		}
		fmt.Fprintf(&b, "line %d:\n  want: %s\n  got:  %s\n", i+1, w, g)
		if shown++; shown == maxShown {
			break
		}
	}
	return b.String()
}
