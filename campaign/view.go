package campaign

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gauntlet-dev/gauntlet/view"
)

// DeployOption changes how Deploy installs the operator.
type DeployOption func(*kube)

// WithOperatorView puts a view proxy (package view) between the operator and
// the API server: the operator's Deployment is pointed at it. Only the
// embedded cluster offers it (view.ErrNoPodListener otherwise).
func WithOperatorView() DeployOption { return func(k *kube) { k.viewOn = true } }

// View is the proxy between the operator and the API server (nil without
// WithOperatorView).
func (d *Deployment) View() *view.Proxy { return d.k.view }

// pointAtView starts the worker's view proxy (once) and points the operator's
// Deployment obj at it; a crash after a chosen write restarts the operator's pods.
func (k *kube) pointAtView(ctx context.Context, obj map[string]any) error {
	if k.view == nil {
		p, err := view.StartForPods(ctx, k.cluster, func(ctx context.Context) error {
			return view.RestartPods(ctx, k.cluster, k.cs, k.opNS, k.opLabels)
		}, k.log)
		if err != nil {
			return err
		}
		k.view = p
		k.viewBuf = &bytes.Buffer{}
		_ = p.SetRecord(k.viewBuf)
	}
	return view.PointDeployment(obj, k.view.Addr())
}

// writeViewRecord writes what the view proxy recorded since the previous call
// to dir/view.jsonl (nothing without a proxy) and keeps it as lastView.
func (k *kube) writeViewRecord(dir string) error {
	if k.view == nil {
		return nil
	}
	buf := k.viewBuf
	k.viewBuf = &bytes.Buffer{}
	k.lastView = buf.Bytes()
	if err := k.view.SetRecord(k.viewBuf); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "view.jsonl"), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("view record: %w", err)
	}
	return nil
}

// stopView closes the proxy.
func (k *kube) stopView() {
	if k.view != nil {
		_ = k.view.Close()
	}
}
