package storage

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// fixture is a provisioner whose caches have synced from a fake API holding
// the default StorageClass and the given objects; tests drive its sync
// functions directly.
type fixture struct {
	p      *provisioner
	client *fake.Clientset
	events *record.FakeRecorder
	root   string
}

func newFixture(t *testing.T, capacity string, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	if err := EnsureClass(context.Background(), client); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Root: t.TempDir(), Log: slog.New(slog.DiscardHandler)}
	if capacity != "" {
		cfg.Capacity = resource.MustParse(capacity)
	}
	fx := &fixture{p: &provisioner{cfg: cfg, client: client}, client: client, events: record.NewFakeRecorder(100), root: cfg.Root}
	f := informers.NewSharedInformerFactory(client, 0)
	synced := fx.p.setup(f, fx.events)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); f.Shutdown(); fx.p.queue.ShutDown() })
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		t.Fatal("caches did not sync")
	}
	return fx
}

// sync provisions for claim ns/name.
func (fx *fixture) sync(t *testing.T, name string) error {
	t.Helper()
	return fx.p.syncClaim(context.Background(), "ns", name)
}

// volume returns claim ns/name's volume, nil when there is none.
func (fx *fixture) volume(t *testing.T, name string) *corev1.PersistentVolume {
	t.Helper()
	pv, err := fx.client.CoreV1().PersistentVolumes().Get(context.Background(), "pvc-uid-"+name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

// creates counts the PersistentVolumes created through the fake API.
func (fx *fixture) creates() int {
	n := 0
	for _, a := range fx.client.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "persistentvolumes" {
			n++
		}
	}
	return n
}

// waitCached waits until the provisioner's cache holds volume name.
func (fx *fixture) waitCached(t *testing.T, name string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := fx.p.volumes.Get(name); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cache never saw volume %s", name)
		}
	}
}

// drain returns the events recorded so far.
func (fx *fixture) drain() []string {
	var out []string
	for {
		select {
		case e := <-fx.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// pending is claim ns/name of the default class as kube-controller-manager
// and the scheduler leave it for the provisioner: marked with the
// provisioner's name, its node selected.
func pending(name, size string) *corev1.PersistentVolumeClaim {
	c := claim(size)
	c.Name, c.UID, c.ResourceVersion = name, types.UID("uid-"+name), "7"
	class := ClassName
	c.Spec.StorageClassName = &class
	c.Annotations = map[string]string{annStorageProvisioner: ProvisionerName, annSelectedNode: "node-1"}
	return c
}

func otherClass(name, provisioner string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
}

func TestProvisionClaim(t *testing.T) {
	fx := newFixture(t, "", pending("data", "2Gi"))
	if err := fx.sync(t, "data"); err != nil {
		t.Fatal(err)
	}
	pv := fx.volume(t, "data")
	if pv == nil {
		t.Fatal("no volume pvc-uid-data")
	}
	dir := filepath.Join(fx.root, "pvc-uid-data")
	want := corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "ns", Name: "data", UID: "uid-data", ResourceVersion: "7"}
	if pv.Spec.ClaimRef == nil || *pv.Spec.ClaimRef != want {
		t.Errorf("claimRef %+v, want %+v", pv.Spec.ClaimRef, want)
	}
	if pv.Annotations[annProvisionedBy] != ProvisionerName || pv.Spec.StorageClassName != ClassName ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || storageOf(pv.Spec.Capacity) != "2Gi" ||
		len(pv.Spec.AccessModes) != 1 || pv.Spec.AccessModes[0] != corev1.ReadWriteOnce {
		t.Errorf("volume: annotations %v, spec %+v", pv.Annotations, pv.Spec)
	}
	if hp := pv.Spec.HostPath; hp == nil || hp.Path != dir || hp.Type == nil || *hp.Type != corev1.HostPathDirectoryOrCreate {
		t.Errorf("hostPath %+v, want %s (DirectoryOrCreate)", hp, dir)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o777 {
		t.Errorf("volume folder: %v, %v; want a folder with mode 0777", st, err)
	}
	evs := fx.drain()
	if len(evs) != 2 || evs[0] != `Normal Provisioning External provisioner is provisioning volume for claim "ns/data"` ||
		evs[1] != "Normal ProvisioningSucceeded Successfully provisioned volume pvc-uid-data" {
		t.Errorf("events %q", evs)
	}

	// Again, before and after the cache has seen the volume: nothing to do.
	again := func() {
		t.Helper()
		if err := fx.sync(t, "data"); err != nil {
			t.Fatal(err)
		}
		if n := fx.creates(); n != 1 {
			t.Fatalf("%d volumes created, want 1", n)
		}
		if evs := fx.drain(); len(evs) != 0 {
			t.Fatalf("events on a later pass: %q", evs)
		}
	}
	again()
	fx.waitCached(t, "pvc-uid-data")
	again()
}

func TestProvisionLeavesAlone(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*corev1.PersistentVolumeClaim)
	}{
		{"no node selected yet (WaitForFirstConsumer)", func(c *corev1.PersistentVolumeClaim) { delete(c.Annotations, annSelectedNode) }},
		{"not marked for a provisioner", func(c *corev1.PersistentVolumeClaim) { delete(c.Annotations, annStorageProvisioner) }},
		{"marked for another provisioner", func(c *corev1.PersistentVolumeClaim) {
			class := "other"
			c.Spec.StorageClassName = &class
			c.Annotations[annStorageProvisioner] = "example.com/other"
		}},
		{"of another provisioner's class", func(c *corev1.PersistentVolumeClaim) {
			class := "other"
			c.Spec.StorageClassName = &class
		}},
		{"bound already", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-elsewhere" }},
		{"being deleted", func(c *corev1.PersistentVolumeClaim) {
			c.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			c.Finalizers = []string{"kubernetes.io/pvc-protection"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := pending("data", "1Gi")
			tc.change(c)
			fx := newFixture(t, "", c, otherClass("other", "example.com/other", storagev1.VolumeBindingImmediate))
			if err := fx.sync(t, "data"); err != nil {
				t.Fatal(err)
			}
			if n := fx.creates(); n != 0 {
				t.Errorf("%d volumes created, want none", n)
			}
			if evs := fx.drain(); len(evs) != 0 {
				t.Errorf("events %q, want none", evs)
			}
			if ents, _ := os.ReadDir(fx.root); len(ents) != 0 {
				t.Errorf("folders created: %v", ents)
			}
		})
	}

	t.Run("an Immediate class needs no node", func(t *testing.T) {
		c := pending("data", "1Gi")
		class := "fast"
		c.Spec.StorageClassName = &class
		delete(c.Annotations, annSelectedNode)
		fx := newFixture(t, "", c, otherClass("fast", ProvisionerName, storagev1.VolumeBindingImmediate))
		if err := fx.sync(t, "data"); err != nil {
			t.Fatal(err)
		}
		if pv := fx.volume(t, "data"); pv == nil || pv.Spec.StorageClassName != "fast" {
			t.Errorf("volume %+v, want one of class fast", pv)
		}
	})
}

// volumeAt is a volume at path of claim ns/<claim>, in phase.
func volumeAt(name, path, claim string, phase corev1.PersistentVolumePhase) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Annotations: map[string]string{annProvisionedBy: ProvisionerName}},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "ns", Name: claim, UID: types.UID("uid-" + claim)},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: phase},
	}
}

func TestDeleteVolume(t *testing.T) {
	outside := t.TempDir()
	for _, tc := range []struct {
		name    string
		deleted bool
		make    func(root string) *corev1.PersistentVolume
	}{
		{"released", true, func(root string) *corev1.PersistentVolume {
			// The binder's phase decides, whatever the cache says of the claim.
			return volumeAt("pv", filepath.Join(root, "pv"), "data", corev1.VolumeReleased)
		}},
		{"its claim is gone", true, func(root string) *corev1.PersistentVolume {
			return volumeAt("pv", filepath.Join(root, "pv"), "gone", corev1.VolumeBound)
		}},
		{"its claim exists", false, func(root string) *corev1.PersistentVolume {
			return volumeAt("pv", filepath.Join(root, "pv"), "data", corev1.VolumeBound)
		}},
		{"another provisioner's", false, func(root string) *corev1.PersistentVolume {
			pv := volumeAt("pv", filepath.Join(root, "pv"), "gone", corev1.VolumeReleased)
			pv.Annotations[annProvisionedBy] = "example.com/other"
			return pv
		}},
		{"outside the volume folder", false, func(string) *corev1.PersistentVolume {
			return volumeAt("pv", filepath.Join(outside, "pv"), "gone", corev1.VolumeReleased)
		}},
		{"reclaim policy Retain", false, func(root string) *corev1.PersistentVolume {
			pv := volumeAt("pv", filepath.Join(root, "pv"), "gone", corev1.VolumeReleased)
			pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
			return pv
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The fixture's root is only known once it exists: add the volume after.
			fx := newFixture(t, "", pending("data", "1Gi"))
			pv := tc.make(fx.root)
			if err := os.MkdirAll(pv.Spec.HostPath.Path, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(pv.Spec.HostPath.Path, "f"), []byte("data"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := fx.client.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			fx.waitCached(t, "pv")
			if err := fx.p.syncVolume(context.Background(), "pv"); err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(pv.Spec.HostPath.Path)
			_, getErr := fx.client.CoreV1().PersistentVolumes().Get(context.Background(), "pv", metav1.GetOptions{})
			if tc.deleted {
				if !os.IsNotExist(statErr) || !apierrors.IsNotFound(getErr) {
					t.Errorf("folder: %v, volume: %v; want both gone", statErr, getErr)
				}
				return
			}
			if statErr != nil || getErr != nil {
				t.Errorf("folder: %v, volume: %v; want both untouched", statErr, getErr)
			}
		})
	}
}

// TestRunProvisionsAndDeletes runs the provisioner's loop against a fake API:
// a claim gets its volume and the events, and the volume goes once released.
func TestRunProvisionsAndDeletes(t *testing.T) {
	client := fake.NewClientset()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := EnsureClass(ctx, client); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, client, Config{Root: root, Capacity: resource.MustParse("10Gi")}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	if _, err := client.CoreV1().PersistentVolumeClaims("ns").Create(ctx, pending("data", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			select {
			case <-ctx.Done():
				t.Fatalf("never %s", what)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	var pv *corev1.PersistentVolume
	wait("provisioned", func() bool {
		var err error
		pv, err = client.CoreV1().PersistentVolumes().Get(ctx, "pvc-uid-data", metav1.GetOptions{})
		return err == nil
	})
	wait("recorded the events", func() bool {
		evs, err := client.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "PersistentVolumeClaim" && e.Source.Component == ProvisionerName {
				seen[e.Reason] = true
			}
		}
		return seen["Provisioning"] && seen["ProvisioningSucceeded"]
	})

	// As the volume binder does once the claim is deleted.
	if err := client.CoreV1().PersistentVolumeClaims("ns").Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pv.Status.Phase = corev1.VolumeReleased
	if _, err := client.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("deleted the volume", func() bool {
		_, err := client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		_, statErr := os.Stat(pv.Spec.HostPath.Path)
		return apierrors.IsNotFound(err) && os.IsNotExist(statErr)
	})
}

// TestRunDoesNotWriteClientGoScheme starts and stops provisioners over and
// over, as a process hosting several clusters does, while other goroutines
// read client-go's global scheme as every client and informer does. A write
// to that scheme on construction, as sig-storage-lib-external-provisioner's
// controller makes, aborts the test binary with "concurrent map read and map
// write".
func TestRunDoesNotWriteClientGoScheme(t *testing.T) {
	deadline := time.Now().Add(time.Second)
	stop := make(chan struct{})
	var readers, runners sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, _, err := scheme.Scheme.ObjectKinds(&corev1.Pod{}); err != nil {
					t.Error(err)
					return
				}
				if _, err := scheme.ParameterCodec.EncodeParameters(&metav1.ListOptions{}, corev1.SchemeGroupVersion); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var runs atomic.Int64
	for range 8 {
		root := t.TempDir()
		runners.Go(func() {
			for time.Now().Before(deadline) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				err := Run(ctx, fake.NewClientset(), Config{Root: root})
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				runs.Add(1)
			}
		})
	}
	runners.Wait()
	close(stop)
	readers.Wait()
	if runs.Load() < 8 {
		t.Errorf("only %d runs", runs.Load())
	}
	t.Logf("%d runs alongside the scheme's readers", runs.Load())
}
