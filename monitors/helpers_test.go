package monitors

import (
	"context"
	"strconv"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/internal/testing/valkeytest"
	"github.com/gauntlet-dev/gauntlet/model"
)

const testNS = "gauntlet-test"

// The servers of a test cluster listen on distinct loopback addresses and one
// port, as pods do on their own IPs and 6379.
const (
	primaryIP = "127.0.0.2"
	replicaIP = "127.0.0.3"
)

func needServer(t *testing.T) {
	t.Helper()
	if _, err := valkeytest.Binary(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
}

// pair is a primary and (optionally) a replica on primaryIP and replicaIP, same port.
type pair struct {
	port             int
	primary, replica *valkeytest.Server
}

// startPair starts a primary with primaryArgs and, when withReplica, a replica of
// it; every server gets commonArgs. The servers are killed at cleanup.
func startPair(t *testing.T, withReplica bool, primaryArgs, commonArgs []string) *pair {
	t.Helper()
	needServer(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := valkeytest.FreePort(primaryIP, replicaIP)
		if err != nil {
			t.Fatal(err)
		}
		p := &pair{port: port}
		args := append(append([]string{}, commonArgs...), primaryArgs...)
		p.primary, err = valkeytest.Start(ctx, valkeytest.Options{Host: primaryIP, Port: port, Dir: dir, Args: args})
		if err != nil {
			lastErr = err
			continue
		}
		t.Cleanup(p.primary.Stop)
		if withReplica {
			args := append(append([]string{}, commonArgs...), "--replicaof", primaryIP, strconv.Itoa(port))
			p.replica, err = valkeytest.Start(ctx, valkeytest.Options{Host: replicaIP, Port: port, Dir: dir, Args: args})
			if err != nil {
				p.primary.Stop()
				lastErr = err
				continue
			}
			t.Cleanup(p.replica.Stop)
		}
		return p
	}
	t.Fatalf("start servers: %v", lastErr)
	return nil
}

// client connects directly to a server, for test setup (FLUSHALL, SET).
func client(t *testing.T, addr, password string) vk.Client {
	t.Helper()
	c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true, Password: password})
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

// crObject builds a ValkeyCluster as declared.
func crObject(name string, replicas int, spec map[string]any) model.Object {
	s := map[string]any{"replicas": float64(replicas)} // as decoded from JSON
	for k, v := range spec {
		s[k] = v
	}
	return model.Object{
		"apiVersion": "valkey.gauntlet.dev/v1alpha1",
		"kind":       "ValkeyCluster",
		"metadata":   map[string]any{"name": name, "namespace": testNS},
		"spec":       s,
	}
}

// podObject is a Valkey pod of cluster cr; an empty ip leaves it Pending.
func podObject(cr, name, ip, role string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: map[string]string{
			valkeyLabelName: valkeyAppName, valkeyLabelInstance: cr,
		}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if role != "" {
		p.Labels[ValkeyRoleLabel] = role
	}
	if ip != "" {
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = ip
	}
	return p
}

// endpoint of an EndpointSlice; ready nil means "unknown" (read as ready).
type ep struct {
	pod   string
	ip    string
	ready *bool
}

func boolp(b bool) *bool { return &b }

func serviceObject(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{valkeyLabelName: valkeyAppName, valkeyLabelInstance: name, ValkeyRoleLabel: "primary"}},
	}
}

func sliceObject(svc, name string, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, e := range eps {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{e.ip},
			Conditions: discoveryv1.EndpointConditions{Ready: e.ready},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: testNS, Name: e.pod},
		})
	}
	return s
}

func secretObject(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func fakeKube(objs ...runtime.Object) *fake.Clientset { return fake.NewClientset(objs...) }

// waitSample samples until cond holds (or fails the test after 15s).
func waitSample(t *testing.T, m *ValkeyMonitor, env Env, what string, cond func(*model.SystemSample) bool) *model.SystemSample {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var last *model.SystemSample
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		s, err := m.Sample(ctx, env)
		cancel()
		if err == nil {
			last = s
			if cond(s) {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within 15s; last sample %+v, last error %v", what, last, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func member(s *model.SystemSample, pod string) model.Member {
	for _, m := range s.Members {
		if m.Pod == pod {
			return m
		}
	}
	return model.Member{}
}

// sampleWithin takes a sample and fails the test unless it ends before the
// deadline: a frozen or stopped server must not stall it.
func sampleWithin(t *testing.T, m *ValkeyMonitor, env Env, d time.Duration) *model.SystemSample {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	s, err := m.Sample(ctx, env)
	if err != nil {
		t.Fatalf("sample: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the sample used up its %v deadline: a frozen or stopped server stalled it", d)
	}
	return s
}
