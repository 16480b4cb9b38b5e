package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// LogPath is where a cluster's owner process (gauntlet cluster serve) writes its log.
func LogPath(root, name string) string {
	return filepath.Join(StateRoot(root), "logs", name+".log")
}

// Serve creates the cluster, calls ready, and keeps it until ctx is done, then
// deletes it. It is the body of the owner process behind `gauntlet cluster up`.
func Serve(ctx context.Context, opts Options, ready func(*Cluster)) error {
	c, err := Create(ctx, opts)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(c)
	}
	<-ctx.Done()
	dctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return c.Delete(dctx)
}

// WaitRunning waits until the cluster called name records PhaseRunning. It fails
// early when the owner process (pid) exits first.
func WaitRunning(ctx context.Context, root, name string, ownerExited <-chan error) (Info, error) {
	dir := filepath.Join(clustersDir(StateRoot(root)), name)
	for {
		info, err := readInfo(dir)
		if err == nil && info.Phase == PhaseRunning {
			return info, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return Info{}, err
		}
		select {
		case err := <-ownerExited:
			return Info{}, fmt.Errorf("cluster %s failed to start (%v); its log is %s", name, err, LogPath(root, name))
		case <-ctx.Done():
			return Info{}, fmt.Errorf("waiting for cluster %s: %w; its log is %s", name, ctx.Err(), LogPath(root, name))
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// removeLog deletes the owner's log once the cluster is gone.
func removeLog(info Info) {
	root := filepath.Dir(filepath.Dir(info.Dir))
	_ = os.Remove(LogPath(root, info.Name))
}
