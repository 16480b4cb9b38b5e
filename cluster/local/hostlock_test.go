package local

import (
	"context"
	"testing"
	"time"
)

func TestLockHostExcludes(t *testing.T) {
	ctx := context.Background()
	unlock, err := lockHost(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	go func() {
		u2, err := lockHost(ctx)
		if err != nil {
			t.Error(err)
			return
		}
		close(got)
		u2()
	}()
	select {
	case <-got:
		t.Fatal("second holder got the lock while the first held it")
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("lock not handed over after release")
	}
	cctx, cancel := context.WithCancel(ctx)
	unlock, _ = lockHost(ctx)
	defer unlock()
	cancel()
	if _, err := lockHost(cctx); err == nil {
		t.Fatal("lockHost with a cancelled context succeeded while the lock was held")
	}
}
