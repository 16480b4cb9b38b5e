package monitors

import (
	"context"
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gauntlet-dev/gauntlet/internal/testing/valkeytest"
	"github.com/gauntlet-dev/gauntlet/model"
)

func TestValkeyMonitorSample(t *testing.T) {
	p := startPair(t, true, []string{"--maxmemory-policy", "allkeys-lru", "--hz", "17"}, nil)
	primaryAddr := net.JoinHostPort(primaryIP, strconv.Itoa(p.port))
	cr := crObject("vk", 2, map[string]any{"config": map[string]any{"maxmemory-policy": "allkeys-lru", "hz": "17"}})
	kube := fakeKube(
		podObject("vk", "vk-0", primaryIP, "primary"),
		podObject("vk", "vk-1", replicaIP, "replica"),
		podObject("vk", "vk-2", "", ""),
		podObject("other", "other-0", primaryIP, "primary"), // another cluster's pod: not a member
		serviceObject("vk"),
		sliceObject("vk", "vk-abc", ep{"vk-0", primaryIP, boolp(true)}, ep{"vk-1", replicaIP, boolp(false)}),
	)
	env := Env{Kube: kube, Namespace: testNS, CR: cr}
	m := NewValkeyMonitor(ValkeyMonitorOptions{Port: p.port})
	t.Cleanup(m.Close)

	s := waitSample(t, m, env, "replica linked", func(s *model.SystemSample) bool { return member(s, "vk-1").LinkUp })
	// Write, so that the offsets move past the initial sync, then read again.
	c := client(t, p.primary.Addr, "")
	if err := c.Do(context.Background(), c.B().Set().Key("k").Value("v").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	s = waitSample(t, m, env, "offsets", func(s *model.SystemSample) bool {
		return member(s, "vk-1").Offset > 0 && member(s, "vk-1").Offset == member(s, "vk-0").Offset
	})

	var pods []string
	for _, mem := range s.Members {
		pods = append(pods, mem.Pod)
	}
	if want := []string{"vk-0", "vk-1", "vk-2"}; !reflect.DeepEqual(pods, want) {
		t.Fatalf("members %v, want %v (sorted, this cluster's only)", pods, want)
	}
	if s.Service != "vk" || !reflect.DeepEqual(s.Selected, []string{"vk-0"}) {
		t.Errorf("service %q selected %v, want vk selecting [vk-0] (the not-ready endpoint left out)", s.Service, s.Selected)
	}
	if s.Taken.IsZero() {
		t.Error("Taken is zero")
	}
	tests := []struct {
		pod  string
		want model.Member
	}{
		{"vk-0", model.Member{Pod: "vk-0", Address: primaryAddr, Reachable: true, Role: model.RolePrimary, Replicas: 1,
			Config: map[string]string{"maxmemory-policy": "allkeys-lru", "hz": "17"}}},
		{"vk-1", model.Member{Pod: "vk-1", Address: net.JoinHostPort(replicaIP, strconv.Itoa(p.port)), Reachable: true, Role: model.RoleReplica,
			Follows: primaryAddr, LinkUp: true, Config: map[string]string{"maxmemory-policy": "noeviction", "hz": "10"}}},
		{"vk-2", model.Member{Pod: "vk-2", Unreachable: model.UnreachableNoAddress}},
	}
	for _, tc := range tests {
		t.Run(tc.pod, func(t *testing.T) {
			got := member(s, tc.pod)
			if tc.want.Reachable && got.Offset <= 0 {
				t.Errorf("offset %d, want > 0", got.Offset)
			}
			if got.Labels[valkeyLabelInstance] != "vk" {
				t.Errorf("labels %v, want the pod's labels", got.Labels)
			}
			if !tc.want.Reachable && !strings.Contains(got.Error, "no IP") {
				t.Errorf("error %q, want it to say the pod has no IP", got.Error)
			}
			got.Offset, got.Labels, got.Error = 0, nil, ""
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("member\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}

	t.Run("paused primary is unreachable within the sample's bound", func(t *testing.T) {
		if err := p.primary.Pause(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = p.primary.Resume() }()
		s := sampleWithin(t, m, env, 2*time.Second)
		if got := member(s, "vk-0"); got.Reachable || got.Error == "" {
			t.Errorf("paused primary %+v, want unreachable with an error", got)
		}
		if got := member(s, "vk-1"); !got.Reachable {
			t.Errorf("replica %+v, want reachable while the primary is paused", got)
		}
		if err := p.primary.Resume(); err != nil {
			t.Fatal(err)
		}
		waitSample(t, m, env, "primary reachable after SIGCONT", func(s *model.SystemSample) bool { return member(s, "vk-0").Reachable })
	})

	t.Run("stopped replica is unreachable", func(t *testing.T) {
		p.replica.Stop()
		s := sampleWithin(t, m, env, 2*time.Second)
		if got := member(s, "vk-1"); got.Reachable || got.Error == "" || got.Role != "" {
			t.Errorf("stopped replica %+v, want unreachable with an error and no role", got)
		}
	})

	t.Run("restarted server is read again", func(t *testing.T) {
		// A container restart: a new, empty server on the same address.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		s, err := valkeytest.Start(ctx, valkeytest.Options{Host: replicaIP, Port: p.port, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Stop()
		waitSample(t, m, env, "restarted server reachable", func(s *model.SystemSample) bool {
			got := member(s, "vk-1")
			return got.Reachable && got.Role == model.RolePrimary && got.Error == ""
		})
	})

	t.Run("pods gone: clients released", func(t *testing.T) {
		empty := Env{Kube: fakeKube(), Namespace: testNS, CR: cr}
		s, err := m.Sample(context.Background(), empty)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Members) != 0 || s.Service != "" || s.Selected != nil {
			t.Errorf("sample %+v, want no members and no Service", s)
		}
		if n := m.poolFor(testNS).pool.Len(); n != 0 {
			t.Errorf("%d clients still cached for pods that are gone", n)
		}
		m.Forget(testNS)
		if _, ok := m.pools[testNS]; ok {
			t.Error("Forget kept the namespace's pool")
		}
	})
}

func TestValkeyMonitorAuth(t *testing.T) {
	p := startPair(t, false, nil, []string{"--requirepass", "s3cret"})
	auth := map[string]any{"auth": map[string]any{"passwordSecret": map[string]any{"name": "vk-auth", "key": "password"}}}
	tests := []struct {
		name    string
		objs    []runtime.Object
		wantErr string // "" = reachable
	}{
		{"secret missing", nil, `Secret gauntlet-test/vk-auth (spec.auth.passwordSecret) does not exist`},
		{"key missing", []runtime.Object{secretObject("vk-auth", map[string]string{"other": "s3cret"})}, `has no key "password"`},
		{"wrong password", []runtime.Object{secretObject("vk-auth", map[string]string{"password": "wrong"})}, "authentication failed"},
		{"right password", []runtime.Object{secretObject("vk-auth", map[string]string{"password": "s3cret"})}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := append([]runtime.Object{podObject("vk", "vk-0", primaryIP, "primary")}, tc.objs...)
			env := Env{Kube: fakeKube(objs...), Namespace: testNS, CR: crObject("vk", 1, auth)}
			m := NewValkeyMonitor(ValkeyMonitorOptions{Port: p.port})
			defer m.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			s, err := m.Sample(ctx, env)
			if err != nil {
				t.Fatalf("sample: %v", err)
			}
			got := member(s, "vk-0")
			if tc.wantErr == "" {
				if !got.Reachable || got.Role != model.RolePrimary {
					t.Fatalf("member %+v, want a reachable primary", got)
				}
				return
			}
			if got.Reachable || !strings.Contains(got.Error, tc.wantErr) {
				t.Fatalf("member %+v, want unreachable with an error containing %q", got, tc.wantErr)
			}
			// Roll safety tells a locked-out monitor by this field alone.
			if wantAuth := tc.name == "wrong password"; (got.Unreachable == model.UnreachableAuth) != wantAuth || got.Unreachable == "" {
				t.Fatalf("member unreachable %q, want auth: %v", got.Unreachable, wantAuth)
			}
		})
	}
}

func TestValkeyMonitorErrors(t *testing.T) {
	tests := []struct {
		name    string
		env     Env
		wantErr string
	}{
		{"no CR", Env{Kube: fakeKube(), Namespace: testNS}, "no custom resource"},
		{"no name", Env{Kube: fakeKube(), Namespace: testNS, CR: model.Object{"spec": map[string]any{}}}, "no metadata.name"},
		{"no kube", Env{Namespace: testNS, CR: crObject("vk", 1, nil)}, "Env.Kube is nil"},
		{"no namespace", Env{Kube: fakeKube(), CR: model.Object{"metadata": map[string]any{"name": "vk"}}}, "no namespace"},
	}
	m := NewValkeyMonitor(ValkeyMonitorOptions{})
	defer m.Close()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Sample(context.Background(), tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestValkeyTLS(t *testing.T) {
	needServer(t)
	ca, err := valkeytest.NewPKI()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The certificate names the pod's DNS name only (no IP SAN), as certificates
	// for StatefulSet pods usually do.
	cert, err := ca.Issue(dir, nil, []string{"vk-0.vk-headless." + testNS + ".svc"})
	if err != nil {
		t.Fatal(err)
	}
	port, err := valkeytest.FreePort(primaryIP)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// The plain port (another free one) serves testserver's readiness probe only.
	s, err := valkeytest.Start(ctx, valkeytest.Options{Host: primaryIP, Dir: dir, Args: cert.TLSArgs(port)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)

	tlsSpec := map[string]any{"tls": map[string]any{"enabled": true, "secretName": "vk-tls"}}
	kube := fakeKube(
		podObject("vk", "vk-0", primaryIP, "primary"),
		serviceObject("vk"),
		sliceObject("vk", "vk-abc", ep{"vk-0", primaryIP, nil}),
		secretObject("vk-tls", map[string]string{"ca.crt": string(ca.CAPEM), "tls.crt": string(cert.CertPEM), "tls.key": string(cert.KeyPEM)}),
	)
	env := Env{Kube: kube, Namespace: testNS, CR: crObject("vk", 1, tlsSpec)}

	t.Run("monitor", func(t *testing.T) {
		m := NewValkeyMonitor(ValkeyMonitorOptions{Port: port})
		defer m.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		sample, err := m.Sample(ctx, env)
		if err != nil {
			t.Fatal(err)
		}
		if got := member(sample, "vk-0"); !got.Reachable || got.Role != model.RolePrimary {
			t.Fatalf("member %+v, want a reachable primary over TLS", got)
		}
		// Plain text to a TLS port fails, and says so.
		plain := Env{Kube: kube, Namespace: testNS, CR: crObject("vk", 1, nil)}
		sample, err = m.Sample(ctx, plain)
		if err != nil {
			t.Fatal(err)
		}
		if got := member(sample, "vk-0"); got.Reachable || got.Error == "" {
			t.Fatalf("member %+v read without TLS, want unreachable", got)
		}
	})
	t.Run("workload", func(t *testing.T) {
		run, err := NewValkeyWorkload(fastOpts(port)).Start(context.Background(), env)
		if err != nil {
			t.Fatal(err)
		}
		defer stopRun(t, run)
		ops := collect(t, run, "3 writes over TLS", writesOK(3))
		for _, o := range ops {
			if !o.OK {
				t.Fatalf("op %+v failed over TLS", o)
			}
		}
	})
}
