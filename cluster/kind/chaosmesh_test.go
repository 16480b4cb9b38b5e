package kind

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The pinned version in Go must be the one build/chaosmesh/go.mod builds, or the kind
// back end would look for a build that `make chaosmesh` never makes.
func TestChaosMeshVersionMatchesBuild(t *testing.T) {
	data, err := os.ReadFile("../../build/chaosmesh/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "require github.com/chaos-mesh/chaos-mesh "+ChaosMeshVersion+"\n") {
		t.Errorf("build/chaosmesh/go.mod does not require github.com/chaos-mesh/chaos-mesh %s (ChaosMeshVersion)", ChaosMeshVersion)
	}
}

const chart = `---
# Source: chaos-mesh/templates/controller-manager-deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: chaos-controller-manager
spec:
  template:
    spec:
      containers:
      - name: chaos-mesh
        image: gauntlet.dev/chaos-mesh/chaos-mesh:abc
        env:
        - name: POD_FAILURE_PAUSE_IMAGE
          value: gcr.io/google-containers/pause:latest
        - name: NAMESPACE
          valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
---
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: chaos-daemon
spec:
  template:
    spec:
      containers:
      - name: chaos-daemon
        image: gauntlet.dev/chaos-mesh/chaos-daemon:abc
`

func writeBuild(t *testing.T, manifest string, bins ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "chaos-mesh.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, b := range bins {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadChaosMesh(t *testing.T) {
	dir := writeBuild(t, chart, "chaos-controller-manager", "chaos-daemon")
	cm, err := loadChaosMesh(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.objs) != 2 || cm.controllerImage != "gauntlet.dev/chaos-mesh/chaos-mesh:abc" || cm.daemonImage != "gauntlet.dev/chaos-mesh/chaos-daemon:abc" {
		t.Errorf("loaded %d objects, images %q %q", len(cm.objs), cm.controllerImage, cm.daemonImage)
	}

	if _, err := loadChaosMesh(t.TempDir()); !errors.Is(err, ErrNoChaosMesh) || !strings.Contains(err.Error(), "make chaosmesh") {
		t.Errorf("an empty folder: %v, want ErrNoChaosMesh naming make chaosmesh", err)
	}
	if _, err := loadChaosMesh(writeBuild(t, chart, "chaos-daemon")); !errors.Is(err, ErrNoChaosMesh) || !strings.Contains(err.Error(), "chaos-controller-manager") {
		t.Errorf("no controller binary: %v, want ErrNoChaosMesh naming it", err)
	}
	if _, err := loadChaosMesh(writeBuild(t, "kind: Deployment\n", "chaos-controller-manager", "chaos-daemon")); err == nil || !strings.Contains(err.Error(), "apiVersion") {
		t.Errorf("an object without apiVersion: %v", err)
	}
	noDaemon := strings.Split(chart, "---\n---\n")[0]
	if _, err := loadChaosMesh(writeBuild(t, noDaemon, "chaos-controller-manager", "chaos-daemon")); err == nil || !strings.Contains(err.Error(), "rebuild") {
		t.Errorf("a chart without the daemon: %v, want an error telling to rebuild", err)
	}
}

func TestSetEnv(t *testing.T) {
	objs, err := decodeManifest([]byte(chart))
	if err != nil {
		t.Fatal(err)
	}
	d := objs[0]
	setEnv(d, "POD_FAILURE_PAUSE_IMAGE", "registry.k8s.io/pause:3.10.1")
	setEnv(d, "NAMESPACE", "x")
	setEnv(d, "NEW", "y")
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	env := cs[0].(map[string]any)["env"].([]any)
	got := map[string]any{}
	for _, e := range env {
		em := e.(map[string]any)
		if _, ok := em["valueFrom"]; ok {
			t.Errorf("%v keeps valueFrom beside its value", em)
		}
		got[em["name"].(string)] = em["value"]
	}
	if len(env) != 3 || got["POD_FAILURE_PAUSE_IMAGE"] != "registry.k8s.io/pause:3.10.1" || got["NAMESPACE"] != "x" || got["NEW"] != "y" {
		t.Errorf("env = %v", env)
	}
}

// The nsexec stand-in must turn chaos-daemon's command lines into nsenter's.
func TestNsexecScript(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "nsexec")
	if err := os.WriteFile(script, nsexecScript, 0o755); err != nil {
		t.Fatal(err)
	}
	// A fake nsenter that prints its arguments.
	if err := os.WriteFile(filepath.Join(dir, "nsenter"), []byte("#!/bin/sh\necho \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "/proc/7/ns/net", "--", "iptables", "-w", "-N", "X"}, "--net=/proc/7/ns/net -- iptables -w -N X"},
		{[]string{"-p", "/proc/7/ns/pid", "-m", "/proc/7/ns/mnt", "--", "cat", "a b"}, "--pid=/proc/7/ns/pid --mount=/proc/7/ns/mnt -- cat a b"},
		{[]string{"-l", "-m", "/proc/7/ns/mnt", "-n", "/proc/7/ns/net", "--", "tc"}, "--net=/proc/7/ns/net -- tc"},
	} {
		cmd := exec.Command(script, tc.args...)
		cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != tc.want {
			t.Errorf("nsexec %v = %q (%v), want %q", tc.args, out, err, tc.want)
		}
	}
	if out, err := exec.Command(script, "-x", "--", "true").CombinedOutput(); err == nil || !strings.Contains(string(out), "unknown option -x") {
		t.Errorf("nsexec -x = %q (%v), want an error naming the option", out, err)
	}
}
