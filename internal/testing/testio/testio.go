// Package testio has the writers tests hand to code that writes as it runs:
// one into the test's log, and a buffer read while another goroutine writes.
// It is test support.
package testio

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
)

// LogWriter returns a writer that puts each write into tb's log, as one entry
// without its trailing newline (slog handlers, progress lines).
func LogWriter(tb testing.TB) io.Writer { return logWriter{tb} }

type logWriter struct{ tb testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.tb.Helper()
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Buffer is a bytes.Buffer that one goroutine may write while another reads.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
