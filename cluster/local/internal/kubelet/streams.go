package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	utilexec "k8s.io/utils/exec"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/container"
)

// followDrain is how long a followed log keeps reading after its container
// stopped, so that the last lines are delivered.
const followDrain = 300 * time.Millisecond

// GetContainerLogs serves kubectl logs: the current instance's log, or with
// Previous the instance before it.
func (p *provider) GetContainerLogs(ctx context.Context, namespace, podName, containerName string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	w, ok := p.find(namespace, podName)
	if !ok {
		return nil, errdefs.NotFoundf("pod %s/%s is not on node %s", namespace, podName, p.nodeName)
	}
	w.mu.Lock()
	var c *ctrRun
	for _, x := range w.ctrs {
		if x.name == containerName {
			c = x
		}
	}
	if c == nil {
		w.mu.Unlock()
		return nil, errdefs.NotFoundf("container %q is not in pod %s/%s", containerName, namespace, podName)
	}
	path := c.logPath
	proc := c.proc
	waiting := ""
	if c.state.Waiting != nil {
		waiting = c.state.Waiting.Reason
	}
	if opts.Previous {
		path, proc = c.prevLog, nil
	}
	w.mu.Unlock()
	if path == "" {
		if opts.Previous {
			return nil, errdefs.InvalidInputf("previous terminated container %q in pod %q not found", containerName, podName)
		}
		// As the kubelet answers for a container that never ran.
		return nil, errdefs.InvalidInputf("container %q in pod %q is waiting to start: %s", containerName, podName, waiting)
	}
	lo := container.LogOptions{Tail: -1, Timestamps: opts.Timestamps, LimitBytes: int64(opts.LimitBytes), Follow: opts.Follow && proc != nil}
	if opts.Tail > 0 {
		lo.Tail = opts.Tail
	}
	if !opts.SinceTime.IsZero() {
		lo.SinceTime = opts.SinceTime
	} else if opts.SinceSeconds > 0 {
		lo.SinceTime = time.Now().Add(-time.Duration(opts.SinceSeconds) * time.Second)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		// A request's end or the container's end stops a follow.
		var done <-chan struct{}
		if lo.Follow {
			done = proc.Done()
		}
		select {
		case <-ctx.Done():
			cancel()
		case <-rctx.Done():
		case <-done:
			select {
			case <-time.After(followDrain):
			case <-ctx.Done():
			}
			cancel()
		}
	}()
	pr, pw := io.Pipe()
	go func() {
		err := container.ReadLogs(rctx, path, lo, pw)
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		pw.CloseWithError(err)
	}()
	return &cancelReader{PipeReader: pr, cancel: cancel}, nil
}

// cancelReader stops the log reader when the HTTP handler closes it.
type cancelReader struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (r *cancelReader) Close() error {
	r.cancel()
	return r.PipeReader.Close()
}

// RunInContainer serves kubectl exec.
func (p *provider) RunInContainer(ctx context.Context, namespace, podName, containerName string, cmd []string, attach api.AttachIO) error {
	w, ok := p.find(namespace, podName)
	if !ok {
		return errdefs.NotFoundf("pod %s/%s is not on node %s", namespace, podName, p.nodeName)
	}
	_, proc, err := w.runningProcess(containerName)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return errdefs.AsNotFound(err)
		}
		return fmt.Errorf("cannot exec in container %q of pod %s/%s: %w", containerName, namespace, podName, err)
	}
	opts := container.ExecOptions{Argv: cmd, TTY: attach.TTY()}
	if in := attach.Stdin(); in != nil {
		opts.Stdin = in
	}
	if out := attach.Stdout(); out != nil {
		opts.Stdout = out
	}
	if errw := attach.Stderr(); errw != nil {
		opts.Stderr = errw
	}
	var wg sync.WaitGroup
	ectx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		wg.Wait()
	}()
	if attach.TTY() {
		if resize := attach.Resize(); resize != nil {
			ch := make(chan container.TermSize, 1)
			opts.Resize = ch
			wg.Go(func() {
				for {
					select {
					case <-ectx.Done():
						return
					case s, ok := <-resize:
						if !ok {
							return
						}
						select {
						case ch <- container.TermSize{Width: s.Width, Height: s.Height}:
						case <-ectx.Done():
							return
						}
					}
				}
			})
		}
	}
	code, err := proc.Exec(ectx, opts)
	if err != nil {
		return fmt.Errorf("exec in container %q of pod %s/%s: %w", containerName, namespace, podName, err)
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
	}
	return nil
}

// AttachToContainer is not supported: a container's stdio goes to its log.
func (p *provider) AttachToContainer(ctx context.Context, namespace, podName, containerName string, attach api.AttachIO) error {
	return errdefs.InvalidInput("kubectl attach is not supported by the embedded cluster's nodes (container output goes to the log): use kubectl logs -f, or kubectl exec")
}

// PortForward connects a kubectl port-forward stream to a port of the pod.
func (p *provider) PortForward(ctx context.Context, namespace, podName string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	w, ok := p.find(namespace, podName)
	if !ok {
		return errdefs.NotFoundf("pod %s/%s is not on node %s", namespace, podName, p.nodeName)
	}
	w.mu.Lock()
	ip, ready := w.podIP, w.sandboxReady
	w.mu.Unlock()
	if !ready || !ip.IsValid() {
		return fmt.Errorf("pod %s/%s has no network sandbox (not running)", namespace, podName)
	}
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := d.DialContext(dctx, "tcp", net.JoinHostPort(ip.String(), strconv.Itoa(int(port))))
	cancel()
	if err != nil {
		return fmt.Errorf("port-forward to pod %s/%s port %d: %w", namespace, podName, port, err)
	}
	defer conn.Close()
	errc := make(chan error, 2)
	go func() {
		_, err := io.Copy(conn, stream)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		errc <- err
	}()
	go func() {
		_, err := io.Copy(stream, conn)
		errc <- err
	}()
	select {
	case err = <-errc:
	case <-ctx.Done():
		return nil
	}
	// One direction ended; give the other a moment to flush.
	select {
	case <-errc:
	case <-time.After(time.Second):
	case <-ctx.Done():
	}
	if err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.ErrClosedPipe) {
		return err
	}
	return nil
}
