package kubelet

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corev1listers "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/container"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
)

// testProvider is a provider over a fake clientset holding objs.
func testProvider(t *testing.T, objs ...runtime.Object) (*provider, *fake.Clientset) {
	t.Helper()
	client := fake.NewSimpleClientset(objs...)
	var tokenReqs []*authenticationv1.TokenRequest
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		tokenReqs = append(tokenReqs, tr)
		exp := int64(3600)
		if tr.Spec.ExpirationSeconds != nil {
			exp = *tr.Spec.ExpirationSeconds
		}
		tr.Status = authenticationv1.TokenRequestStatus{
			Token:               "token-for-" + tr.Spec.BoundObjectRef.Name + "-" + strings.Join(tr.Spec.Audiences, ","),
			ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Duration(exp) * time.Second)),
		}
		return true, tr, nil
	})
	svcIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		if s, ok := o.(*corev1.Service); ok {
			_ = svcIdx.Add(s)
		}
	}
	p := &provider{
		ctx:      context.Background(),
		nodeName: "node-a",
		client:   client,
		log:      slog.New(slog.DiscardHandler),
		recorder: record.NewFakeRecorder(100),
		services: corev1listers.NewServiceLister(svcIdx),
		cfg:      Config{NodeName: "node-a", Address: netip.MustParseAddr("10.9.0.1")},
	}
	return p, client
}

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "app", UID: "uid-web-0", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeName:           "node-a",
			ServiceAccountName: "web",
			Containers:         []corev1.Container{{Name: "main", Image: "busybox"}},
		},
	}
}

func readLink(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

func modeOf(t *testing.T, p string) os.FileMode {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode()
}

func TestManagedVolumes(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf", Namespace: "app"},
		Data: map[string]string{"valkey.conf": "port 6379\n", "other": "x"}, BinaryData: map[string][]byte{"bin": {0, 1}}}
	root := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "app"}, Data: map[string]string{"ca.crt": "CA"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pw", Namespace: "app"}, Data: map[string][]byte{"password": []byte("s3cret")}}
	p, client := testProvider(t, cm, root, sec)
	pod := testPod()
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}},
		{Name: "items", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "conf"},
			Items:                []corev1.KeyToPath{{Key: "valkey.conf", Path: "etc/valkey.conf", Mode: ptr.To(int32(0o600))}},
			DefaultMode:          ptr.To(int32(0o640)),
		}}},
		{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "pw", DefaultMode: ptr.To(int32(0o400))}}},
		{Name: "opt", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "absent", Optional: ptr.To(true)}}},
		{Name: "down", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		}}}},
		{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To(int32(0o644)),
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(int64(3607))}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			},
		}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
	}
	vm := &volumeManager{p: p, dir: filepath.Join(t.TempDir(), "volumes"), tokens: map[string]cachedToken{}}
	ec := envContext{pod: pod}
	mounts, err := vm.setupAll(context.Background(), ec)
	if err != nil {
		t.Fatalf("setupAll: %v", err)
	}
	d := func(v string) string { return mounts[v].path }
	if got := readLink(t, filepath.Join(d("conf"), "valkey.conf")); got != "port 6379\n" {
		t.Errorf("configMap key = %q", got)
	}
	if got := readLink(t, filepath.Join(d("conf"), "bin")); got != "\x00\x01" {
		t.Errorf("binaryData = %q", got)
	}
	if m := modeOf(t, filepath.Join(d("conf"), "other")).Perm(); m != 0o644 {
		t.Errorf("default mode = %o", m)
	}
	if _, err := os.Stat(filepath.Join(d("items"), "other")); !os.IsNotExist(err) {
		t.Errorf("items must select keys: other exists (%v)", err)
	}
	if m := modeOf(t, filepath.Join(d("items"), "etc", "valkey.conf")).Perm(); m != 0o600 {
		t.Errorf("item mode = %o", m)
	}
	if got := readLink(t, filepath.Join(d("secret"), "password")); got != "s3cret" {
		t.Errorf("secret = %q", got)
	}
	if m := modeOf(t, filepath.Join(d("secret"), "password")).Perm(); m != 0o400 {
		t.Errorf("secret mode = %o", m)
	}
	entries, _ := os.ReadDir(d("opt"))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "..") {
			t.Errorf("optional missing secret: want an empty volume, got %v", entries)
		}
	}
	if got := readLink(t, filepath.Join(d("down"), "labels")); got != `app="web"` {
		t.Errorf("labels = %q", got)
	}
	sa := d("kube-api-access-x")
	if got := readLink(t, filepath.Join(sa, "token")); got != "token-for-web-0-" {
		t.Errorf("token = %q", got)
	}
	if got := readLink(t, filepath.Join(sa, "ca.crt")); got != "CA" {
		t.Errorf("ca.crt = %q", got)
	}
	if got := readLink(t, filepath.Join(sa, "namespace")); got != "app" {
		t.Errorf("namespace = %q", got)
	}
	if !mounts["kube-api-access-x"].readOnly || mounts["scratch"].readOnly {
		t.Errorf("read-only flags: %+v", mounts)
	}
	if m := modeOf(t, d("scratch")).Perm(); m != 0o777 {
		t.Errorf("emptyDir mode = %o", m)
	}
	// The token request is bound to the pod.
	var found bool
	for _, a := range client.Actions() {
		if a.GetVerb() == "create" && a.GetSubresource() == "token" {
			tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest)
			found = tr.Spec.BoundObjectRef != nil && tr.Spec.BoundObjectRef.UID == pod.UID && *tr.Spec.ExpirationSeconds == 3607
		}
	}
	if !found {
		t.Error("no token request bound to the pod")
	}

	// Atomic update: change the configMap and a label, refresh.
	oldTarget, _ := os.Readlink(filepath.Join(d("conf"), "..data"))
	cm2 := cm.DeepCopy()
	cm2.Data["valkey.conf"] = "port 6380\n"
	delete(cm2.Data, "other")
	if _, err := client.CoreV1().ConfigMaps("app").Update(context.Background(), cm2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod.Labels["role"] = "primary"
	for i := range pod.Spec.Volumes {
		if err := vm.refreshManaged(context.Background(), ec, &pod.Spec.Volumes[i]); err != nil && pod.Spec.Volumes[i].EmptyDir == nil {
			t.Fatalf("refresh %s: %v", pod.Spec.Volumes[i].Name, err)
		}
	}
	if got := readLink(t, filepath.Join(d("conf"), "valkey.conf")); got != "port 6380\n" {
		t.Errorf("updated configMap key = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(d("conf"), "other")); !os.IsNotExist(err) {
		t.Errorf("removed key still visible: %v", err)
	}
	newTarget, _ := os.Readlink(filepath.Join(d("conf"), "..data"))
	if newTarget == oldTarget {
		t.Error("..data did not move to a new folder")
	}
	if _, err := os.Stat(filepath.Join(d("conf"), oldTarget)); !os.IsNotExist(err) {
		t.Errorf("old data folder not removed: %v", err)
	}
	if got := readLink(t, filepath.Join(d("down"), "labels")); got != "app=\"web\"\nrole=\"primary\"" {
		t.Errorf("refreshed labels = %q", got)
	}
	// Unchanged content is not rewritten; the token is reused.
	before, _ := os.Readlink(filepath.Join(sa, "..data"))
	for i := range pod.Spec.Volumes {
		_ = vm.refreshManaged(context.Background(), ec, &pod.Spec.Volumes[i])
	}
	after, _ := os.Readlink(filepath.Join(sa, "..data"))
	if before != after {
		t.Error("an unchanged projected volume was rewritten")
	}
	tokens := 0
	for _, a := range client.Actions() {
		if a.GetSubresource() == "token" {
			tokens++
		}
	}
	if tokens != 1 {
		t.Errorf("%d token requests, want 1 (tokens are reused until 80%% of their life)", tokens)
	}
}

func TestVolumeErrors(t *testing.T) {
	p, _ := testProvider(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf", Namespace: "app"}, Data: map[string]string{"a": "1"}})
	tests := []struct {
		name string
		vol  corev1.VolumeSource
		want string
	}{
		{"missing configmap", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}}}, `configmap "nope" not found`},
		{"missing key", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"},
			Items: []corev1.KeyToPath{{Key: "b", Path: "b"}}}}, `non-existent key "b"`},
		{"escaping path", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"},
			Items: []corev1.KeyToPath{{Key: "a", Path: "x/../../a"}}}}, "must not contain '..'"},
		{"unbound claim", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}, `persistentvolumeclaim "data" not found`},
		{"unsupported", corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "x", Path: "/"}}, "not supported"},
		{"hostPath type", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/nonexistent/gauntlet", Type: ptr.To(corev1.HostPathDirectory)}}, "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: tt.vol}}
			vm := &volumeManager{p: p, dir: filepath.Join(t.TempDir(), "volumes"), tokens: map[string]cachedToken{}}
			_, err := vm.setupAll(context.Background(), envContext{pod: pod})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `volume "v"`) {
				t.Fatalf("error = %v, want one naming the volume and containing %q", err, tt.want)
			}
		})
	}
}

func TestClaimVolume(t *testing.T) {
	dataDir := t.TempDir()
	localDir := t.TempDir()
	pvc := func(name, pv string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pv}, Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
	}
	objs := []runtime.Object{
		pvc("bound", "pv-host", corev1.ClaimBound),
		pvc("local", "pv-local", corev1.ClaimBound),
		pvc("pending", "", corev1.ClaimPending),
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-host"}, Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dataDir}}}},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-local"}, Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: localDir}}}},
	}
	p, client := testProvider(t, objs...)
	pod := testPod()
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To(int64(4242))}
	vm := &volumeManager{p: p, dir: t.TempDir(), tokens: map[string]cachedToken{}}
	src, err := vm.claimVolume(context.Background(), pod, "bound", true, "")
	if err != nil || src.path != dataDir || !src.readOnly {
		t.Fatalf("bound claim = %+v, %v", src, err)
	}
	if st := modeOf(t, dataDir); st&os.ModeSetgid != 0 {
		t.Error("fsGroup must not be applied to hostPath PVs (the kubelet does not)")
	}
	if _, err := vm.claimVolume(context.Background(), pod, "pending", false, ""); err == nil || !strings.Contains(err.Error(), "not bound") {
		t.Fatalf("pending claim error = %v", err)
	}
	if os.Geteuid() == 0 {
		if err := os.WriteFile(filepath.Join(localDir, "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := vm.claimVolume(context.Background(), pod, "local", false, ""); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(localDir)
		if st.Mode()&os.ModeSetgid == 0 || st.Sys().(*syscall.Stat_t).Gid != 4242 {
			t.Errorf("local PV root not set up for fsGroup: %v gid %d", st.Mode(), st.Sys().(*syscall.Stat_t).Gid)
		}
		fst, _ := os.Stat(filepath.Join(localDir, "f"))
		if fst.Mode().Perm() != 0o660 || fst.Sys().(*syscall.Stat_t).Gid != 4242 {
			t.Errorf("file in local PV: %v gid %d", fst.Mode(), fst.Sys().(*syscall.Stat_t).Gid)
		}
	}
	// Ephemeral volumes need the claim to be owned by the pod.
	eph := pvc("web-0-scratch", "pv-host", corev1.ClaimBound)
	eph.OwnerReferences = []metav1.OwnerReference{{UID: "someone-else"}}
	if _, err := client.CoreV1().PersistentVolumeClaims("app").Create(context.Background(), eph, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := vm.claimVolume(context.Background(), pod, "web-0-scratch", false, pod.UID); err == nil {
		t.Error("an ephemeral claim owned by another object must be refused")
	}
}

func TestSubPath(t *testing.T) {
	vol := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(vol, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		sub     string
		wantErr string
		want    string
	}{
		{sub: "data/db", want: filepath.Join(vol, "data/db")},
		{sub: "file", want: filepath.Join(vol, "file")},
		{sub: "../x", wantErr: "'..'"},
		{sub: "/abs", wantErr: "relative"},
		{sub: "escape", wantErr: "outside the volume"},
	}
	for _, tt := range tests {
		got, err := subPath(vol, tt.sub)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("subPath(%q) error = %v, want %q", tt.sub, err, tt.wantErr)
			}
			continue
		}
		realVol, _ := filepath.EvalSymlinks(vol)
		want := strings.Replace(tt.want, vol, realVol, 1)
		if err != nil || got != want {
			t.Errorf("subPath(%q) = %q, %v; want %q", tt.sub, got, err, want)
		}
	}
	if st, err := os.Stat(filepath.Join(vol, "data/db")); err != nil || !st.IsDir() {
		t.Errorf("missing subPath folder not created: %v", err)
	}
}

func TestWriteAtomicFSGroup(t *testing.T) {
	testenv.NeedRoot(t)
	dir := t.TempDir()
	gid := int64(3333)
	payload := map[string]payloadFile{"a": {data: []byte("1"), mode: 0o600}, "sub/b": {data: []byte("2"), mode: 0o644}}
	changed, err := writeAtomic(dir, payload, &gid)
	if err != nil || !changed {
		t.Fatalf("writeAtomic = %v, %v", changed, err)
	}
	st, _ := os.Stat(filepath.Join(dir, "a"))
	if st.Mode().Perm() != 0o640 || st.Sys().(*syscall.Stat_t).Gid != 3333 {
		t.Errorf("a: mode %o gid %d, want 0640 and 3333", st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Gid)
	}
	// Folders of the payload get the group and setgid (SetVolumeOwnership
	// walks the whole volume), so the group can reach sub/b.
	for _, d := range []string{dir, filepath.Join(dir, "..data/"), filepath.Join(dir, "sub/")} {
		st, _ := os.Stat(d)
		if st.Mode()&os.ModeSetgid == 0 || st.Mode().Perm()&0o050 != 0o050 || st.Sys().(*syscall.Stat_t).Gid != 3333 {
			t.Errorf("%s: mode %v gid %d, want group 3333 with r-x and setgid", d, st.Mode(), st.Sys().(*syscall.Stat_t).Gid)
		}
	}
	if st, _ := os.Stat(filepath.Join(dir, "sub", "b")); st.Mode().Perm() != 0o644 || st.Sys().(*syscall.Stat_t).Gid != 3333 {
		t.Errorf("sub/b: mode %o gid %d, want 0644 and 3333", st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Gid)
	}
	changed, err = writeAtomic(dir, payload, &gid)
	if err != nil || changed {
		t.Fatalf("rewrite of identical content: changed=%v err=%v", changed, err)
	}
}

func TestContainerEnv(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "app"}, Data: map[string]string{"MODE": "fast", "bad-key": "x", "PORT": "6379"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "app"}, Data: map[string][]byte{"pw": []byte("hunter2")}}
	kube := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}}}
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "valkey", Namespace: "app"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.3.3", Ports: []corev1.ServicePort{{Port: 6379, Protocol: corev1.ProtocolTCP}}}}
	p, _ := testProvider(t, cm, sec, kube, other)
	pod := testPod()
	c := corev1.Container{
		Name:    "main",
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}, Prefix: "CFG_"}},
		Env: []corev1.EnvVar{
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "ADDR", Value: "$(POD_IP):$(CFG_PORT)"},
			{Name: "LATER", Value: "$(DEFINED_AFTER)"},
			{Name: "DEFINED_AFTER", Value: "x"},
			{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "pw"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "nope", Optional: ptr.To(true)}}},
			{Name: "KHOST", Value: "$(KUBERNETES_SERVICE_HOST)"},
			{Name: "CFG_MODE", Value: "override"},
		},
	}
	ec := envContext{pod: pod, podIP: netip.MustParseAddr("10.244.0.9"), hostIP: netip.MustParseAddr("10.244.0.1")}
	env, err := p.containerEnv(context.Background(), ec, &c)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"CFG_MODE": "override", "CFG_PORT": "6379", "POD_IP": "10.244.0.9", "ADDR": "10.244.0.9:6379",
		"LATER": "$(DEFINED_AFTER)", "PW": "hunter2", "KHOST": "10.96.0.1",
		"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "VALKEY_SERVICE_HOST": "10.96.3.3",
	}
	for k, v := range want {
		if got, ok := env.Get(k); !ok || got != v {
			t.Errorf("%s = %q (%v), want %q", k, got, ok, v)
		}
	}
	if got, _ := env.Get("CFG_bad-key"); got != "x" {
		t.Errorf("CFG_bad-key = %q: the kubelet (1.35) keeps every envFrom key", got)
	}
	for _, k := range []string{"OPT"} {
		if _, ok := env.Get(k); ok {
			t.Errorf("%s must not be set", k)
		}
	}
	if env.keys[0] != "CFG_MODE" {
		t.Errorf("order = %v, want envFrom first", env.keys)
	}
	// Service links off: only the kubernetes Service.
	pod.Spec.EnableServiceLinks = ptr.To(false)
	env, err = p.containerEnv(context.Background(), ec, &corev1.Container{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := env.Get("VALKEY_SERVICE_HOST"); ok {
		t.Error("enableServiceLinks=false still exposes the namespace's Services")
	}
	if _, ok := env.Get("KUBERNETES_SERVICE_HOST"); !ok {
		t.Error("the kubernetes Service variables are always set")
	}
	// A missing mandatory key is a config error naming it.
	bad := corev1.Container{Name: "b", Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "nope"}}}}}
	if _, err := p.containerEnv(context.Background(), ec, &bad); err == nil || !strings.Contains(err.Error(), "couldn't find key nope") {
		t.Errorf("error = %v", err)
	}
}

// visible lists what dir shows: name → "link", "dir" or the content of a file
// reached through links, without the writer's own "..*" entries.
func visible(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if strings.HasPrefix(rel, "..") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			st, err := os.Stat(p)
			if err != nil {
				out[rel] = "dangling"
				return nil
			}
			if st.IsDir() {
				// Walk through the link, as a reader would.
				real, err := filepath.EvalSymlinks(p)
				if err != nil {
					t.Fatal(err)
				}
				sub := visible(t, real)
				out[rel] = "dir"
				for k, v := range sub {
					out[rel+"/"+k] = v
				}
				return nil
			}
			b, _ := os.ReadFile(p)
			out[rel] = string(b)
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, _ := os.ReadFile(p)
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func files(m map[string]string) map[string]payloadFile {
	out := map[string]payloadFile{}
	for k, v := range m {
		out[k] = payloadFile{data: []byte(v), mode: 0o644}
	}
	return out
}

// TestWriteAtomicUpdate: an update removes only the previous payload's names
// that left; nested mount points and other entries stay (as with the kubelet's
// atomic writer), and "..data" moves to a new folder.
func TestWriteAtomicUpdate(t *testing.T) {
	tests := []struct {
		name    string
		first   map[string]string
		others  func(t *testing.T, dir string) // entries the writer did not make
		second  map[string]string
		changed bool
		want    map[string]string
		kept    []string // "..*" entries the writer did not make
	}{
		{
			name:  "keys removed, nested mount point and unrelated entries kept",
			first: map[string]string{"a": "1", "b": "2", "dir/c": "3"},
			others: func(t *testing.T, dir string) {
				mustMkdir(t, filepath.Join(dir, "users"))
				mustWrite(t, filepath.Join(dir, "users", "alice"), "pw")
				mustWrite(t, filepath.Join(dir, "unrelated"), "u")
			},
			second:  map[string]string{"a": "1'", "dir/d": "4"},
			changed: true,
			want: map[string]string{"a": "1'", "dir": "dir", "dir/d": "4",
				"users": "dir", "users/alice": "pw", "unrelated": "u"},
		},
		{
			name:    "every key removed (an optional configMap deleted)",
			first:   map[string]string{"a": "1", "b": "2"},
			others:  func(t *testing.T, dir string) { mustMkdir(t, filepath.Join(dir, "users")) },
			second:  map[string]string{},
			changed: true,
			want:    map[string]string{"users": "dir"},
		},
		{
			name:    "a new key named like a nested mount point leaves the mount point",
			first:   map[string]string{"a": "1"},
			others:  func(t *testing.T, dir string) { mustMkdir(t, filepath.Join(dir, "users")) },
			second:  map[string]string{"a": "1", "users": "x"},
			changed: true,
			want:    map[string]string{"a": "1", "users": "dir"},
		},
		{
			name:  "a stale payload folder of a writer that died is removed",
			first: map[string]string{"a": "1"},
			others: func(t *testing.T, dir string) {
				mustMkdir(t, filepath.Join(dir, "..2020_01_02_03_04_05.123456"))
				mustMkdir(t, filepath.Join(dir, "..not-a-payload"))
			},
			second:  map[string]string{"a": "2"},
			changed: true,
			want:    map[string]string{"a": "2"},
			kept:    []string{"..not-a-payload"},
		},
		{
			name:    "unchanged content is not rewritten",
			first:   map[string]string{"a": "1", "dir/c": "3"},
			others:  func(t *testing.T, dir string) { mustMkdir(t, filepath.Join(dir, "users")) },
			second:  map[string]string{"a": "1", "dir/c": "3"},
			changed: false,
			want:    map[string]string{"a": "1", "dir": "dir", "dir/c": "3", "users": "dir"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := writeAtomic(dir, files(tt.first), nil); err != nil {
				t.Fatal(err)
			}
			oldTS, err := os.Readlink(filepath.Join(dir, dataDirName))
			if err != nil {
				t.Fatal(err)
			}
			tt.others(t, dir)
			changed, err := writeAtomic(dir, files(tt.second), nil)
			if err != nil || changed != tt.changed {
				t.Fatalf("update: changed=%v err=%v, want changed=%v", changed, err, tt.changed)
			}
			got := visible(t, dir)
			if len(got) != len(tt.want) {
				t.Errorf("visible = %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
			newTS, err := os.Readlink(filepath.Join(dir, dataDirName))
			if err != nil {
				t.Fatal(err)
			}
			if (newTS != oldTS) != tt.changed {
				t.Errorf("..data %s -> %s, changed=%v", oldTS, newTS, tt.changed)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if n := e.Name(); isTimestampDir(n) && n != newTS {
					t.Errorf("payload folder %s left beside the current %s", n, newTS)
				}
			}
			for _, k := range tt.kept {
				if _, err := os.Lstat(filepath.Join(dir, k)); err != nil {
					t.Errorf("%s, which the writer did not make, was removed: %v", k, err)
				}
			}
		})
	}
}

// TestWriteAtomicSwap: a reader never sees a missing file or a mix of two
// versions while the payload changes under it.
func TestWriteAtomicSwap(t *testing.T) {
	dir := t.TempDir()
	version := func(i int) map[string]payloadFile {
		v := strings.Repeat(string(rune('a'+i%26)), 4096)
		return files(map[string]string{"a": v, "sub/b": v})
	}
	if _, err := writeAtomic(dir, version(0), nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	errs := make(chan string, 1)
	report := func(s string) {
		select {
		case errs <- s:
		default:
		}
	}
	go func() {
		defer close(errs)
		for {
			select {
			case <-done:
				return
			default:
			}
			b, err := os.ReadFile(filepath.Join(dir, "a"))
			// The path may resolve ..data to the version the writer then
			// removes: the kubelet's atomic writer has the same window (it
			// removes the old version right after the swap), and load widens
			// it. Reads after the swap find the file; a file really missing
			// fails every try.
			for try := 0; errors.Is(err, fs.ErrNotExist) && try < 50; try++ {
				b, err = os.ReadFile(filepath.Join(dir, "a"))
			}
			if err != nil {
				report("read a: " + err.Error())
				return
			}
			if len(b) != 4096 || strings.Count(string(b), string(b[:1])) != 4096 {
				report("torn read of a")
				return
			}
			// One "..data" resolution shows one version of every file.
			ts, err := os.Readlink(filepath.Join(dir, dataDirName))
			if err != nil {
				report("..data: " + err.Error())
				return
			}
			a, errA := os.ReadFile(filepath.Join(dir, ts, "a"))
			b2, errB := os.ReadFile(filepath.Join(dir, ts, "sub", "b"))
			if errA == nil && errB == nil && string(a) != string(b2) {
				report("a and sub/b from different versions under one ..data")
				return
			}
		}
	}()
	for i := 1; i <= 200; i++ {
		if _, err := writeAtomic(dir, version(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if msg, ok := <-errs; ok {
		t.Fatal(msg)
	}
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMakeNestedMountpoints: mount points of nested volumes are created in the
// parent volume's host folder (inside its subPath), whatever the parent's
// type and even when it is mounted read-only.
func TestMakeNestedMountpoints(t *testing.T) {
	type mnt struct {
		src, target string
		ro          bool
	}
	tests := []struct {
		name    string
		setup   func(t *testing.T, root string)
		mounts  []mnt
		want    map[string]string // path under root → "dir" or "file"
		absent  []string
		wantErr string
	}{
		{
			name:   "read-only configMap with a secret beneath",
			mounts: []mnt{{"cm", "/config", true}, {"secret", "/config/users", true}},
			want:   map[string]string{"cm/users": "dir"},
		},
		{
			name:   "child listed first",
			mounts: []mnt{{"secret", "/config/users/", true}, {"cm", "/config", true}},
			want:   map[string]string{"cm/users": "dir"},
		},
		{
			name:   "deep mount point",
			mounts: []mnt{{"cm", "/config", true}, {"secret", "/config/a/b/users", false}},
			want:   map[string]string{"cm/a/b/users": "dir"},
		},
		{
			name:   "double nesting: each in its own parent",
			mounts: []mnt{{"a", "/data", true}, {"b", "/data/x", true}, {"c", "/data/x/y", false}},
			want:   map[string]string{"a/x": "dir", "b/y": "dir"},
			absent: []string{"a/x/y"},
		},
		{
			name:   "sibling with a common prefix is not nested",
			mounts: []mnt{{"a", "/config", true}, {"b", "/config-extra", false}},
			absent: []string{"a/-extra", "a/config-extra"},
		},
		{
			name:   "parent with a subPath",
			mounts: []mnt{{"pvc/sub", "/etc/app", true}, {"secret", "/etc/app/certs", true}},
			want:   map[string]string{"pvc/sub/certs": "dir"},
			absent: []string{"pvc/certs"},
		},
		{
			name:   "a file mounted beneath (subPath file)",
			mounts: []mnt{{"cm", "/config", true}, {"secret/password", "/config/password", true}},
			want:   map[string]string{"cm/password": "file"},
		},
		{
			name:   "the later of two mounts at one path is the parent",
			mounts: []mnt{{"a", "/data", false}, {"b", "/data", true}, {"c", "/data/x", false}},
			want:   map[string]string{"b/x": "dir"},
			absent: []string{"a/x"},
		},
		{
			name: "symbolic link inside the volume is followed",
			setup: func(t *testing.T, root string) {
				mustMkdir(t, filepath.Join(root, "cm", "..data", "conf.d"))
				if err := os.Symlink("..data/conf.d", filepath.Join(root, "cm", "conf.d")); err != nil {
					t.Fatal(err)
				}
			},
			mounts: []mnt{{"cm", "/config", true}, {"secret", "/config/conf.d/users", true}},
			want:   map[string]string{"cm/..data/conf.d/users": "dir"},
		},
		{
			name: "symbolic link leading out of the volume is refused",
			setup: func(t *testing.T, root string) {
				mustMkdir(t, filepath.Join(root, "outside"))
				if err := os.Symlink(filepath.Join(root, "outside"), filepath.Join(root, "cm", "out")); err != nil {
					t.Fatal(err)
				}
			},
			mounts:  []mnt{{"cm", "/config", true}, {"secret", "/config/out/users", true}},
			absent:  []string{"outside/users"},
			wantErr: "leads outside the volume",
		},
		{
			name:    "a file in the way",
			setup:   func(t *testing.T, root string) { mustWrite(t, filepath.Join(root, "cm", "a"), "x") },
			mounts:  []mnt{{"cm", "/config", true}, {"secret", "/config/a/users", true}},
			wantErr: "not a folder",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, d := range []string{"cm", "secret", "a", "b", "c", "pvc/sub"} {
				mustMkdir(t, filepath.Join(root, d))
			}
			mustWrite(t, filepath.Join(root, "secret", "password"), "pw")
			if tt.setup != nil {
				tt.setup(t, root)
			}
			var ms []container.Mount
			for _, m := range tt.mounts {
				ms = append(ms, container.Mount{Source: filepath.Join(root, m.src), Target: m.target, ReadOnly: m.ro})
			}
			err := makeNestedMountpoints(ms)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			for p, kind := range tt.want {
				st, err := os.Lstat(filepath.Join(root, p))
				if err != nil {
					t.Errorf("%s not created: %v", p, err)
					continue
				}
				if got := map[bool]string{true: "dir", false: "file"}[st.IsDir()]; got != kind {
					t.Errorf("%s is a %s, want a %s", p, got, kind)
				}
			}
			for _, p := range tt.absent {
				if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
					t.Errorf("%s created", p)
				}
			}
		})
	}
}

// TestNestedMountpointSurvivesUpdate: a secret's mount point inside a
// configMap volume survives the configMap's updates (the kubelet's writer
// removes only the configMap's own names).
func TestNestedMountpointSurvivesUpdate(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf", Namespace: "app"}, Data: map[string]string{"app.conf": "v1", "old": "x"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "users", Namespace: "app"}, Data: map[string][]byte{"alice": []byte("pw")}}
	p, client := testProvider(t, cm, sec)
	pod := testPod()
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}},
		{Name: "users", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "users"}}},
	}
	vm := &volumeManager{p: p, dir: filepath.Join(t.TempDir(), "volumes"), tokens: map[string]cachedToken{}}
	ec := envContext{pod: pod}
	mounts, err := vm.setupAll(context.Background(), ec)
	if err != nil {
		t.Fatal(err)
	}
	ms := []container.Mount{
		{Source: mounts["conf"].path, Target: "/config", ReadOnly: true},
		{Source: mounts["users"].path, Target: "/config/users", ReadOnly: true},
	}
	if err := makeNestedMountpoints(ms); err != nil {
		t.Fatal(err)
	}
	cm2 := cm.DeepCopy()
	cm2.Data = map[string]string{"app.conf": "v2"}
	if _, err := client.CoreV1().ConfigMaps("app").Update(context.Background(), cm2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := vm.refreshManaged(context.Background(), ec, &pod.Spec.Volumes[0]); err != nil {
		t.Fatal(err)
	}
	got := visible(t, mounts["conf"].path)
	want := map[string]string{"app.conf": "v2", "users": "dir"}
	if len(got) != len(want) || got["app.conf"] != "v2" || got["users"] != "dir" {
		t.Errorf("configMap volume after the update = %v, want %v", got, want)
	}
}
