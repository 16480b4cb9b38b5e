package kubelet

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestNestedVolumeMounts is what a third-party operator's pods do: a configMap
// mounted read-only at /config and a secret at /config/users. The container
// starts (the mount point is made in the configMap's folder on the host, as the
// kubelet does), sees both, keeps the secret through configMap updates (the
// atomic writer removes only the configMap's own names) and restarts after one.
// On the way: a subPath of the configMap keeps its content until the container
// restarts, and a label change reaches a downwardAPI volume.
func TestNestedVolumeMounts(t *testing.T) {
	c := clusterOrSkip(t)
	ns := c.namespace(t)
	ctx := context.Background()
	if _, err := c.admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf"},
		Data: map[string]string{"app.conf": "v1", "old.conf": "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "users"},
		Data: map[string][]byte{"alice": []byte("pw-a")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Exits when /tmp/stop appears (each instance has its own /tmp).
	pod := shellPod(ns, "nested", "while [ ! -e /tmp/stop ]; do sleep 0.2; done")
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}},
		{Name: "users", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "users"}}},
		{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "conf", MountPath: "/config", ReadOnly: true},
		{Name: "users", MountPath: "/config/users"},
		// A subPath gets no update until the container restarts.
		{Name: "conf", MountPath: "/app.conf", SubPath: "app.conf"},
		{Name: "podinfo", MountPath: "/podinfo"},
	}
	c.createPod(t, pod)
	waitFor(t, 30*time.Second, "Running", func() (bool, string) {
		p := c.getPod(t, ns, "nested")
		return p.Status.Phase == corev1.PodRunning && podReady(p), podSummary(p)
	})
	look := func() string {
		t.Helper()
		script := `cat /config/app.conf; echo; cat /config/users/alice; echo; ls /config | tr '\n' ' '; echo; touch /config/x 2>/dev/null || echo ro; cat /app.conf; echo`
		out, stderr, err := c.exec(ctx, ns, "nested", "main", "sh", "-c", script)
		if err != nil {
			t.Fatalf("exec: %v %s", err, stderr)
		}
		return out
	}
	if got, want := look(), "v1\npw-a\napp.conf old.conf users \nro\nv1\n"; got != want {
		t.Errorf("before the update:\n%s\nwant:\n%s", got, want)
	}

	cm, err := c.admin.CoreV1().ConfigMaps(ns).Get(ctx, "conf", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"app.conf": "v2"}
	if _, err := c.admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "configMap update visible", func() (bool, string) {
		out, _, err := c.exec(ctx, ns, "nested", "main", "cat", "/config/app.conf")
		return err == nil && out == "v2", out
	})
	if got, want := look(), "v2\npw-a\napp.conf users \nro\nv1\n"; got != want {
		t.Errorf("after the update:\n%s\nwant:\n%s", got, want)
	}

	// A label change reaches the downwardAPI volume.
	patch := []byte(`{"metadata":{"labels":{"role":"primary"}}}`)
	if _, err := c.admin.CoreV1().Pods(ns).Patch(ctx, "nested", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "label update visible", func() (bool, string) {
		out, _, err := c.exec(ctx, ns, "nested", "main", "cat", "/podinfo/labels")
		return err == nil && strings.Contains(out, "\nrole=\"primary\""), out
	})

	// The container restarts with both volumes after the update.
	if _, stderr, err := c.exec(ctx, ns, "nested", "main", "touch", "/tmp/stop"); err != nil {
		t.Fatalf("exec: %v %s", err, stderr)
	}
	waitFor(t, 30*time.Second, "restarted", func() (bool, string) {
		p := c.getPod(t, ns, "nested")
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount == 1 && cs[0].State.Running != nil, podSummary(p)
	})
	if got, want := look(), "v2\npw-a\napp.conf users \nro\nv2\n"; got != want {
		t.Errorf("after a restart:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(podSummary(c.getPod(t, ns, "nested")), "mount") {
		t.Errorf("mount trouble reported: %s", podSummary(c.getPod(t, ns, "nested")))
	}
}
