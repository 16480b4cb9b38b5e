package kubelet

import (
	"context"
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
