// Package e2ekit holds what the kind back end's end-to-end tests and its node
// image's share: waiting for a condition, telling why pods are not ready,
// sending a build's progress to the test log, and reading a built image's layer.
package e2ekit

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
)

// AllReady reports whether every pod runs and is Ready, and otherwise names the
// first that is not and why (its phase and waiting containers, or its Ready
// condition's message).
func AllReady(pods []corev1.Pod) (bool, string) {
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning {
			why := string(p.Status.Phase)
			for _, c := range p.Status.ContainerStatuses {
				if c.State.Waiting != nil {
					why += " " + c.State.Waiting.Reason + ": " + c.State.Waiting.Message
				}
			}
			return false, p.Name + " " + why
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
				return false, p.Name + " not Ready: " + c.Message
			}
		}
	}
	return true, ""
}

// WaitFor polls f every second until it holds, and fails t with what, limit and
// f's last reason when it has not held within limit.
func WaitFor(t *testing.T, what string, limit time.Duration, f func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var why string
	for time.Now().Before(deadline) {
		var ok bool
		if ok, why = f(); ok {
			return
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("%s: not within %s: %s", what, limit, why)
}

// ErrString is err's message, or "none yet" for nil (a reason for WaitFor).
func ErrString(err error) string {
	if err == nil {
		return "none yet"
	}
	return err.Error()
}

// Writer sends what is written to it to t's log, a line per write.
type Writer struct{ T *testing.T }

// Write logs p without its trailing newlines.
func (w Writer) Write(p []byte) (int, error) {
	w.T.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// LayerEntry is a file, folder or link of an image layer.
type LayerEntry struct {
	Header *tar.Header
	Data   []byte
}

// OnlyLayer returns the entries of img's one layer in order; the test fails
// unless img has exactly one layer that reads.
func OnlyLayer(t testing.TB, img v1.Image) []LayerEntry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out []LayerEntry
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, LayerEntry{Header: h, Data: b})
	}
}
