package kubelet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// statusLoop writes the pod's status whenever the worker kicks it, coalescing
// bursts, until the worker quits.
func (w *podWorker) statusLoop() {
	defer w.writerWG.Done()
	delay := 100 * time.Millisecond
	for {
		select {
		case <-w.quit:
			return
		case <-w.wake:
		}
		if w.isSilent() {
			continue
		}
		ctx, cancel := context.WithTimeout(w.p.ctx, 15*time.Second)
		err := w.writeStatus(ctx)
		cancel()
		if err == nil {
			delay = 100 * time.Millisecond
			continue
		}
		w.log.Debug("pod status write failed; retrying", "err", err, "in", delay)
		select {
		case <-w.quit:
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
		w.kick()
	}
}

// writeStatusWithRetry writes the status until it works or ctx ends.
func (w *podWorker) writeStatusWithRetry(ctx context.Context) {
	delay := 100 * time.Millisecond
	for {
		err := w.writeStatus(ctx)
		if err == nil || ctx.Err() != nil {
			if err != nil {
				w.log.Warn("final pod status not written", "err", err)
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// writeStatus patches pods/status with the node's view, as the kubelet's
// status manager does: a strategic merge patch guarded by the pod's UID, in
// which conditions merge by type so that conditions owned by others survive.
// Nothing is sent when the status did not change since the last write.
func (w *podWorker) writeStatus(ctx context.Context) error {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	if w.gone {
		return nil
	}
	pod, st := w.status()
	patch, err := statusPatch(w.uid, st)
	if err != nil {
		return err
	}
	if bytes.Equal(patch, w.lastPatch) {
		return nil
	}
	_, err = w.p.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		if isGone(err) {
			// Deleted, or replaced by another pod of the same name.
			w.gone = true
			return nil
		}
		return fmt.Errorf("patch status of pod %s: %w", w.key, err)
	}
	w.lastPatch = patch
	return nil
}

// statusPatch renders the status patch: every field the node owns, with
// explicit nulls for cleared reason and message.
func statusPatch(uid types.UID, st corev1.PodStatus) ([]byte, error) {
	raw, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	for _, k := range []string{"reason", "message"} {
		if _, ok := m[k]; !ok {
			m[k] = nil
		}
	}
	for _, k := range []string{"initContainerStatuses", "containerStatuses"} {
		if _, ok := m[k]; !ok {
			m[k] = []any{}
		}
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": uid},
		"status":   m,
	})
}
