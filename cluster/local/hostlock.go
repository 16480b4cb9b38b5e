package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// hostLockName is an abstract unix socket (no file) whose bound address is the
// host-wide lock for choosing a pod CIDR and creating its bridge: clusters in
// different state roots must not pick the same addresses. The kernel releases it
// when the holder dies, so a killed harness never leaves it taken.
const hostLockName = "@gauntlet/cluster-network-allocation"

// lockHost waits until it holds the host-wide allocation lock.
func lockHost(ctx context.Context) (func(), error) {
	addr := &net.UnixAddr{Name: hostLockName, Net: "unix"}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		l, err := net.ListenUnix("unix", addr)
		if err == nil {
			return func() { l.Close() }, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("local: take the host-wide network allocation lock: %w", err)
		}
		if time.Now().After(deadline) {
			return nil, errors.New("local: another gauntlet process has held the network allocation lock for 2 minutes: is one stuck? (see `gauntlet cluster list`)")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
