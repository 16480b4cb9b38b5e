package campaign

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/gauntlet-dev/gauntlet/model"

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

// takeViewRecord returns what the view proxy recorded since the previous
// call and keeps it for writeViewRecord (nil without a proxy).
func (k *kube) takeViewRecord() []byte {
	if k.view == nil {
		return nil
	}
	buf := k.viewBuf
	k.viewBuf = &bytes.Buffer{}
	if err := k.view.SetRecord(k.viewBuf); err != nil {
		k.log.Warn("view record", "err", err)
	}
	k.viewPending = append(k.viewPending, buf.Bytes()...)
	return k.viewPending
}

// writeViewRecord writes what the view proxy recorded since the previous call
// to dir/view.jsonl (nothing without a proxy) and keeps it as lastView.
func (k *kube) writeViewRecord(dir string) error {
	if k.view == nil {
		return nil
	}
	rec := k.takeViewRecord()
	k.viewPending, k.lastView = nil, rec
	if err := os.WriteFile(filepath.Join(dir, "view.jsonl"), rec, 0o644); err != nil {
		return fmt.Errorf("view record: %w", err)
	}
	return nil
}

// operatorView is what the view proxy saw of the operator in the session's
// namespace during the step so far, and the faults of its view the step
// held (nil without a proxy): what the stale-view oracle judges.
func (s *session) operatorView(faults []model.Fault) *model.OperatorView {
	raw := s.env.kube.takeViewRecord()
	if raw == nil {
		return nil
	}
	if s.r.dir == "" {
		s.env.kube.viewPending = nil // no step files to write it to
	}
	out := &model.OperatorView{}
	for _, f := range faults {
		if k := model.FaultKind(f.Kind); k.View() && !slices.Contains(out.Faults, k) {
			out.Faults = append(out.Faults, k)
		}
	}
	recs, err := view.ReadRecord(bytes.NewReader(raw))
	if err != nil {
		s.r.cfg.Logger.Warn("view record of the step", "err", err)
	}
	for _, r := range recs {
		if r.What == "request" && r.Namespace == s.ns && r.Status/100 == 2 && view.IsWriteVerb(r.Verb) {
			out.Writes = append(out.Writes, model.ViewWrite{Verb: r.Verb, Group: r.Group, Resource: r.Resource, Subresource: r.Subresource,
				Namespace: r.Namespace, Name: r.Name, Time: r.Time})
		}
	}
	return out
}

// stopView closes the proxy.
func (k *kube) stopView() {
	if k.view != nil {
		_ = k.view.Close()
	}
}
