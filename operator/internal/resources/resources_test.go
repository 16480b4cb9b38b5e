package resources

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gauntlet-dev/gauntlet/internal/testing/golden"
	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/conf"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func ptr[T any](v T) *T { return &v }

func minimal() *v1alpha1.ValkeyCluster {
	return &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "apps", UID: "0b7c1e9e-1111-4222-8333-944455556666"},
	}
}

func full() *v1alpha1.ValkeyCluster {
	c := minimal()
	c.Name = "store"
	c.Spec = v1alpha1.ValkeyClusterSpec{
		Replicas:         5,
		Image:            "valkey/valkey:8.0.2",
		ImagePullPolicy:  corev1.PullIfNotPresent,
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
		Config:           map[string]string{"maxmemory": "100mb", "databases": "32", "maxmemory-policy": "allkeys-lru"},
		Persistence: v1alpha1.PersistenceSpec{Enabled: true, Size: resource.MustParse("5Gi"), StorageClassName: ptr("fast"),
			WhenScaled: v1alpha1.PVCDelete, WhenDeleted: v1alpha1.PVCRetain},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
		},
		Exporter: v1alpha1.ExporterSpec{Enabled: true, Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}}},
		Scheduling: v1alpha1.SchedulingSpec{
			NodeSelector:      map[string]string{"pool": "cache"},
			Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "cache", Effect: corev1.TaintEffectNoSchedule}},
			PriorityClassName: "high",
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway}},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{
					TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelInstance: "store"}}}}}}},
		},
		PodDisruptionBudget:           v1alpha1.PodDisruptionBudgetSpec{MaxUnavailable: ptr(int32(1))},
		TLS:                           v1alpha1.TLSSpec{Enabled: true, SecretName: "store-tls"},
		Auth:                          v1alpha1.AuthSpec{PasswordSecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "store-pass"}, Key: "password"}},
		Service:                       v1alpha1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Annotations: map[string]string{"example.com/team": "payments"}},
		TerminationGracePeriodSeconds: ptr(int64(60)),
	}
	return c
}

func desired(c *v1alpha1.ValkeyCluster) Desired {
	c = c.Defaulted()
	applied := conf.Applied{}.WithRestartChanges(conf.Diff(c.Spec.Config, conf.Applied{}, c.Spec.Image))
	if v, ok := c.Spec.Config["maxmemory"]; ok {
		applied = applied.WithLive("maxmemory", v, "104857600", "0")
	}
	return Desired{Cluster: c, Applied: applied, Password: `s3cr"et`, Replicas: c.Spec.Replicas}
}

func checkGolden(t *testing.T, name string, obj any) {
	t.Helper()
	got, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", name+".yaml"), got, *update)
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *v1alpha1.ValkeyCluster
	}{{"minimal", minimal()}, {"full", full()}} {
		t.Run(tc.name, func(t *testing.T) {
			d := desired(tc.c)
			checkGolden(t, tc.name+"/headless-service", MakeHeadlessService(d))
			checkGolden(t, tc.name+"/client-service", MakeClientService(d))
			checkGolden(t, tc.name+"/configmap", MakeConfigMap(d))
			checkGolden(t, tc.name+"/statefulset", MakeStatefulSet(d))
			if WantPDB(d) {
				checkGolden(t, tc.name+"/pdb", MakePDB(d))
			}
			if d.Cluster.Spec.Auth.PasswordSecret != nil {
				checkGolden(t, tc.name+"/auth-secret", MakeAuthSecret(d))
			}
		})
	}
}

// serverDefaults applies a representative set of what the API server defaults
// on objects it stores, to check that Update does not fight them.
func serverDefaultsSTS(s *appsv1.StatefulSet) {
	s.ResourceVersion = "42"
	s.Generation = 3
	s.Spec.RevisionHistoryLimit = ptr(int32(10))
	s.Spec.MinReadySeconds = 0
	t := &s.Spec.Template.Spec
	t.RestartPolicy = corev1.RestartPolicyAlways
	t.DNSPolicy = corev1.DNSClusterFirst
	t.SchedulerName = "default-scheduler"
	for i := range t.Containers {
		c := &t.Containers[i]
		c.TerminationMessagePath = "/dev/termination-log"
		if c.ImagePullPolicy == "" {
			c.ImagePullPolicy = corev1.PullIfNotPresent
		}
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
			if p != nil && p.SuccessThreshold == 0 {
				p.SuccessThreshold = 1
			}
		}
		if c.TerminationMessagePolicy == "" {
			c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
		}
	}
	for i := range t.Volumes {
		if cm := t.Volumes[i].ConfigMap; cm != nil && cm.DefaultMode == nil {
			cm.DefaultMode = ptr(int32(0o644))
		}
		if ed := t.Volumes[i].EmptyDir; ed != nil && ed.Medium == "" {
			ed.Medium = corev1.StorageMediumDefault
		}
	}
	for i := range s.Spec.VolumeClaimTemplates {
		vm := corev1.PersistentVolumeFilesystem
		s.Spec.VolumeClaimTemplates[i].Spec.VolumeMode = &vm
		s.Spec.VolumeClaimTemplates[i].Status.Phase = corev1.ClaimPending
	}
	// Quantities come back canonicalized.
	for i := range t.Containers {
		for k, q := range t.Containers[i].Resources.Requests {
			t.Containers[i].Resources.Requests[k] = resource.MustParse(q.String())
		}
	}
}

func serverDefaultsSvc(s *corev1.Service) {
	s.ResourceVersion = "7"
	if s.Spec.ClusterIP == "" {
		s.Spec.ClusterIP = "10.96.0.12"
		s.Spec.ClusterIPs = []string{"10.96.0.12"}
	}
	s.Spec.SessionAffinity = corev1.ServiceAffinityNone
	s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	pol := corev1.IPFamilyPolicySingleStack
	s.Spec.IPFamilyPolicy = &pol
	s.Spec.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyCluster)
	if s.Spec.Type == corev1.ServiceTypeNodePort {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		for i := range s.Spec.Ports {
			s.Spec.Ports[i].NodePort = int32(30000 + i)
		}
	}
}

// TestUpdateIsStable: Update of what Make built, after the server's defaults,
// changes nothing — otherwise the operator would update forever.
func TestUpdateIsStable(t *testing.T) {
	for _, c := range []*v1alpha1.ValkeyCluster{minimal(), full()} {
		d := desired(c)
		sts := MakeStatefulSet(d)
		serverDefaultsSTS(sts)
		if _, changed := UpdateStatefulSet(d, sts); changed {
			t.Errorf("%s: StatefulSet update after server defaults reports a change", c.Name)
		}
		if re, why := StatefulSetNeedsRecreate(d, sts); re {
			t.Errorf("%s: StatefulSet needs recreate: %s", c.Name, why)
		}
		for _, mk := range []func(Desired) *corev1.Service{MakeHeadlessService, MakeClientService} {
			svc := mk(d)
			serverDefaultsSvc(svc)
			upd := UpdateClientService
			if svc.Name == HeadlessServiceName(d.Cluster) {
				upd = UpdateHeadlessService
			}
			if _, changed := upd(d, svc); changed {
				t.Errorf("%s: Service %s update after server defaults reports a change", c.Name, svc.Name)
			}
		}
		if _, changed := UpdateConfigMap(d, MakeConfigMap(d)); changed {
			t.Errorf("%s: ConfigMap update reports a change", c.Name)
		}
		if _, changed := UpdateAuthSecret(d, MakeAuthSecret(d)); changed {
			t.Errorf("%s: Secret update reports a change", c.Name)
		}
		if _, changed := UpdatePDB(d, MakePDB(d)); changed {
			t.Errorf("%s: PDB update reports a change", c.Name)
		}
	}
}

func TestUpdateAppliesChanges(t *testing.T) {
	d := desired(full())
	cur := MakeStatefulSet(d)
	serverDefaultsSTS(cur)
	curSvc := MakeClientService(d)
	serverDefaultsSvc(curSvc)
	curSvc.Annotations["other.example.com/keep"] = "yes" // someone else's

	d2 := d
	d2.Cluster = d.Cluster.DeepCopy()
	d2.Cluster.Spec.Image = "valkey/valkey:8.1.1"
	d2.Cluster.Spec.Service.Annotations = map[string]string{"example.com/new": "1"}
	d2.Replicas = 4
	d2.Applied = d.Applied.WithRestartChanges(conf.Change{Restart: map[string]string{"databases": "64"}})

	out, changed := UpdateStatefulSet(d2, cur)
	if !changed {
		t.Fatal("image, replicas and restart-only config change: no change reported")
	}
	if *out.Spec.Replicas != 4 || out.Spec.Template.Spec.Containers[0].Image != "valkey/valkey:8.1.1" {
		t.Fatalf("not applied: replicas %d image %s", *out.Spec.Replicas, out.Spec.Template.Spec.Containers[0].Image)
	}
	if out.Spec.Template.Annotations[AnnotationRestartHash] == cur.Spec.Template.Annotations[AnnotationRestartHash] {
		t.Fatal("restart-only config change did not change the template's restart hash")
	}
	if out.ResourceVersion != "42" || *out.Spec.RevisionHistoryLimit != 10 {
		t.Fatal("server fields lost")
	}
	// Only replicas changes: the template is kept as the server has it.
	d3 := d
	d3.Replicas = 4
	out, changed = UpdateStatefulSet(d3, cur)
	if !changed || out.Spec.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Fatal("replica change replaced the defaulted template or was not reported")
	}

	svc, changed := UpdateClientService(d2, curSvc)
	if !changed {
		t.Fatal("annotation change not reported")
	}
	if _, ok := svc.Annotations["example.com/team"]; ok {
		t.Error("annotation removed from spec.service is still there")
	}
	if svc.Annotations["example.com/new"] != "1" || svc.Annotations["other.example.com/keep"] != "yes" {
		t.Errorf("annotations: %v", svc.Annotations)
	}
	if svc.Spec.ClusterIP != "10.96.0.12" || svc.Spec.Ports[0].NodePort != 30000 {
		t.Errorf("allocated clusterIP/nodePort lost: %+v", svc.Spec)
	}
	// NodePort -> ClusterIP clears node ports.
	d4 := d
	d4.Cluster = d.Cluster.DeepCopy()
	d4.Cluster.Spec.Service.Type = corev1.ServiceTypeClusterIP
	svc, _ = UpdateClientService(d4, curSvc)
	if svc.Spec.Ports[0].NodePort != 0 || svc.Spec.ExternalTrafficPolicy != "" {
		t.Errorf("node ports kept on ClusterIP: %+v", svc.Spec)
	}
	// A claim size change needs a recreate.
	d5 := d
	d5.Cluster = d.Cluster.DeepCopy()
	d5.Cluster.Spec.Persistence.Size = resource.MustParse("10Gi")
	if re, _ := StatefulSetNeedsRecreate(d5, cur); !re {
		t.Error("claim size change does not need a recreate")
	}
}

func TestPDB(t *testing.T) {
	for _, tc := range []struct {
		replicas int32
		set      *int32
		want     int32
		enabled  bool
	}{{1, nil, 1, false}, {2, nil, 1, true}, {3, nil, 1, true}, {5, nil, 2, true}, {7, nil, 3, true}, {5, ptr(int32(0)), 0, true}} {
		c := minimal()
		c.Spec.Replicas = tc.replicas
		c.Spec.PodDisruptionBudget.MaxUnavailable = tc.set
		d := desired(c)
		if WantPDB(d) != tc.enabled || PDBMaxUnavailable(d) != tc.want {
			t.Errorf("replicas %d set %v: want %v/%d, got %v/%d", tc.replicas, tc.set, tc.enabled, tc.want, WantPDB(d), PDBMaxUnavailable(d))
		}
	}
	c := minimal()
	c.Spec.PodDisruptionBudget.Enabled = ptr(false)
	if WantPDB(desired(c)) {
		t.Error("disabled PDB wanted")
	}
}

func TestOwnership(t *testing.T) {
	d := desired(full())
	objs := []metav1.Object{MakeHeadlessService(d), MakeClientService(d), MakeConfigMap(d), MakeAuthSecret(d), MakeStatefulSet(d), MakePDB(d)}
	for _, o := range objs {
		if !IsOwnedBy(o, d.Cluster) {
			t.Errorf("%s has no controller reference to the cluster", o.GetName())
		}
		if o.GetNamespace() != "apps" {
			t.Errorf("%s in namespace %q", o.GetName(), o.GetNamespace())
		}
	}
	// Adopting an object that lacks the reference.
	cm := MakeConfigMap(d)
	cm.OwnerReferences = nil
	out, changed := UpdateConfigMap(d, cm)
	if !changed || !IsOwnedBy(out, d.Cluster) {
		t.Error("Update does not restore the owner reference")
	}
}

// TestRestrictedProfile checks the default security contexts against the
// "restricted" Pod Security Standard's rules.
func TestRestrictedProfile(t *testing.T) {
	sts := MakeStatefulSet(desired(full()))
	ps := sts.Spec.Template.Spec.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Fatalf("pod security context: %+v", ps)
	}
	if ps.RunAsUser == nil || *ps.RunAsUser == 0 {
		t.Fatal("runAsUser must be non-zero")
	}
	for _, c := range sts.Spec.Template.Spec.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: allowPrivilegeEscalation must be false", c.Name)
		}
		if sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) > 0 {
			t.Errorf("%s: capabilities must drop ALL", c.Name)
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Errorf("%s: privileged", c.Name)
		}
	}
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("hostPath volume %s", v.Name)
		}
	}
}

// TestGoldenBackupPods pins the pods a backup and a restore run beside the
// full cluster (its image, contexts, pull secrets, scheduling, secrets).
func TestGoldenBackupPods(t *testing.T) {
	c := full().Defaulted()
	b := &v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: c.Namespace, UID: "5a1b2c3d-1111-4222-8333-944455556666"},
		Spec: v1alpha1.ValkeyBackupSpec{ClusterName: c.Name}}
	checkGolden(t, "backup/snapshot-pod", MakeBackupPod(b, c, "10.244.1.7"))
	b.Status = v1alpha1.ValkeyBackupStatus{PersistentVolumeClaim: BackupClaimName(b), Path: BackupFile,
		Checksum: ResultPrefix + strings.Repeat("ab", 32)}
	checkGolden(t, "backup/restore-pod", MakeRestorePod(c, b))
}
