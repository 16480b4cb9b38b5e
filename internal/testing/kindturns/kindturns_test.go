package kindturns

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster"
)

type slowProvider struct{ now, most *atomic.Int32 }

func (p slowProvider) Create(context.Context, string) (cluster.Cluster, error) {
	n := p.now.Add(1)
	for m := p.most.Load(); n > m && !p.most.CompareAndSwap(m, n); m = p.most.Load() {
	}
	time.Sleep(20 * time.Millisecond)
	p.now.Add(-1)
	return nil, nil
}

func TestCreationsTakeTurns(t *testing.T) {
	var now, most atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		p := Provider(slowProvider{&now, &most}) // a provider each, as each test has
		wg.Go(func() {
			if _, err := p.Create(context.Background(), "x"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Errorf("%d creations at once, want one at a time", m)
	}
}
