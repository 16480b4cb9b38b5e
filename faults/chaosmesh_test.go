package faults

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gauntlet-dev/gauntlet/cluster/local"
)

func ptr[T any](v T) *T { return &v }

// sel is the selector every object should carry: exactly these pods of ns, mode all.
func sel(ns string, pods ...string) v1alpha1.PodSelector {
	return v1alpha1.PodSelector{
		Selector: v1alpha1.PodSelectorSpec{
			GenericSelectorSpec: v1alpha1.GenericSelectorSpec{Namespaces: []string{ns}},
			Pods:                map[string][]string{ns: pods},
		},
		Mode: v1alpha1.AllMode,
	}
}

func meta(name, ns, fault string, kind Kind) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: ns,
		Labels:      map[string]string{FaultLabel: name},
		Annotations: map[string]string{faultNameAnnotation: fault, faultKindAnnotation: string(kind)},
	}
}

var (
	podChaosType     = metav1.TypeMeta{APIVersion: "chaos-mesh.org/v1alpha1", Kind: "PodChaos"}
	networkChaosType = metav1.TypeMeta{APIVersion: "chaos-mesh.org/v1alpha1", Kind: "NetworkChaos"}
)

func asJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func TestPodChaosFor(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want *v1alpha1.PodChaos
	}{
		{
			name: "pod-kill with a grace period",
			spec: Spec{Kind: PodKill, Name: "kill-1", Namespace: "shop", Pods: []string{"a", "b", "a"}, Grace: ptr(int64(7))},
			want: &v1alpha1.PodChaos{TypeMeta: podChaosType, ObjectMeta: meta("kill-1", "shop", "kill-1", PodKill),
				Spec: v1alpha1.PodChaosSpec{
					ContainerSelector: v1alpha1.ContainerSelector{PodSelector: sel("shop", "a", "b")},
					Action:            v1alpha1.PodKillAction, GracePeriod: 7,
				}},
		},
		{
			name: "pod-kill at once",
			spec: Spec{Kind: PodKill, Name: "kill-0", Namespace: "shop", Pods: []string{"a"}, Grace: ptr(int64(0)), Duration: time.Minute},
			want: &v1alpha1.PodChaos{TypeMeta: podChaosType, ObjectMeta: meta("kill-0", "shop", "kill-0", PodKill),
				Spec: v1alpha1.PodChaosSpec{
					ContainerSelector: v1alpha1.ContainerSelector{PodSelector: sel("shop", "a")},
					Action:            v1alpha1.PodKillAction,
				}},
		},
		{
			name: "container-kill",
			spec: Spec{Kind: ContainerCrash, Name: "Crash valkey", Namespace: "shop", Pods: []string{"v-0", "v-1"}, Container: "valkey"},
			want: &v1alpha1.PodChaos{TypeMeta: podChaosType, ObjectMeta: meta(ChaosObjectName("Crash valkey"), "shop", "Crash valkey", ContainerCrash),
				Spec: v1alpha1.PodChaosSpec{
					ContainerSelector: v1alpha1.ContainerSelector{PodSelector: sel("shop", "v-0", "v-1"), ContainerNames: []string{"valkey"}},
					Action:            v1alpha1.ContainerKillAction,
				}},
		},
		{
			name: "pod-failure until removed",
			spec: Spec{Kind: PodFailure, Name: "fail", Namespace: "shop", Pods: []string{"a"}},
			want: &v1alpha1.PodChaos{TypeMeta: podChaosType, ObjectMeta: meta("fail", "shop", "fail", PodFailure),
				Spec: v1alpha1.PodChaosSpec{
					ContainerSelector: v1alpha1.ContainerSelector{PodSelector: sel("shop", "a")},
					Action:            v1alpha1.PodFailureAction,
				}},
		},
		{
			name: "pod-failure for 90s",
			spec: Spec{Kind: PodFailure, Name: "fail", Namespace: "shop", Pods: []string{"a"}, Duration: 90 * time.Second},
			want: &v1alpha1.PodChaos{TypeMeta: podChaosType, ObjectMeta: meta("fail", "shop", "fail", PodFailure),
				Spec: v1alpha1.PodChaosSpec{
					ContainerSelector: v1alpha1.ContainerSelector{PodSelector: sel("shop", "a")},
					Action:            v1alpha1.PodFailureAction, Duration: ptr("90000ms"),
				}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PodChaosFor(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PodChaosFor =\n%s\nwant\n%s", asJSON(got), asJSON(tc.want))
			}
			if got.IsOneShot() != (tc.spec.Kind != PodFailure) {
				t.Errorf("IsOneShot = %v for %s", got.IsOneShot(), tc.spec.Kind)
			}
		})
	}
}

func TestNetworkChaosFor(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want *v1alpha1.NetworkChaos
	}{
		{
			name: "partition",
			spec: Spec{Kind: Partition, Name: "split", Namespace: "shop", Pods: []string{"a"}, Peers: []string{"b", "c"}},
			want: &v1alpha1.NetworkChaos{TypeMeta: networkChaosType, ObjectMeta: meta("split", "shop", "split", Partition),
				Spec: v1alpha1.NetworkChaosSpec{
					PodSelector: sel("shop", "a"), Action: v1alpha1.PartitionAction,
					PartitionBehavior: v1alpha1.DropPartitionBehavior, Direction: v1alpha1.Both,
					Target: ptr(sel("shop", "b", "c")),
				}},
		},
		{
			name: "partition for 45s",
			spec: Spec{Kind: Partition, Name: "split", Namespace: "shop", Pods: []string{"a"}, Peers: []string{"b"}, Duration: 45 * time.Second},
			want: &v1alpha1.NetworkChaos{TypeMeta: networkChaosType, ObjectMeta: meta("split", "shop", "split", Partition),
				Spec: v1alpha1.NetworkChaosSpec{
					PodSelector: sel("shop", "a"), Action: v1alpha1.PartitionAction,
					PartitionBehavior: v1alpha1.DropPartitionBehavior, Direction: v1alpha1.Both,
					Target: ptr(sel("shop", "b")), Duration: ptr("45000ms"),
				}},
		},
		{
			name: "delay of all egress",
			spec: Spec{Kind: Delay, Name: "slow", Namespace: "shop", Pods: []string{"a", "b"}, Latency: 100 * time.Millisecond, Jitter: 1500 * time.Microsecond},
			want: &v1alpha1.NetworkChaos{TypeMeta: networkChaosType, ObjectMeta: meta("slow", "shop", "slow", Delay),
				Spec: v1alpha1.NetworkChaosSpec{
					PodSelector: sel("shop", "a", "b"), Action: v1alpha1.DelayAction, Direction: v1alpha1.To, PartitionBehavior: v1alpha1.DropPartitionBehavior,
					TcParameter: v1alpha1.TcParameter{Delay: &v1alpha1.DelaySpec{Latency: "100ms", Jitter: "1500us", Correlation: "0"}},
				}},
		},
		{
			name: "delay towards peers for 1m",
			spec: Spec{Kind: Delay, Name: "slow", Namespace: "shop", Pods: []string{"a"}, Peers: []string{"b"}, Latency: 2 * time.Second, Duration: time.Minute},
			want: &v1alpha1.NetworkChaos{TypeMeta: networkChaosType, ObjectMeta: meta("slow", "shop", "slow", Delay),
				Spec: v1alpha1.NetworkChaosSpec{
					PodSelector: sel("shop", "a"), Action: v1alpha1.DelayAction, Direction: v1alpha1.To, PartitionBehavior: v1alpha1.DropPartitionBehavior,
					Target: ptr(sel("shop", "b")), Duration: ptr("60000ms"),
					TcParameter: v1alpha1.TcParameter{Delay: &v1alpha1.DelaySpec{Latency: "2000ms", Jitter: "0ms", Correlation: "0"}},
				}},
		},
		{
			name: "loss",
			spec: Spec{Kind: Loss, Name: "lossy", Namespace: "shop", Pods: []string{"a"}, LossPercent: 25.5},
			want: &v1alpha1.NetworkChaos{TypeMeta: networkChaosType, ObjectMeta: meta("lossy", "shop", "lossy", Loss),
				Spec: v1alpha1.NetworkChaosSpec{
					PodSelector: sel("shop", "a"), Action: v1alpha1.LossAction, Direction: v1alpha1.To, PartitionBehavior: v1alpha1.DropPartitionBehavior,
					TcParameter: v1alpha1.TcParameter{Loss: &v1alpha1.LossSpec{Loss: "25.5", Correlation: "0"}},
				}},
		},
		{
			name: "total loss towards peers",
			spec: Spec{Kind: Loss, Name: "lossy", Namespace: "shop", Pods: []string{"a"}, Peers: []string{"b"}, LossPercent: 100},
			want: &v1alpha1.NetworkChaos{TypeMeta: networkChaosType, ObjectMeta: meta("lossy", "shop", "lossy", Loss),
				Spec: v1alpha1.NetworkChaosSpec{
					PodSelector: sel("shop", "a"), Action: v1alpha1.LossAction, Direction: v1alpha1.To, PartitionBehavior: v1alpha1.DropPartitionBehavior,
					Target:      ptr(sel("shop", "b")),
					TcParameter: v1alpha1.TcParameter{Loss: &v1alpha1.LossSpec{Loss: "100", Correlation: "0"}},
				}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NetworkChaosFor(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("NetworkChaosFor =\n%s\nwant\n%s", asJSON(got), asJSON(tc.want))
			}
		})
	}
}

func TestAPIServerPartitionFor(t *testing.T) {
	s := Spec{Kind: APIServerPartition, Name: "cut-op", Namespace: "ops", Pods: []string{"operator-0"}, Duration: 10 * time.Second}
	got, err := APIServerPartitionFor(s, []string{"172.18.0.2", "10.96.0.1", "::ffff:10.96.0.1", "fd00::1"})
	if err != nil {
		t.Fatal(err)
	}
	want := &v1alpha1.NetworkChaos{TypeMeta: networkChaosType, ObjectMeta: meta("cut-op", "ops", "cut-op", APIServerPartition),
		Spec: v1alpha1.NetworkChaosSpec{
			PodSelector: sel("ops", "operator-0"), Action: v1alpha1.PartitionAction,
			PartitionBehavior: v1alpha1.DropPartitionBehavior, Direction: v1alpha1.Both,
			ExternalTargets: []string{"10.96.0.1", "172.18.0.2", "fd00::1"}, Duration: ptr("10000ms"),
		}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("APIServerPartitionFor =\n%s\nwant\n%s", asJSON(got), asJSON(want))
	}
	tests := []struct {
		name  string
		spec  Spec
		addrs []string
	}{
		{"no address", s, nil},
		{"a host name", s, []string{"kubernetes.default"}},
		{"wrong kind", Spec{Kind: Partition, Name: "p", Namespace: "ns", Pods: []string{"a"}, Peers: []string{"b"}}, []string{"10.96.0.1"}},
		{"no pods", Spec{Kind: APIServerPartition, Name: "p", Namespace: "ns"}, []string{"10.96.0.1"}},
	}
	for _, tc := range tests {
		if _, err := APIServerPartitionFor(tc.spec, tc.addrs); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tc.name, err)
		}
	}
}

func TestChaosMeshBuildErrors(t *testing.T) {
	base := func(k Kind) Spec { return Spec{Kind: k, Name: "f", Namespace: "ns", Pods: []string{"a"}} }
	with := func(s Spec, f func(*Spec)) Spec { f(&s); return s }
	tests := []struct {
		name string
		spec Spec
		want error
	}{
		{"no name", with(base(PodKill), func(s *Spec) { s.Name = ""; s.Grace = ptr(int64(1)) }), ErrInvalid},
		{"no pods", with(base(ContainerCrash), func(s *Spec) { s.Pods = nil; s.Container = "c" }), ErrInvalid},
		{"empty pod name", with(base(ContainerCrash), func(s *Spec) { s.Pods = []string{""}; s.Container = "c" }), ErrInvalid},
		{"bad namespace", with(base(ContainerCrash), func(s *Spec) { s.Namespace = "Bad_NS"; s.Container = "c" }), ErrInvalid},
		{"pod-kill without grace", base(PodKill), ErrInvalid},
		{"negative grace", with(base(PodKill), func(s *Spec) { s.Grace = ptr(int64(-1)) }), ErrInvalid},
		{"container-kill without container", base(ContainerCrash), ErrInvalid},
		{"negative duration", with(base(PodFailure), func(s *Spec) { s.Duration = -time.Second }), ErrInvalid},
		{"pod-failure of one container", with(base(PodFailure), func(s *Spec) { s.Container = "c" }), ErrUnsupported},
		{"partition without peers", base(Partition), ErrInvalid},
		{"partition overlapping", with(base(Partition), func(s *Spec) { s.Peers = []string{"a"} }), ErrInvalid},
		{"delay without latency", base(Delay), ErrInvalid},
		{"delay with negative jitter", with(base(Delay), func(s *Spec) { s.Latency = time.Millisecond; s.Jitter = -1 }), ErrInvalid},
		{"delay overlapping", with(base(Delay), func(s *Spec) { s.Latency = time.Millisecond; s.Peers = []string{"a"} }), ErrInvalid},
		{"loss of 0%", base(Loss), ErrInvalid},
		{"loss over 100%", with(base(Loss), func(s *Spec) { s.LossPercent = 100.5 }), ErrInvalid},
		{"loss NaN", with(base(Loss), func(s *Spec) { s.LossPercent = math.NaN() }), ErrInvalid},
		{"loss negative", with(base(Loss), func(s *Spec) { s.LossPercent = -3 }), ErrInvalid},
		{"api-server partition through NetworkChaosFor", base(APIServerPartition), ErrInvalid},
		{"pod kind through NetworkChaosFor", with(base(PodKill), func(s *Spec) { s.Grace = ptr(int64(0)) }), ErrInvalid},
		{"network kind through PodChaosFor", with(base(Partition), func(s *Spec) { s.Peers = []string{"b"} }), ErrInvalid},
		{"unknown kind", base("kernel-panic"), ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			switch {
			case strings.HasPrefix(tc.name, "network kind"):
				_, err = PodChaosFor(tc.spec)
			case strings.HasPrefix(tc.name, "pod kind"):
				_, err = NetworkChaosFor(tc.spec)
			default:
				if _, pod := podChaosActions[tc.spec.Kind]; pod {
					_, err = PodChaosFor(tc.spec)
				} else {
					_, err = NetworkChaosFor(tc.spec)
				}
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if (tc.want == ErrInvalid) == errors.Is(err, ErrUnsupported) {
				t.Errorf("err = %v is both or neither of ErrInvalid and ErrUnsupported", err)
			}
		})
	}
}

func TestChaosObjectName(t *testing.T) {
	long := strings.Repeat("Partition_", 12)
	tests := []struct {
		in, wantPrefix string
		keep           bool
	}{
		{"split-1", "split-1", true},
		{"a", "a", true},
		{"Partition 1", "partition-1-", false},
		{"a.b", "a-b-", false},
		{"a_b", "a-b-", false},
		{"--x--", "x-", false},
		{"???", "fault-", false},
		{"", "fault-", false},
		{long, "partition-partition-", false},
		{strings.Repeat("x", 64), strings.Repeat("x", 54) + "-", false},
	}
	seen := map[string]string{}
	for _, tc := range tests {
		got := ChaosObjectName(tc.in)
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("ChaosObjectName(%q) = %q, not a DNS-1123 label: %v", tc.in, got, errs)
		}
		if tc.keep && got != tc.in {
			t.Errorf("ChaosObjectName(%q) = %q, want it unchanged", tc.in, got)
		}
		if !strings.HasPrefix(got, tc.wantPrefix) {
			t.Errorf("ChaosObjectName(%q) = %q, want prefix %q", tc.in, got, tc.wantPrefix)
		}
		if !tc.keep && !regexp.MustCompile(`-[0-9a-f]{8}$`).MatchString(got) {
			t.Errorf("ChaosObjectName(%q) = %q, want a hash suffix", tc.in, got)
		}
		if again := ChaosObjectName(tc.in); again != got {
			t.Errorf("ChaosObjectName(%q) not deterministic: %q then %q", tc.in, got, again)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%q and %q both map to %q", other, tc.in, got)
		}
		seen[got] = tc.in
	}
}

func TestChaosDuration(t *testing.T) {
	// The pattern of Chaos Mesh's latency and jitter fields (kubebuilder markers of DelaySpec).
	pattern := regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h)$`)
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0ms"},
		{100 * time.Millisecond, "100ms"},
		{90 * time.Second, "90000ms"},
		{1500 * time.Microsecond, "1500us"},
		{1500 * time.Nanosecond, "1500ns"},
		{time.Hour + time.Nanosecond, "3600000000001ns"},
	}
	for _, tc := range tests {
		got := chaosDuration(tc.d)
		if got != tc.want {
			t.Errorf("chaosDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
		if !pattern.MatchString(got) {
			t.Errorf("chaosDuration(%v) = %q does not match Chaos Mesh's pattern", tc.d, got)
		}
		if back, err := time.ParseDuration(got); err != nil || back != tc.d {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", got, back, err, tc.d)
		}
	}
}

// TestObjectsPassChaosMeshWebhooks runs the objects through Chaos Mesh's own
// admission logic (the api module's Default and ValidateCreate): the defaulter must
// have nothing to add (the objects are complete) and the validator must accept them.
func TestObjectsPassChaosMeshWebhooks(t *testing.T) {
	ctx := context.Background()
	// PodChaos and NetworkChaos share webhook methods that take the object itself.
	type webhooked interface {
		runtime.Object
		Default(context.Context, runtime.Object) error
		ValidateCreate(context.Context, runtime.Object) (admission.Warnings, error)
	}
	var objs []webhooked
	for _, s := range []Spec{
		{Kind: PodKill, Name: "k", Namespace: "ns", Pods: []string{"a"}, Grace: ptr(int64(3))},
		{Kind: ContainerCrash, Name: "c", Namespace: "ns", Pods: []string{"a", "b"}, Container: "valkey"},
		{Kind: PodFailure, Name: "f", Namespace: "ns", Pods: []string{"a"}},
		{Kind: PodFailure, Name: "f", Namespace: "ns", Pods: []string{"a"}, Duration: 1500 * time.Millisecond},
	} {
		o, err := PodChaosFor(s)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	for _, s := range []Spec{
		{Kind: Partition, Name: "p", Namespace: "ns", Pods: []string{"a"}, Peers: []string{"b"}},
		{Kind: Partition, Name: "p", Namespace: "ns", Pods: []string{"a"}, Peers: []string{"b"}, Duration: time.Minute},
		{Kind: Delay, Name: "d", Namespace: "ns", Pods: []string{"a"}, Latency: 50 * time.Millisecond, Jitter: 5 * time.Millisecond},
		{Kind: Delay, Name: "d", Namespace: "ns", Pods: []string{"a"}, Peers: []string{"b"}, Latency: time.Second},
		{Kind: Loss, Name: "l", Namespace: "ns", Pods: []string{"a"}, LossPercent: 0.5},
		{Kind: Loss, Name: "l", Namespace: "ns", Pods: []string{"a"}, Peers: []string{"b", "c"}, LossPercent: 100},
	} {
		o, err := NetworkChaosFor(s)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	api, err := APIServerPartitionFor(Spec{Kind: APIServerPartition, Name: "a", Namespace: "ns", Pods: []string{"op"}}, []string{"10.96.0.1", "172.18.0.3"})
	if err != nil {
		t.Fatal(err)
	}
	objs = append(objs, api)

	for _, o := range objs {
		before := o.DeepCopyObject()
		if err := o.Default(ctx, o); err != nil {
			t.Fatalf("Default: %v", err)
		}
		if !reflect.DeepEqual(before, o) {
			t.Errorf("Chaos Mesh's defaulter changed the object:\n%s\nto\n%s", asJSON(before), asJSON(o))
		}
		if _, err := o.ValidateCreate(ctx, o); err != nil {
			t.Errorf("Chaos Mesh rejects\n%s\n%v", asJSON(o), err)
		}
	}

	// The validator can fail: a container-kill naming no container is refused.
	bad, err := PodChaosFor(Spec{Kind: ContainerCrash, Name: "c", Namespace: "ns", Pods: []string{"a"}, Container: "x"})
	if err != nil {
		t.Fatal(err)
	}
	bad.Spec.ContainerNames = nil
	if _, err := bad.ValidateCreate(ctx, bad); err == nil {
		t.Error("Chaos Mesh's validator accepted a container-kill without a container name")
	}
}

func TestCheckChaosMesh(t *testing.T) {
	served := func(names ...string) []*metav1.APIResourceList {
		l := &metav1.APIResourceList{GroupVersion: "chaos-mesh.org/v1alpha1"}
		for _, n := range names {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: n, Namespaced: true})
		}
		return []*metav1.APIResourceList{l}
	}
	tests := []struct {
		name      string
		resources []*metav1.APIResourceList
		fail      error
		wantErr   error
		wantText  []string
	}{
		{"installed", served("podchaos", "networkchaos", "iochaos"), nil, nil, nil},
		{"not installed", nil, nil, ErrChaosMeshMissing, []string{"not installed", "helm install chaos-mesh", "chaos-mesh.org/v1alpha1"}},
		{"networkchaos missing", served("podchaos"), nil, ErrChaosMeshMissing, []string{"networkchaos.chaos-mesh.org", "helm"}},
		{"server unreachable", nil, errors.New("connection refused"), nil, []string{"connection refused", "discovery"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{Resources: tc.resources}}
			if tc.fail != nil {
				d.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.fail })
			}
			err := CheckChaosMesh(context.Background(), d)
			if tc.wantText == nil {
				if err != nil {
					t.Fatalf("CheckChaosMesh = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("CheckChaosMesh = nil, want an error")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && errors.Is(err, ErrChaosMeshMissing) {
				t.Errorf("err = %v claims Chaos Mesh is missing, but the server could not be asked", err)
			}
			for _, w := range tc.wantText {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}

	t.Run("context ends", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		d := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
		d.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
			<-release
			return true, nil, nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := CheckChaosMesh(ctx, d); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the context's deadline", err)
		}
	})
}

// fakeChaosMesh plays Chaos Mesh's controller against a fake client: it adds the
// records finalizer, selects the pods named in the selectors, marks them injected
// (or fails, per mode) and lets deleted objects go.
type fakeChaosMesh struct {
	c    client.Client
	mode string // "", "select-fewer", "fail"

	mu   sync.Mutex
	seen map[string]client.Object // objects as first seen with a finalizer
}

func (f *fakeChaosMesh) run(ctx context.Context) {
	for ctx.Err() == nil {
		var objs []chaosObject
		pcs, ncs := &v1alpha1.PodChaosList{}, &v1alpha1.NetworkChaosList{}
		if f.c.List(ctx, pcs) == nil {
			for i := range pcs.Items {
				objs = append(objs, &pcs.Items[i])
			}
		}
		if f.c.List(ctx, ncs) == nil {
			for i := range ncs.Items {
				objs = append(objs, &ncs.Items[i])
			}
		}
		for _, o := range objs {
			f.step(ctx, o)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (f *fakeChaosMesh) step(ctx context.Context, o chaosObject) {
	const finalizer = "chaos-mesh/records"
	if o.GetDeletionTimestamp() != nil {
		o.SetFinalizers(nil)
		_ = f.c.Update(ctx, o)
		return
	}
	if len(o.GetFinalizers()) == 0 {
		o.SetFinalizers([]string{finalizer})
		_ = f.c.Update(ctx, o)
		return
	}
	f.mu.Lock()
	if _, ok := f.seen[objectRef(o)]; !ok {
		f.seen[objectRef(o)] = o.DeepCopyObject().(client.Object)
	}
	f.mu.Unlock()
	if o.GetStatus().Experiment.Records != nil {
		return
	}
	var sels = map[string]*v1alpha1.PodSelector{}
	switch x := o.(type) {
	case *v1alpha1.PodChaos:
		sels["."] = &x.Spec.PodSelector
	case *v1alpha1.NetworkChaos:
		sels["."] = &x.Spec.PodSelector
		if x.Spec.Target != nil {
			sels[".Target"] = x.Spec.Target
		}
	}
	// Selector keys and namespaces in a fixed order, so "select-fewer" always
	// drops the last peer (".Target" sorts after ".").
	var records []*v1alpha1.Record
	for _, key := range slices.Sorted(maps.Keys(sels)) {
		s := sels[key]
		for _, ns := range slices.Sorted(maps.Keys(s.Selector.Pods)) {
			for _, n := range s.Selector.Pods[ns] {
				r := &v1alpha1.Record{Id: ns + "/" + n, SelectorKey: key, Phase: v1alpha1.Injected, InjectedCount: 1}
				if f.mode == "fail" {
					r.Phase, r.InjectedCount = v1alpha1.NotInjected, 0
					r.Events = []v1alpha1.RecordEvent{*v1alpha1.NewRecordEvent(v1alpha1.TypeFailed, v1alpha1.Apply, "chaos-daemon unreachable", metav1.Now())}
				}
				records = append(records, r)
			}
		}
	}
	if f.mode == "select-fewer" {
		records = records[:len(records)-1]
	}
	o.GetStatus().Experiment.Records = records
	o.GetStatus().Experiment.DesiredPhase = v1alpha1.RunningPhase
	_ = f.c.Status().Update(ctx, o)
}

func (f *fakeChaosMesh) seenObject(ref string) client.Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[ref]
}

func testPod(name string, grace *int64, containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"}}
	p.Spec.TerminationGracePeriodSeconds = grace
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "valkey/valkey:8"})
	}
	return p
}

// newFakeChaosMesh returns a back end on a fake cluster with pods in "shop" and the
// kubernetes Service, and the simulated Chaos Mesh controller behind it.
func newFakeChaosMesh(t *testing.T, mode string, timeout time.Duration) (*ChaosMesh, *fakeChaosMesh) {
	t.Helper()
	scheme, err := chaosMeshScheme()
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		testPod("v-0", ptr(int64(10)), "valkey", "exporter"),
		testPod("v-1", ptr(int64(10)), "valkey", "exporter"),
		testPod("v-2", nil, "valkey"),
		testPod("solo", nil, "app"),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", ClusterIPs: []string{"10.96.0.1"}}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default",
			Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"172.18.0.2"}}}},
		// Not ours: RemoveAll must leave it.
		&v1alpha1.PodChaos{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses", Namespace: "shop"},
			Spec: v1alpha1.PodChaosSpec{Action: v1alpha1.PodFailureAction, ContainerSelector: v1alpha1.ContainerSelector{PodSelector: sel("shop", "solo")}}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.PodChaos{}, &v1alpha1.NetworkChaos{}).Build()
	f := &fakeChaosMesh{c: c, mode: mode, seen: map[string]client.Object{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	m := newChaosMesh(c, WithChaosMeshTimeout(timeout))
	m.poll = 2 * time.Millisecond
	return m, f
}

func (m *ChaosMesh) exists(t *testing.T, obj chaosObject) bool {
	t.Helper()
	err := m.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func TestChaosMeshInjectRemove(t *testing.T) {
	tests := []struct {
		name    string
		spec    Spec
		oneShot bool
		check   func(t *testing.T, o client.Object)
	}{
		{
			name: "pod-kill takes the pods' own grace period", oneShot: true,
			spec: Spec{Kind: PodKill, Name: "kill", Namespace: "shop", Pods: []string{"v-0", "v-1"}},
			check: func(t *testing.T, o client.Object) {
				if g := o.(*v1alpha1.PodChaos).Spec.GracePeriod; g != 10 {
					t.Errorf("grace period %d, want the pods' 10", g)
				}
			},
		},
		{
			name: "pod-kill of a pod with the default grace period", oneShot: true,
			spec: Spec{Kind: PodKill, Name: "kill", Namespace: "shop", Pods: []string{"v-2"}},
			check: func(t *testing.T, o client.Object) {
				if g := o.(*v1alpha1.PodChaos).Spec.GracePeriod; g != 30 {
					t.Errorf("grace period %d, want Kubernetes' default 30", g)
				}
			},
		},
		{
			name: "container-kill of the first container", oneShot: true,
			spec: Spec{Kind: ContainerCrash, Name: "crash", Namespace: "shop", Pods: []string{"v-0", "v-2"}},
			check: func(t *testing.T, o client.Object) {
				if c := o.(*v1alpha1.PodChaos).Spec.ContainerNames; !reflect.DeepEqual(c, []string{"valkey"}) {
					t.Errorf("containers %v, want [valkey]", c)
				}
			},
		},
		{
			// The campaign names a victim's peers for every kind; a PodChaos has no target
			// selector, so none is waited for (seen on kind: "selected 0 of the 2 targets").
			name: "container-kill with peers", oneShot: true,
			spec: Spec{Kind: ContainerCrash, Name: "crash", Namespace: "shop", Pods: []string{"v-0"}, Peers: []string{"v-1", "v-2"}},
			check: func(t *testing.T, o client.Object) {
				if pc := o.(*v1alpha1.PodChaos); pc.Spec.Action != v1alpha1.ContainerKillAction {
					t.Errorf("spec %s", asJSON(pc.Spec))
				}
			},
		},
		{
			name: "container-kill of a named container", oneShot: true,
			spec: Spec{Kind: ContainerCrash, Name: "crash", Namespace: "shop", Pods: []string{"v-0"}, Container: "exporter"},
			check: func(t *testing.T, o client.Object) {
				if c := o.(*v1alpha1.PodChaos).Spec.ContainerNames; !reflect.DeepEqual(c, []string{"exporter"}) {
					t.Errorf("containers %v, want [exporter]", c)
				}
			},
		},
		{
			name: "pod-failure naming the only container",
			spec: Spec{Kind: PodFailure, Name: "freeze", Namespace: "shop", Pods: []string{"v-2"}, Container: "valkey", Duration: time.Hour},
			check: func(t *testing.T, o client.Object) {
				pc := o.(*v1alpha1.PodChaos)
				if pc.Spec.Action != v1alpha1.PodFailureAction || pc.Spec.ContainerNames != nil || pc.Spec.Duration == nil || *pc.Spec.Duration != "3600000ms" {
					t.Errorf("spec %s", asJSON(pc.Spec))
				}
			},
		},
		{
			name: "partition",
			spec: Spec{Kind: Partition, Name: "Split Brain", Namespace: "shop", Pods: []string{"v-0"}, Peers: []string{"v-1", "v-2"}},
			check: func(t *testing.T, o client.Object) {
				nc := o.(*v1alpha1.NetworkChaos)
				if nc.Spec.Action != v1alpha1.PartitionAction || nc.Spec.Direction != v1alpha1.Both || nc.Spec.Target == nil ||
					!reflect.DeepEqual(nc.Spec.Target.Selector.Pods, map[string][]string{"shop": {"v-1", "v-2"}}) {
					t.Errorf("spec %s", asJSON(nc.Spec))
				}
			},
		},
		{
			name: "api-server partition",
			spec: Spec{Kind: APIServerPartition, Name: "cut", Namespace: "shop", Pods: []string{"solo"}},
			check: func(t *testing.T, o client.Object) {
				nc := o.(*v1alpha1.NetworkChaos)
				if !reflect.DeepEqual(nc.Spec.ExternalTargets, []string{"10.96.0.1", "172.18.0.2"}) || nc.Spec.Direction != v1alpha1.Both {
					t.Errorf("spec %s", asJSON(nc.Spec))
				}
			},
		},
		{
			name: "delay",
			spec: Spec{Kind: Delay, Name: "slow", Namespace: "shop", Pods: []string{"v-0"}, Latency: 200 * time.Millisecond},
			check: func(t *testing.T, o client.Object) {
				nc := o.(*v1alpha1.NetworkChaos)
				if nc.Spec.Delay == nil || nc.Spec.Delay.Latency != "200ms" {
					t.Errorf("spec %s", asJSON(nc.Spec))
				}
			},
		},
		{
			name: "loss",
			spec: Spec{Kind: Loss, Name: "lossy", Namespace: "shop", Pods: []string{"v-0"}, Peers: []string{"v-1"}, LossPercent: 30},
			check: func(t *testing.T, o client.Object) {
				nc := o.(*v1alpha1.NetworkChaos)
				if nc.Spec.Loss == nil || nc.Spec.Loss.Loss != "30" || nc.Spec.Target == nil {
					t.Errorf("spec %s", asJSON(nc.Spec))
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, f := newFakeChaosMesh(t, "", 5*time.Second)
			ctx := context.Background()
			if err := m.Inject(ctx, tc.spec); err != nil {
				t.Fatalf("Inject: %v", err)
			}
			probe, _ := objectFor(tc.spec.Kind)
			probe.SetName(ChaosObjectName(tc.spec.Name))
			probe.SetNamespace(tc.spec.Namespace)
			seen := f.seenObject(objectRef(probe))
			if seen == nil {
				t.Fatalf("Chaos Mesh never saw %s", objectRef(probe))
			}
			name := ChaosObjectName(tc.spec.Name)
			if l := seen.GetLabels()[FaultLabel]; l != name {
				t.Errorf("label %s = %q, want %q", FaultLabel, l, name)
			}
			if a := seen.GetAnnotations(); a[faultNameAnnotation] != tc.spec.Name || a[faultKindAnnotation] != string(tc.spec.Kind) {
				t.Errorf("annotations %v", a)
			}
			tc.check(t, seen)

			if present := m.exists(t, probe); present == tc.oneShot {
				t.Fatalf("after Inject, object present = %v; want %v (one-shot objects are cleaned up)", present, !tc.oneShot)
			}
			if !tc.oneShot {
				if err := m.Inject(ctx, tc.spec); err == nil || !strings.Contains(err.Error(), "already exists") {
					t.Errorf("second Inject = %v, want an already-exists error", err)
				}
			}
			if err := m.Remove(ctx, tc.spec); err != nil {
				t.Fatalf("Remove: %v", err)
			}
			if m.exists(t, probe) {
				t.Fatal("object still present after Remove")
			}
			if err := m.Remove(ctx, tc.spec); err != nil {
				t.Errorf("second Remove: %v", err)
			}
			if !tc.oneShot { // the name is free again
				if err := m.Inject(ctx, tc.spec); err != nil {
					t.Fatalf("Inject after Remove: %v", err)
				}
				if err := m.Remove(ctx, tc.spec); err != nil {
					t.Fatalf("Remove: %v", err)
				}
			}
		})
	}
}

func TestChaosMeshInjectFailures(t *testing.T) {
	tests := []struct {
		name    string
		mode    string
		spec    Spec
		wantErr error
		want    []string
	}{
		{"missing pod", "", Spec{Kind: PodKill, Name: "k", Namespace: "shop", Pods: []string{"v-0", "gone"}, Grace: ptr(int64(0))}, nil, []string{"shop/gone", "not found"}},
		{"missing peer", "", Spec{Kind: Partition, Name: "p", Namespace: "shop", Pods: []string{"v-0"}, Peers: []string{"gone"}}, nil, []string{"shop/gone"}},
		{"grace periods differ", "", Spec{Kind: PodKill, Name: "k", Namespace: "shop", Pods: []string{"v-0", "v-2"}}, ErrInvalid, []string{"Spec.Grace"}},
		{"first containers differ", "", Spec{Kind: ContainerCrash, Name: "c", Namespace: "shop", Pods: []string{"v-0", "solo"}}, ErrInvalid, []string{"Spec.Container"}},
		{"no such container", "", Spec{Kind: ContainerCrash, Name: "c", Namespace: "shop", Pods: []string{"v-2"}, Container: "exporter"}, ErrInvalid, []string{`no container "exporter"`}},
		{"pod-failure of one of two containers", "", Spec{Kind: PodFailure, Name: "f", Namespace: "shop", Pods: []string{"v-0"}, Container: "valkey"}, ErrUnsupported, []string{"2 containers"}},
		{"invalid spec", "", Spec{Kind: Loss, Name: "l", Namespace: "shop", Pods: []string{"v-0"}}, ErrInvalid, []string{"LossPercent"}},
		{"unknown kind", "", Spec{Kind: "kernel-panic", Name: "x", Namespace: "shop", Pods: []string{"v-0"}}, ErrUnsupported, nil},
		{"Chaos Mesh selects fewer pods", "select-fewer", Spec{Kind: Partition, Name: "p", Namespace: "shop", Pods: []string{"v-0"}, Peers: []string{"v-1", "v-2"}}, nil, []string{"selected 1 of the 2"}},
		{"Chaos Mesh fails to inject", "fail", Spec{Kind: Delay, Name: "d", Namespace: "shop", Pods: []string{"v-0"}, Latency: time.Second}, nil, []string{"chaos-daemon unreachable", "chaos-controller-manager"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newFakeChaosMesh(t, tc.mode, 300*time.Millisecond)
			err := m.Inject(context.Background(), tc.spec)
			if err == nil {
				t.Fatal("Inject succeeded")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			// Nothing of ours is left behind.
			pcs, ncs := &v1alpha1.PodChaosList{}, &v1alpha1.NetworkChaosList{}
			if err := m.c.List(context.Background(), pcs, client.HasLabels{FaultLabel}); err != nil {
				t.Fatal(err)
			}
			if err := m.c.List(context.Background(), ncs, client.HasLabels{FaultLabel}); err != nil {
				t.Fatal(err)
			}
			if n := len(pcs.Items) + len(ncs.Items); n != 0 {
				t.Errorf("%d objects left behind after a failed Inject", n)
			}
		})
	}

	t.Run("context ends", func(t *testing.T) {
		m, _ := newFakeChaosMesh(t, "fail", time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		err := m.Inject(ctx, Spec{Kind: Loss, Name: "l", Namespace: "shop", Pods: []string{"v-0"}, LossPercent: 1})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the context's deadline", err)
		}
	})
}

func TestChaosMeshRemoveAll(t *testing.T) {
	m, _ := newFakeChaosMesh(t, "", 5*time.Second)
	ctx := context.Background()
	for _, s := range []Spec{
		{Kind: Partition, Name: "p", Namespace: "shop", Pods: []string{"v-0"}, Peers: []string{"v-1"}},
		{Kind: PodFailure, Name: "f", Namespace: "shop", Pods: []string{"v-2"}},
	} {
		if err := m.Inject(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// Removing a fault by the name of another kind's object leaves that object alone.
	if err := m.Remove(ctx, Spec{Kind: Delay, Name: "p", Namespace: "shop"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "partition") {
		t.Errorf("Remove(delay p) over partition p = %v, want ErrInvalid naming the partition", err)
	}
	if err := m.Remove(ctx, Spec{Kind: PodKill, Name: "f", Namespace: "shop"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Remove(pod-kill f) over pod-failure f = %v, want ErrInvalid", err)
	}
	p := &v1alpha1.NetworkChaos{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop"}}
	f := &v1alpha1.PodChaos{ObjectMeta: metav1.ObjectMeta{Name: "f", Namespace: "shop"}}
	if !m.exists(t, p) || !m.exists(t, f) {
		t.Fatal("a refused Remove deleted the other fault's object")
	}
	if err := m.RemoveAll(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	pcs, ncs := &v1alpha1.PodChaosList{}, &v1alpha1.NetworkChaosList{}
	if err := m.c.List(ctx, pcs); err != nil {
		t.Fatal(err)
	}
	if err := m.c.List(ctx, ncs); err != nil {
		t.Fatal(err)
	}
	if len(ncs.Items) != 0 || len(pcs.Items) != 1 || pcs.Items[0].Name != "someone-elses" {
		t.Errorf("after RemoveAll: %d NetworkChaos, PodChaos %v; want only someone-elses", len(ncs.Items), pcs.Items)
	}
}

func TestChaosMeshCapabilities(t *testing.T) {
	m := newChaosMesh(nil)
	for _, k := range []Kind{ContainerCrash, PodKill, PodFailure, Partition, APIServerPartition, Delay, Loss} {
		if !Supports(m, k) {
			t.Errorf("Chaos Mesh back end lacks %s", k)
		}
		if _, err := objectFor(k); err != nil {
			t.Errorf("%s has no Chaos Mesh object: %v", k, err)
		}
	}
	if err := m.Remove(context.Background(), Spec{Kind: "kernel-panic", Name: "x", Namespace: "ns"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Remove of an unknown kind = %v, want ErrUnsupported", err)
	}
	if err := m.Remove(context.Background(), Spec{Kind: Partition, Name: "x"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Remove without a namespace = %v, want ErrInvalid", err)
	}
}

// stubCluster is a cluster.Cluster that only has a REST config.
type stubCluster struct{ cfg *rest.Config }

func (s stubCluster) Name() string                     { return "stub" }
func (s stubCluster) RESTConfig() *rest.Config         { return rest.CopyConfig(s.cfg) }
func (s stubCluster) Kubeconfig() string               { return "" }
func (s stubCluster) Delete(ctx context.Context) error { return nil }

func TestFor(t *testing.T) {
	if inj, err := For(context.Background(), &local.Cluster{}); err != nil {
		t.Fatalf("For(local) = %v", err)
	} else if _, ok := inj.(*Native); !ok {
		t.Errorf("For(local) = %T, want *Native", inj)
	}

	tests := []struct {
		name      string
		resources []string // served in chaos-mesh.org/v1alpha1; nil: the group is not served
		wantErr   error
	}{
		{"Chaos Mesh installed", []string{"podchaos", "networkchaos"}, nil},
		{"Chaos Mesh missing", nil, ErrChaosMeshMissing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/apis/chaos-mesh.org/v1alpha1" || tc.resources == nil {
					http.NotFound(w, r)
					return
				}
				l := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "chaos-mesh.org/v1alpha1"}
				for _, n := range tc.resources {
					l.APIResources = append(l.APIResources, metav1.APIResource{Name: n, Namespaced: true, Kind: n})
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(l)
			}))
			defer srv.Close()
			inj, err := For(context.Background(), stubCluster{&rest.Config{Host: srv.URL}})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), "stub") {
					t.Fatalf("For = %v, want %v naming the cluster", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := inj.(*ChaosMesh); !ok {
				t.Errorf("For = %T, want *ChaosMesh", inj)
			}
		})
	}
}
