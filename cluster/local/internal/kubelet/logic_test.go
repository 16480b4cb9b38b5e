package kubelet

import (
	"encoding/json"
	"log/slog"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "1"},
		{"x$(A)y$(B)z", "x1ytwoz"},
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$1"},
		{"$$", "$"},
		{"$", "$"},
		{"a$b", "a$b"},
		{"$(A", "$(A"},
		{"$()", "$()"},
		{"$(EMPTY)x", "x"},
		{"--port=$(A) --name=$(B)", "--port=1 --name=two"},
	}
	for _, tt := range tests {
		if got := expand(tt.in, lookup); got != tt.want {
			t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestBackOff(t *testing.T) {
	base, max := 10*time.Second, 40*time.Second
	b := newBackOff(base, max)
	t0 := time.Unix(1000, 0)
	steps := []struct {
		finished, now time.Duration // offsets from t0
		want          time.Duration
		cur           time.Duration
	}{
		{0, 0, 0, 10 * time.Second}, // first exit: restart at once
		{5 * time.Second, 5 * time.Second, 10 * time.Second, 10 * time.Second}, // second: wait 10s
		{5 * time.Second, 15 * time.Second, 0, 20 * time.Second},               // waited: restart, doubles
		{20 * time.Second, 21 * time.Second, 19 * time.Second, 20 * time.Second},
		{20 * time.Second, 40 * time.Second, 0, 40 * time.Second},
		{45 * time.Second, 45 * time.Second, 40 * time.Second, 40 * time.Second}, // capped
		{45 * time.Second, 85 * time.Second, 0, 40 * time.Second},
		// Ran for longer than 2×max since the last restart: starts over.
		{200 * time.Second, 200 * time.Second, 0, 10 * time.Second},
	}
	for i, s := range steps {
		got := b.wait(t0.Add(s.finished), t0.Add(s.now))
		if got != s.want || b.current() != s.cur {
			t.Fatalf("step %d: wait = %v (cur %v), want %v (cur %v)", i, got, b.current(), s.want, s.cur)
		}
	}
}

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
}
func waiting(r string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: r}}
}
func exited(code int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
}

func TestPodPhase(t *testing.T) {
	app := func(s corev1.ContainerState) ctrSnapshot { return ctrSnapshot{name: "a", kind: kindApp, state: s} }
	appLast := func(s, last corev1.ContainerState) ctrSnapshot {
		return ctrSnapshot{name: "a", kind: kindApp, state: s, last: last}
	}
	initC := func(s corev1.ContainerState) ctrSnapshot { return ctrSnapshot{name: "i", kind: kindInit, state: s} }
	initLast := func(s, last corev1.ContainerState) ctrSnapshot {
		return ctrSnapshot{name: "i", kind: kindInit, state: s, last: last}
	}
	tests := []struct {
		name     string
		policy   corev1.RestartPolicy
		ctrs     []ctrSnapshot
		terminal bool
		init     bool
		want     corev1.PodPhase
	}{
		{"creating", corev1.RestartPolicyAlways, []ctrSnapshot{app(waiting(reasonContainerCreating))}, false, false, corev1.PodPending},
		{"running", corev1.RestartPolicyAlways, []ctrSnapshot{app(running())}, false, false, corev1.PodRunning},
		{"crashloop stays running", corev1.RestartPolicyAlways, []ctrSnapshot{appLast(waiting(reasonCrashLoopBackOff), exited(1))}, false, false, corev1.PodRunning},
		{"all exited ok, never", corev1.RestartPolicyNever, []ctrSnapshot{app(exited(0))}, false, false, corev1.PodSucceeded},
		{"one failed, never", corev1.RestartPolicyNever, []ctrSnapshot{app(exited(0)), app(exited(2))}, false, false, corev1.PodFailed},
		{"failed, onfailure restarts", corev1.RestartPolicyOnFailure, []ctrSnapshot{app(exited(2))}, false, false, corev1.PodRunning},
		{"ok, onfailure done", corev1.RestartPolicyOnFailure, []ctrSnapshot{app(exited(0))}, false, false, corev1.PodSucceeded},
		{"init running", corev1.RestartPolicyAlways, []ctrSnapshot{initC(running()), app(waiting(reasonPodInitializing))}, false, false, corev1.PodPending},
		{"init failed never", corev1.RestartPolicyNever, []ctrSnapshot{initC(exited(1)), app(waiting(reasonPodInitializing))}, false, false, corev1.PodFailed},
		{"init failed, backing off", corev1.RestartPolicyAlways, []ctrSnapshot{initLast(waiting(reasonCrashLoopBackOff), exited(1)), app(waiting(reasonPodInitializing))}, false, false, corev1.PodPending},
		{"init done, app running", corev1.RestartPolicyAlways, []ctrSnapshot{initC(exited(0)), app(running())}, false, true, corev1.PodRunning},
		{"deleted always all ok", corev1.RestartPolicyAlways, []ctrSnapshot{app(exited(0))}, true, true, corev1.PodSucceeded},
		{"deleted always killed", corev1.RestartPolicyAlways, []ctrSnapshot{app(exited(137))}, true, true, corev1.PodFailed},
		{"sidecar pending", corev1.RestartPolicyAlways, []ctrSnapshot{{name: "s", kind: kindSidecar, state: running()}, app(waiting(reasonPodInitializing))}, false, false, corev1.PodPending},
		{"sidecar started, app done never", corev1.RestartPolicyNever, []ctrSnapshot{{name: "s", kind: kindSidecar, state: running(), started: true}, app(exited(0))}, false, true, corev1.PodSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tt.policy}}
			got := podPhase(podSnapshot{pod: pod, ctrs: tt.ctrs, terminal: tt.terminal, initialized: tt.init})
			if got != tt.want {
				t.Fatalf("phase = %s, want %s", got, tt.want)
			}
		})
	}
}

func condOf(st corev1.PodStatus, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

func TestComputeStatusConditions(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Generation: 3},
		Spec: corev1.PodSpec{
			RestartPolicy:  corev1.RestartPolicyAlways,
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/gate"}},
			Containers:     []corev1.Container{{Name: "a", Image: "img"}, {Name: "b", Image: "img"}},
		},
	}
	t1 := metav1.NewTime(time.Unix(100, 0))
	t2 := metav1.NewTime(time.Unix(200, 0))
	base := podSnapshot{
		pod: pod, sandboxReady: true, podIP: netip.MustParseAddr("10.0.0.5"), hostIP: netip.MustParseAddr("10.0.0.1"),
		startTime: t1, initialized: true, now: t1, prev: map[corev1.PodConditionType]corev1.PodCondition{},
		ctrs: []ctrSnapshot{
			{name: "a", kind: kindApp, spec: pod.Spec.Containers[0], state: running(), ready: true, started: true},
			{name: "b", kind: kindApp, spec: pod.Spec.Containers[1], state: running(), ready: false, started: true},
		},
	}
	st := computeStatus(base)
	if st.Phase != corev1.PodRunning || st.PodIP != "10.0.0.5" || st.HostIP != "10.0.0.1" || len(st.PodIPs) != 1 {
		t.Fatalf("status = %+v", st)
	}
	if st.ObservedGeneration != 3 || st.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("observedGeneration %d qos %s", st.ObservedGeneration, st.QOSClass)
	}
	cr := condOf(st, corev1.ContainersReady)
	if cr.Status != corev1.ConditionFalse || cr.Reason != "ContainersNotReady" || cr.Message != "containers with unready status: [b]" {
		t.Errorf("ContainersReady = %+v", cr)
	}
	if c := condOf(st, corev1.PodReadyToStartContainers); c.Status != corev1.ConditionTrue {
		t.Errorf("PodReadyToStartContainers = %+v", c)
	}
	if c := condOf(st, corev1.PodInitialized); c.Status != corev1.ConditionTrue {
		t.Errorf("Initialized = %+v", c)
	}
	if !*st.ContainerStatuses[0].Started || st.ContainerStatuses[1].Ready {
		t.Errorf("container statuses = %+v", st.ContainerStatuses)
	}

	// Everything ready but the readiness gate missing, then present.
	s2 := base
	s2.ctrs = append([]ctrSnapshot(nil), base.ctrs...)
	s2.ctrs[1].ready = true
	s2.prev = conditionsByType(st.Conditions)
	s2.now = t2
	st2 := computeStatus(s2)
	if c := condOf(st2, corev1.ContainersReady); c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Equal(&t2) {
		t.Errorf("ContainersReady = %+v", c)
	}
	if c := condOf(st2, corev1.PodReadyToStartContainers); !c.LastTransitionTime.Equal(&t1) {
		t.Errorf("unchanged condition moved its transition time: %+v", c)
	}
	r := condOf(st2, corev1.PodReady)
	if r.Status != corev1.ConditionFalse || r.Reason != "ReadinessGatesNotReady" || !strings.Contains(r.Message, "example.com/gate") {
		t.Errorf("Ready = %+v", r)
	}
	s2.apiConds = []corev1.PodCondition{{Type: "example.com/gate", Status: corev1.ConditionTrue}}
	if r := condOf(computeStatus(s2), corev1.PodReady); r.Status != corev1.ConditionTrue {
		t.Errorf("Ready with gate true = %+v", r)
	}
}

func TestComputeStatusInitAndCompleted(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		RestartPolicy:  corev1.RestartPolicyNever,
		InitContainers: []corev1.Container{{Name: "i1"}, {Name: "i2"}},
		Containers:     []corev1.Container{{Name: "a"}},
	}}
	s := podSnapshot{pod: pod, ctrs: []ctrSnapshot{
		{name: "i1", kind: kindInit, state: exited(0)},
		{name: "i2", kind: kindInit, state: running()},
		{name: "a", kind: kindApp, state: waiting(reasonPodInitializing)},
	}}
	st := computeStatus(s)
	if c := condOf(st, corev1.PodInitialized); c.Status != corev1.ConditionFalse || c.Message != "containers with incomplete status: [i2]" {
		t.Errorf("Initialized = %+v", c)
	}
	if len(st.InitContainerStatuses) != 2 || len(st.ContainerStatuses) != 1 || st.Phase != corev1.PodPending {
		t.Errorf("status = %+v", st)
	}
	s.ctrs[1].state = exited(0)
	s.ctrs[2].state = exited(0)
	s.initialized = true
	st = computeStatus(s)
	if st.Phase != corev1.PodSucceeded {
		t.Fatalf("phase = %s", st.Phase)
	}
	if c := condOf(st, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != "PodCompleted" {
		t.Errorf("Ready = %+v", c)
	}
	if c := condOf(st, corev1.PodReadyToStartContainers); c.Status != corev1.ConditionFalse {
		t.Errorf("PodReadyToStartContainers = %+v", c)
	}
}

func TestQOSClass(t *testing.T) {
	rl := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	tests := []struct {
		name string
		res  []corev1.ResourceRequirements
		want corev1.PodQOSClass
	}{
		{"none", []corev1.ResourceRequirements{{}}, corev1.PodQOSBestEffort},
		{"equal", []corev1.ResourceRequirements{{Requests: rl("1", "1Gi"), Limits: rl("1", "1Gi")}}, corev1.PodQOSGuaranteed},
		{"limits only", []corev1.ResourceRequirements{{Limits: rl("1", "1Gi")}}, corev1.PodQOSGuaranteed},
		{"requests only", []corev1.ResourceRequirements{{Requests: rl("1", "")}}, corev1.PodQOSBurstable},
		{"mixed", []corev1.ResourceRequirements{{Limits: rl("1", "1Gi")}, {}}, corev1.PodQOSBurstable},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{}
		for _, r := range tt.res {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Resources: r})
		}
		if got := qosClass(pod); got != tt.want {
			t.Errorf("%s: qos = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestServiceVars(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "my-svc"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", Ports: []corev1.ServicePort{
			{Name: "redis", Port: 6379, Protocol: corev1.ProtocolTCP},
			{Name: "metrics-port", Port: 9121, Protocol: corev1.ProtocolTCP},
		}},
	}
	got := serviceVars(svc)
	want := map[string]string{
		"MY_SVC_SERVICE_HOST":              "10.96.0.10",
		"MY_SVC_SERVICE_PORT":              "6379",
		"MY_SVC_SERVICE_PORT_REDIS":        "6379",
		"MY_SVC_SERVICE_PORT_METRICS_PORT": "9121",
		"MY_SVC_PORT":                      "tcp://10.96.0.10:6379",
		"MY_SVC_PORT_6379_TCP":             "tcp://10.96.0.10:6379",
		"MY_SVC_PORT_6379_TCP_PROTO":       "tcp",
		"MY_SVC_PORT_6379_TCP_PORT":        "6379",
		"MY_SVC_PORT_6379_TCP_ADDR":        "10.96.0.10",
		"MY_SVC_PORT_9121_TCP":             "tcp://10.96.0.10:9121",
		"MY_SVC_PORT_9121_TCP_PROTO":       "tcp",
		"MY_SVC_PORT_9121_TCP_PORT":        "9121",
		"MY_SVC_PORT_9121_TCP_ADDR":        "10.96.0.10",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("serviceVars = %v\nwant %v", got, want)
	}
	headless := svc.DeepCopy()
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	if len(serviceVars(headless)) != 0 {
		t.Error("headless service must not produce variables")
	}
}

func TestDownwardValues(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1",
			Labels: map[string]string{"app": "x", "role": "primary"}, Annotations: map[string]string{"a": `q"uote`}},
		Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "sa", Containers: []corev1.Container{{
			Name: "c",
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
			},
		}}},
	}
	ec := envContext{pod: pod, podIP: netip.MustParseAddr("10.1.0.7"), hostIP: netip.MustParseAddr("10.1.0.1"),
		allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}}
	fields := []struct{ path, want string }{
		{"metadata.name", "p"}, {"metadata.namespace", "ns"}, {"metadata.uid", "u1"},
		{"metadata.labels['role']", "primary"}, {"metadata.annotations['a']", `q"uote`},
		{"spec.nodeName", "n1"}, {"spec.serviceAccountName", "sa"},
		{"status.podIP", "10.1.0.7"}, {"status.podIPs", "10.1.0.7"}, {"status.hostIP", "10.1.0.1"},
	}
	for _, f := range fields {
		got, err := podFieldValue(ec, f.path, false)
		if err != nil || got != f.want {
			t.Errorf("field %s = %q, %v; want %q", f.path, got, err, f.want)
		}
	}
	if _, err := podFieldValue(ec, "metadata.labels", false); err == nil {
		t.Error("whole label map must be refused in env")
	}
	if got, _ := podFieldValue(ec, "metadata.labels", true); got != "app=\"x\"\nrole=\"primary\"" {
		t.Errorf("labels = %q", got)
	}
	if got, _ := podFieldValue(ec, "metadata.annotations", true); got != `a="q\"uote"` {
		t.Errorf("annotations = %q", got)
	}
	c := &pod.Spec.Containers[0]
	res := []struct {
		res, divisor, want string
	}{
		{"limits.memory", "", "268435456"},
		{"limits.memory", "1Mi", "256"},
		{"limits.cpu", "", "4"}, // no limit: node allocatable
		{"requests.cpu", "1m", "250"},
		{"requests.cpu", "", "1"},            // rounded up
		{"requests.memory", "", "268435456"}, // requests default to limits
	}
	for _, r := range res {
		sel := &corev1.ResourceFieldSelector{Resource: r.res}
		if r.divisor != "" {
			sel.Divisor = resource.MustParse(r.divisor)
		}
		got, err := resourceFieldValue(ec, c, sel)
		if err != nil || got != r.want {
			t.Errorf("resource %s/%s = %q, %v; want %q", r.res, r.divisor, got, err, r.want)
		}
	}
	if _, err := resourceFieldValue(ec, nil, &corev1.ResourceFieldSelector{Resource: "limits.cpu", ContainerName: "nope"}); err == nil {
		t.Error("unknown container must be an error")
	}
}

func TestResolvConfAndHostname(t *testing.T) {
	dns := []netip.Addr{netip.MustParseAddr("10.96.0.10")}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "valkey-0", Namespace: "db"}}
	got := resolvConf(pod, dns, "cluster.local")
	want := "search db.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"
	if got != want {
		t.Errorf("resolv.conf = %q, want %q", got, want)
	}
	if got := resolvConf(pod, nil, "cluster.local"); got != "" {
		t.Errorf("without cluster DNS the host's resolv.conf stays: got %q", got)
	}
	none := pod.DeepCopy()
	none.Spec.DNSPolicy = corev1.DNSNone
	none.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.2.3.4"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}}}
	if got := resolvConf(none, dns, "cluster.local"); got != "nameserver 1.2.3.4\noptions ndots:2\n" {
		t.Errorf("dnsPolicy None = %q", got)
	}
	if h := podHostname(pod); h != "valkey-0" {
		t.Errorf("hostname = %q", h)
	}
	fq := pod.DeepCopy()
	fq.Spec.Hostname, fq.Spec.Subdomain, fq.Spec.SetHostnameAsFQDN = "h", "sub", ptr.To(true)
	if h := podHostname(fq); h != "h.sub.db.svc" {
		t.Errorf("FQDN hostname = %q", h)
	}
	long := pod.DeepCopy()
	long.Name = strings.Repeat("a", 62) + "-b"
	if h := podHostname(long); h != strings.Repeat("a", 62) {
		t.Errorf("long hostname = %q", h)
	}
}

func TestStatusPatch(t *testing.T) {
	st := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	b, err := statusPatch("uid-1", st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["metadata"]["uid"] != "uid-1" {
		t.Errorf("patch lacks the UID precondition: %s", b)
	}
	for _, k := range []string{"reason", "message"} {
		if v, ok := m["status"][k]; !ok || v != nil {
			t.Errorf("patch must clear %s explicitly: %s", k, b)
		}
	}
	if m["status"]["phase"] != "Running" {
		t.Errorf("patch = %s", b)
	}
	b2, _ := statusPatch("uid-1", st)
	if string(b) != string(b2) {
		t.Error("status patches must be deterministic")
	}
}

func testLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
