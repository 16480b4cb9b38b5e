package testio

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestBufferConcurrent(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 100 {
				fmt.Fprintf(&b, "%d-%d\n", i, j)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 400 {
		t.Errorf("%d lines, want 400", n)
	}
}

func TestLogWriter(t *testing.T) {
	w := LogWriter(t)
	if n, err := w.Write([]byte("a line\n")); n != 7 || err != nil {
		t.Errorf("Write = %d, %v; want 7, nil", n, err)
	}
}
