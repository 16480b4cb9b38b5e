package machine

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/conf"
	"github.com/gauntlet-dev/gauntlet/operator/internal/resources"
)

const ns, name = "apps", "cache"

func newCluster(replicas int32) *v1alpha1.ValkeyCluster {
	return &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Generation: 1},
		Spec:       v1alpha1.ValkeyClusterSpec{Replicas: replicas},
	}
}

func worldWith(c *v1alpha1.ValkeyCluster) *fakeWorld {
	w := newFakeWorld()
	w.add(c)
	return w
}

func converged(t *testing.T, replicas int32) *fakeWorld {
	t.Helper()
	w := worldWith(newCluster(replicas))
	if err := w.converge(ns, name, 40); err != nil {
		t.Fatal(err)
	}
	if errs := w.topologyErrors(ns, name); len(errs) > 0 {
		t.Fatalf("topology after bootstrap: %v", errs)
	}
	return w
}

func primaryPod(w *fakeWorld) *corev1.Pod {
	for _, p := range w.pods(ns) {
		if p.Labels[v1alpha1.LabelRole] == v1alpha1.RolePrimary {
			return p
		}
	}
	return nil
}

func hasEvent(w *fakeWorld, reason string) bool {
	for _, e := range w.events {
		if e.Reason == reason {
			return true
		}
	}
	return false
}

func TestBootstrap(t *testing.T) {
	w := converged(t, 3)
	c := w.cr(ns, name)
	if c.Status.Primary != "cache-0" || c.Status.ReadyReplicas != 3 || c.Status.ObservedGeneration != 1 {
		t.Fatalf("status: %+v", c.Status)
	}
	for _, cond := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionPrimaryAvailable, v1alpha1.ConditionConfigApplied} {
		if !meta.IsStatusConditionTrue(c.Status.Conditions, cond) {
			t.Errorf("condition %s not True: %+v", cond, c.Status.Conditions)
		}
	}
	if !hasEvent(w, "PrimaryElected") {
		t.Error("no PrimaryElected event")
	}
	for _, key := range []string{"Service/apps/cache", "Service/apps/cache-headless", "ConfigMap/apps/cache-config", "StatefulSet/apps/cache", "PodDisruptionBudget/apps/cache"} {
		o, ok := w.objs[key]
		if !ok {
			t.Errorf("%s missing", key)
			continue
		}
		if !resources.IsOwnedBy(o, c) {
			t.Errorf("%s not owned by the cluster", key)
		}
	}
	if len(w.violations) > 0 {
		t.Fatalf("invariant violations: %v", w.violations)
	}
}

// scenario is a change applied to a converged (or empty) world; check verifies
// the end state after convergence.
type scenario struct {
	name     string
	start    func(t *testing.T) *fakeWorld
	change   func(w *fakeWorld) // applied before the first pass
	after    func(w *fakeWorld) // applied after the first (possibly crashed) pass
	check    func(t *testing.T, w *fakeWorld)
	maxRound int
}

func scenarios() []scenario {
	var acked []string
	keysIntact := func(t *testing.T, w *fakeWorld) {
		for _, p := range w.pods(ns) {
			s := w.servers[p.Status.PodIP]
			for _, k := range append(slices.Clip(acked), w.acked...) {
				if _, ok := s.data[k]; !ok {
					t.Fatalf("acknowledged key %s lost on %s", k, p.Name)
				}
			}
		}
	}
	return []scenario{
		{
			name:   "bootstrap",
			start:  func(t *testing.T) *fakeWorld { return worldWith(newCluster(3)) },
			change: func(w *fakeWorld) {},
			check: func(t *testing.T, w *fakeWorld) {
				if w.cr(ns, name).Status.Primary != "cache-0" {
					t.Fatalf("primary %s", w.cr(ns, name).Status.Primary)
				}
			},
		},
		{
			name:  "failover after the primary dies",
			start: func(t *testing.T) *fakeWorld { return converged(t, 3) },
			change: func(w *fakeWorld) {
				acked = w.write(ns, "k", 20)
				w.servers[primaryPod(w).Status.PodIP].up = false
			},
			after: func(w *fakeWorld) {
				// The kubelet restarts the container: an empty, fenced server.
				for _, p := range w.pods(ns) {
					if s := w.servers[p.Status.PodIP]; !s.up {
						w.servers[p.Status.PodIP] = &fakeServer{ip: s.ip, pod: s.pod, up: true, role: "slave", masterHost: conf.FenceHost,
							masterPort: conf.FencePort, data: map[string]string{}, runid: s.runid + "r", priority: 100, config: copyData(knownConfig), replid: "restarted"}
					}
				}
			},
			check: func(t *testing.T, w *fakeWorld) {
				keysIntact(t, w)
				c := w.cr(ns, name)
				if c.Status.Primary == "cache-0" || c.Status.LastFailoverTime == nil || !strings.Contains(c.Status.LastFailoverReason, "cache-0") {
					t.Fatalf("failover not recorded: %+v", c.Status)
				}
			},
		},
		{
			// A grace-0 deletion: the pod object is gone at once and the
			// StatefulSet replaces it, while the old process still runs, takes
			// writes from clients connected to its address, and its replicas
			// acknowledge them. No acknowledged write may be lost.
			name:  "primary deleted with grace 0 whose process lives on is fenced",
			start: func(t *testing.T) *fakeWorld { return converged(t, 3) },
			change: func(w *fakeWorld) {
				acked = w.write(ns, "g", 5)
				p := primaryPod(w)
				ghost := p.Status.PodIP
				delete(w.objs, keyOf(p))
				w.beforePass = func(w *fakeWorld) {
					if k := fmt.Sprintf("ghost-%d", w.now.Unix()); w.writeTo(ghost, k) {
						w.acked = append(w.acked, k)
					}
				}
				w.beforePass(w) // a client still connected to the old address
			},
			check: func(t *testing.T, w *fakeWorld) {
				keysIntact(t, w)
				if len(w.acked) == 0 {
					t.Fatal("the ghost never had a write acknowledged: the scenario tests nothing")
				}
				podIPs := map[string]bool{}
				for _, p := range w.pods(ns) {
					podIPs[p.Status.PodIP] = true
				}
				for ip, s := range w.servers {
					if !podIPs[ip] && s.up && s.role == "master" {
						t.Fatalf("the old process at %s still serves as a master", ip)
					}
				}
			},
		},
		{
			// Auth switched on for servers that run without a password: a pod the
			// roll restarts requires the password and sends it to the primary, so the
			// password must be live everywhere first (it once stuck the roll: Redis
			// refuses AUTH <password> from a replica when the primary has none).
			name:  "auth switched on for a serving cluster",
			start: func(t *testing.T) *fakeWorld { return converged(t, 3) },
			change: func(w *fakeWorld) {
				acked = w.write(ns, "a", 5)
				w.add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pw", Namespace: ns}, Data: map[string][]byte{"password": []byte("s3cret")}})
				w.setSpec(ns, name, func(s *v1alpha1.ValkeyClusterSpec) {
					s.Auth.PasswordSecret = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "pw"}, Key: "password"}
				})
			},
			check: func(t *testing.T, w *fakeWorld) {
				keysIntact(t, w)
				for _, p := range w.pods(ns) {
					s := w.servers[p.Status.PodIP]
					if s.password != "s3cret" || s.config["masterauth"] != "s3cret" {
						t.Fatalf("%s: password %q masterauth %q", p.Name, s.password, s.config["masterauth"])
					}
				}
				if got := resources.PasswordFromAuthSecret(w.objs["Secret/apps/cache-auth"].(*corev1.Secret)); got != "s3cret" {
					t.Fatalf("auth Secret holds %q", got)
				}
			},
		},
		{
			name:  "restarted empty primary never feeds replicas with data",
			start: func(t *testing.T) *fakeWorld { return converged(t, 3) },
			change: func(w *fakeWorld) {
				acked = w.write(ns, "r", 10)
				p := primaryPod(w)
				s := w.servers[p.Status.PodIP]
				// Restarted in place, quicker than any health check could notice.
				w.servers[p.Status.PodIP] = &fakeServer{ip: s.ip, pod: s.pod, up: true, role: "slave", masterHost: conf.FenceHost,
					masterPort: conf.FencePort, data: map[string]string{}, runid: s.runid + "r", priority: 100, config: copyData(knownConfig), replid: "restarted"}
			},
			check: keysIntact,
		},
		{
			name:  "scale out",
			start: func(t *testing.T) *fakeWorld { return converged(t, 3) },
			change: func(w *fakeWorld) {
				acked = w.write(ns, "s", 5)
				w.setSpec(ns, name, func(s *v1alpha1.ValkeyClusterSpec) { s.Replicas = 5 })
			},
			check: keysIntact,
		},
		{
			name:  "scale in removes the primary's ordinal only after a switchover",
			start: func(t *testing.T) *fakeWorld { return converged(t, 3) },
			change: func(w *fakeWorld) {
				acked = w.write(ns, "i", 5)
				// Make cache-2 the primary first.
				w.servers[primaryPod(w).Status.PodIP].up = false
				for _, p := range w.pods(ns) {
					if p.Name == "cache-2" {
						w.servers[p.Status.PodIP].priority = 1
					}
				}
				w.runPass(ns, name, 0)
				for _, p := range w.pods(ns) {
					if s := w.servers[p.Status.PodIP]; !s.up {
						w.servers[p.Status.PodIP] = &fakeServer{ip: s.ip, pod: s.pod, up: true, role: "slave", masterHost: conf.FenceHost,
							masterPort: conf.FencePort, data: map[string]string{}, runid: s.runid + "r", priority: 100, config: copyData(knownConfig), replid: "restarted"}
					}
				}
				if err := w.converge(ns, name, 30); err != nil {
					panic(err)
				}
				if w.cr(ns, name).Status.Primary != "cache-2" {
					panic("setup: primary is " + w.cr(ns, name).Status.Primary)
				}
				w.setSpec(ns, name, func(s *v1alpha1.ValkeyClusterSpec) { s.Replicas = 2 })
			},
			check: func(t *testing.T, w *fakeWorld) {
				keysIntact(t, w)
				if p := w.cr(ns, name).Status.Primary; p == "cache-2" {
					t.Fatal("primary still cache-2")
				}
			},
		},
		{
			name:  "live config change, unknown and invalid keys rejected",
			start: func(t *testing.T) *fakeWorld { return converged(t, 3) },
			change: func(w *fakeWorld) {
				w.setSpec(ns, name, func(s *v1alpha1.ValkeyClusterSpec) {
					s.Config = map[string]string{"maxmemory": "100mb", "no-such-key": "1", "maxmemory-policy": "bogus", "timeout": "30"}
				})
			},
			check: func(t *testing.T, w *fakeWorld) {
				for _, p := range w.pods(ns) {
					s := w.servers[p.Status.PodIP]
					if s.config["maxmemory"] != "100000000" || s.config["timeout"] != "30" || s.config["maxmemory-policy"] != "noeviction" {
						t.Fatalf("%s config %v", p.Name, s.config)
					}
				}
				cm := w.objs["ConfigMap/apps/cache-config"].(*corev1.ConfigMap)
				file := cm.Data[conf.ConfigMapKey]
				if !strings.Contains(file, "maxmemory 100mb") || strings.Contains(file, "no-such-key") || strings.Contains(file, "bogus") {
					t.Fatalf("valkey.conf:\n%s", file)
				}
				cond := meta.FindStatusCondition(w.cr(ns, name).Status.Conditions, v1alpha1.ConditionConfigApplied)
				if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "ConfigRejected" ||
					!strings.Contains(cond.Message, "no-such-key") || !strings.Contains(cond.Message, "maxmemory-policy") {
					t.Fatalf("ConfigApplied: %+v", cond)
				}
			},
		},
		{
			name:  "restart-only config rolls replicas first, then switches over",
			start: func(t *testing.T) *fakeWorld { return converged(t, 3) },
			change: func(w *fakeWorld) {
				acked = w.write(ns, "c", 5)
				w.setSpec(ns, name, func(s *v1alpha1.ValkeyClusterSpec) { s.Config = map[string]string{"databases": "32"} })
			},
			check: func(t *testing.T, w *fakeWorld) {
				keysIntact(t, w)
				for _, p := range w.pods(ns) {
					if s := w.servers[p.Status.PodIP]; s.config["databases"] != "32" {
						t.Fatalf("%s databases=%s", p.Name, s.config["databases"])
					}
				}
				if !hasEvent(w, "RollingRestart") {
					t.Fatal("no RollingRestart event")
				}
				if !meta.IsStatusConditionTrue(w.cr(ns, name).Status.Conditions, v1alpha1.ConditionConfigApplied) {
					t.Fatalf("ConfigApplied not True: %+v", w.cr(ns, name).Status.Conditions)
				}
			},
			maxRound: 80,
		},
	}
}

// TestScenariosConverge runs each scenario without crash.
func TestScenariosConverge(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			w := sc.start(t)
			sc.change(w)
			w.runPass(ns, name, 0)
			if sc.after != nil {
				sc.after(w)
			}
			rounds := sc.maxRound
			if rounds == 0 {
				rounds = 40
			}
			if err := w.converge(ns, name, rounds); err != nil {
				t.Fatal(err)
			}
			if errs := w.topologyErrors(ns, name); len(errs) > 0 {
				t.Fatalf("topology: %v", errs)
			}
			if len(w.violations) > 0 {
				t.Fatalf("invariant violations: %v", w.violations)
			}
			sc.check(t, w)
		})
	}
}

// TestCrashAtEveryStep crashes the operator after every request of every pass
// that a scenario's convergence takes (the in-memory state is lost; the next
// pass starts from a fresh read) and checks that it still converges to a correct
// state, without ever breaking an invariant (at most one primary label, and only
// on a server that reports role master).
func TestCrashAtEveryStep(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			rounds := sc.maxRound
			if rounds == 0 {
				rounds = 40
			}
			base := sc.start(t)
			sc.change(base)
			ref := base.clone()
			ref.runPass(ns, name, 0)
			if sc.after != nil {
				sc.after(ref)
			}
			perPass, err := ref.convergeCrash(ns, name, rounds, noCrash)
			if err != nil {
				t.Fatal(err)
			}
			// The first pass (with the scenario's event after it), then every later one.
			first, _ := base.clone().runPass(ns, name, 0)
			points := 0
			for k := 1; k <= first; k++ {
				w := base.clone()
				w.runPass(ns, name, k)
				if sc.after != nil {
					sc.after(w)
				}
				checkConverges(t, sc, w, rounds, noCrash, fmt.Sprintf("first pass, after request %d of %d", k, first))
				points++
			}
			for j, n := range perPass {
				for k := 1; k <= n; k++ {
					w := base.clone()
					w.runPass(ns, name, 0)
					if sc.after != nil {
						sc.after(w)
					}
					checkConverges(t, sc, w, rounds+5, crashPoint{pass: j, after: k}, fmt.Sprintf("pass %d, after request %d of %d", j+1, k, n))
					points++
				}
			}
			t.Logf("%d crash points over %d passes, all converged", points, len(perPass)+1)
		})
	}
}

func checkConverges(t *testing.T, sc scenario, w *fakeWorld, rounds int, crash crashPoint, where string) {
	t.Helper()
	if _, err := w.convergeCrash(ns, name, rounds, crash); err != nil {
		t.Fatalf("crash at %s: %v", where, err)
	}
	if errs := w.topologyErrors(ns, name); len(errs) > 0 {
		t.Fatalf("crash at %s: topology %v", where, errs)
	}
	if len(w.violations) > 0 {
		t.Fatalf("crash at %s: invariant violations %v", where, w.violations)
	}
	sc.check(t, w)
}

// TestSteadyStateIsReadOnly: a converged cluster's pass only reads (Anvil's
// eventually-stable reconciliation: no update loop).
func TestSteadyStateIsReadOnly(t *testing.T) {
	w := converged(t, 3)
	for i := 0; i < 3; i++ {
		n, req := mutatingCount(w, ns, name)
		if n != 0 {
			t.Fatalf("pass %d mutated %d times (%s)", i, n, req.Why)
		}
		if req.RequeueAfter != Resync {
			t.Fatalf("converged requeue %v, want %v", req.RequeueAfter, Resync)
		}
	}
}

func TestDeletedClusterDoesNothing(t *testing.T) {
	c := newCluster(3)
	now := metav1.Now()
	c.DeletionTimestamp = &now
	_, req := Step(Input{Cluster: c}, Response{}, State{})
	if req.Kind != Done {
		t.Fatalf("request %v for a deleted cluster", req.Kind)
	}
}

func TestMissingPasswordSecretBlocks(t *testing.T) {
	c := newCluster(3)
	c.Spec.Auth.PasswordSecret = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "pw"}, Key: "password"}
	w := worldWith(c)
	w.runPass(ns, name, 0)
	got := w.cr(ns, name)
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	if cond == nil || cond.Reason != "PasswordSecretMissing" {
		t.Fatalf("Ready condition: %+v", cond)
	}
	if _, ok := w.objs["StatefulSet/apps/cache"]; ok {
		t.Fatal("StatefulSet created without the password")
	}
	// With the Secret, the cluster comes up with a password.
	w.add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pw", Namespace: ns}, Data: map[string][]byte{"password": []byte("hunter2")}})
	if err := w.converge(ns, name, 40); err != nil {
		t.Fatal(err)
	}
	for _, p := range w.pods(ns) {
		if w.servers[p.Status.PodIP].password != "hunter2" {
			t.Fatalf("%s has no password", p.Name)
		}
	}
	// Rotation: the new password reaches every server, the Secret follows.
	w.objs["Secret/apps/pw"].(*corev1.Secret).Data["password"] = []byte("correct-horse")
	if err := w.converge(ns, name, 40); err != nil {
		t.Fatal(err)
	}
	for _, p := range w.pods(ns) {
		s := w.servers[p.Status.PodIP]
		if s.password != "correct-horse" || s.extraPassword != "" || s.config["masterauth"] != "correct-horse" {
			t.Fatalf("%s after rotation: password %q extra %q masterauth %q", p.Name, s.password, s.extraPassword, s.config["masterauth"])
		}
	}
	if got := resources.PasswordFromAuthSecret(w.objs["Secret/apps/cache-auth"].(*corev1.Secret)); got != "correct-horse" {
		t.Fatalf("auth Secret holds %q", got)
	}
	// Auth off: the servers stop requiring the password before the operator
	// forgets it, and the auth Secret goes (it once stuck the operator, whose
	// connections without a password were refused forever).
	w.setSpec(ns, name, func(s *v1alpha1.ValkeyClusterSpec) { s.Auth.PasswordSecret = nil })
	if err := w.converge(ns, name, 40); err != nil {
		t.Fatal(err)
	}
	for _, p := range w.pods(ns) {
		s := w.servers[p.Status.PodIP]
		if s.password != "" || s.extraPassword != "" || s.config["masterauth"] != "" {
			t.Fatalf("%s after auth off: password %q extra %q masterauth %q", p.Name, s.password, s.extraPassword, s.config["masterauth"])
		}
	}
	if _, ok := w.objs["Secret/apps/cache-auth"]; ok {
		t.Fatal("the auth Secret outlived auth")
	}
}

func TestForeignObjectBlocks(t *testing.T) {
	c := newCluster(1)
	w := worldWith(c)
	other := true
	w.add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "x", Controller: &other}}}})
	w.runPass(ns, name, 0)
	cond := meta.FindStatusCondition(w.cr(ns, name).Status.Conditions, v1alpha1.ConditionReady)
	if cond == nil || cond.Reason != "ResourceConflict" {
		t.Fatalf("Ready condition: %+v", cond)
	}
}

func TestClaimGrowthRecreatesStatefulSet(t *testing.T) {
	c := newCluster(2)
	c.Spec.Persistence.Enabled = true
	w := worldWith(c)
	if err := w.converge(ns, name, 40); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("data-cache-%d", i), Namespace: ns, Labels: v1alpha1.SelectorLabels(name)}}
		pvc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resourceMust("1Gi")}
		w.add(pvc)
	}
	w.setSpec(ns, name, func(s *v1alpha1.ValkeyClusterSpec) { s.Persistence.Size = resourceMust("5Gi") })
	if err := w.converge(ns, name, 40); err != nil {
		t.Fatal(err)
	}
	sts := w.objs["StatefulSet/apps/cache"].(*appsv1.StatefulSet)
	if q := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "5Gi" {
		t.Fatalf("claim template %s", q.String())
	}
	for i := 0; i < 2; i++ {
		pvc := w.objs[fmt.Sprintf("PersistentVolumeClaim/apps/data-cache-%d", i)].(*corev1.PersistentVolumeClaim)
		if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "5Gi" {
			t.Fatalf("%s requests %s", pvc.Name, q.String())
		}
	}
	if !hasEvent(w, "StatefulSetRecreated") {
		t.Fatal("no StatefulSetRecreated event")
	}
}

var _ client.Object = &corev1.Pod{}

func resourceMust(s string) resource.Quantity { return resource.MustParse(s) }

func (w *fakeWorld) backupPass(ns, name string) Request {
	in := BackupInput{Now: w.now}
	if o, ok := w.objs["ValkeyBackup/"+ns+"/"+name]; ok {
		in.Backup = o.DeepCopyObject().(*v1alpha1.ValkeyBackup)
	}
	var s State
	var resp Response
	for {
		var req Request
		s, req = StepBackup(in, resp, s)
		w.events = append(w.events, req.Events...)
		if req.Kind == Done {
			return req
		}
		resp = w.exec(req)
	}
}

func TestBackupAndRestore(t *testing.T) {
	w := converged(t, 3)
	acked := w.write(ns, "b", 25)
	w.add(&v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns, Generation: 1},
		Spec: v1alpha1.ValkeyBackupSpec{ClusterName: name}})
	for i := 0; i < 5; i++ {
		w.backupPass(ns, "nightly")
	}
	b := w.objs["ValkeyBackup/apps/nightly"].(*v1alpha1.ValkeyBackup)
	if b.Status.Phase != v1alpha1.BackupCompleted || b.Status.Size == 0 || !strings.HasPrefix(b.Status.Checksum, "sha256:") ||
		b.Status.Path != "dump.rdb" || b.Status.SourcePod != "cache-0" || b.Status.CompletionTime == nil {
		t.Fatalf("backup status: %+v", b.Status)
	}
	if _, ok := w.objs["Pod/apps/nightly-snapshot"]; ok {
		t.Fatal("snapshot pod not cleaned up")
	}
	if _, ok := w.objs["PersistentVolumeClaim/apps/nightly-backup"]; !ok {
		t.Fatal("backup claim missing")
	}

	// Restore into a new cluster.
	r := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "copy", Namespace: ns, Generation: 1},
		Spec: v1alpha1.ValkeyClusterSpec{Replicas: 2, RestoreFrom: &v1alpha1.RestoreSource{BackupName: "nightly"}}}
	w.add(r)
	if err := w.converge(ns, "copy", 40); err != nil {
		t.Fatal(err)
	}
	c := w.cr(ns, "copy")
	if !meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionRestored) {
		t.Fatalf("Restored: %+v", c.Status.Conditions)
	}
	for _, p := range w.pods(ns) {
		if !strings.HasPrefix(p.Name, "copy-") {
			continue
		}
		s := w.servers[p.Status.PodIP]
		for _, k := range acked {
			if _, ok := s.data[k]; !ok {
				t.Fatalf("%s lacks restored key %s", p.Name, k)
			}
		}
	}
	if _, ok := w.objs["Pod/apps/copy-restore"]; ok {
		t.Fatal("restore pod not cleaned up")
	}
}

// TestReadyOnlyWhenApplied: between a restart-only change and the end of its
// roll, the cluster never reports Ready for the new generation.
func TestReadyOnlyWhenApplied(t *testing.T) {
	w := converged(t, 3)
	w.setSpec(ns, name, func(s *v1alpha1.ValkeyClusterSpec) { s.Config = map[string]string{"databases": "32"} })
	for i := 0; i < 60; i++ {
		w.pass(ns, name, 0)
		c := w.cr(ns, name)
		if c.Status.Phase == v1alpha1.PhaseReady && c.Status.ObservedGeneration == c.Generation {
			for _, p := range w.pods(ns) {
				if s := w.servers[p.Status.PodIP]; s == nil || s.config["databases"] != "32" {
					t.Fatalf("round %d: Ready for generation %d while %s runs databases=%v", i, c.Generation, p.Name, s)
				}
			}
			return
		}
		w.settle(ns)
		w.now = w.now.Add(time.Second)
	}
	t.Fatal("never Ready")
}

// A spec that renders a StatefulSet the API server refuses (its core
// validation is stricter than the CRD's schema) blocks the cluster with
// SpecRejected and the server's message; once the spec is fixed, the cluster
// converges.
func TestRefusedStatefulSetBlocks(t *testing.T) {
	c := newCluster(3)
	w := worldWith(c)
	if err := w.converge(ns, name, 40); err != nil {
		t.Fatal(err)
	}
	w.refuse = func(req Request) error {
		sts, ok := req.Object.(*appsv1.StatefulSet)
		if !ok {
			return nil
		}
		if sc := sts.Spec.Template.Spec.Containers[0].SecurityContext; sc != nil && sc.AppArmorProfile != nil &&
			sc.AppArmorProfile.Type == corev1.AppArmorProfileTypeLocalhost && sc.AppArmorProfile.LocalhostProfile == nil {
			return apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, sts.Name, field.ErrorList{
				field.Required(field.NewPath("spec", "template", "spec", "containers").Index(0).Child("securityContext", "appArmorProfile", "localhostProfile"), "must be set when AppArmor type is Localhost")})
		}
		return nil
	}
	w.setSpec(ns, name, func(s *v1alpha1.ValkeyClusterSpec) {
		s.ContainerSecurityContext = &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost}}
	})
	w.runPass(ns, name, 0)
	cond := meta.FindStatusCondition(w.cr(ns, name).Status.Conditions, v1alpha1.ConditionReady)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "SpecRejected" || !strings.Contains(cond.Message, "localhostProfile") {
		t.Fatalf("Ready condition after a refused StatefulSet update: %+v", cond)
	}
	w.setSpec(ns, name, func(s *v1alpha1.ValkeyClusterSpec) { s.ContainerSecurityContext = nil })
	if err := w.converge(ns, name, 40); err != nil {
		t.Fatal(err)
	}
}
