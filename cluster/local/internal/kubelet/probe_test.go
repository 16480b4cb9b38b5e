package kubelet

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestHTTPProbe(t *testing.T) {
	var gotUA, gotHeader, gotHost string
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		gotUA, gotHeader, gotHost = r.UserAgent(), r.Header.Get("X-Probe"), r.Host
		_, _ = w.Write([]byte("fine"))
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	mux.HandleFunc("/redirect-away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://198.51.100.1/elsewhere", http.StatusFound)
	})
	mux.HandleFunc("/redirect-fail", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/fail", http.StatusFound) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { time.Sleep(2 * time.Second) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	addr := netip.MustParseAddrPort(srv.Listener.Addr().String())
	spec := corev1.Container{Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(addr.Port())}}}

	tests := []struct {
		name    string
		action  corev1.HTTPGetAction
		timeout time.Duration
		ok      bool
		msg     string
	}{
		{"ok by number", corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt32(int32(addr.Port()))}, time.Second, true, ""},
		{"ok by name with header", corev1.HTTPGetAction{Path: "ok", Port: intstr.FromString("http"),
			HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "yes"}, {Name: "Host", Value: "example.test"}}}, time.Second, true, ""},
		{"500", corev1.HTTPGetAction{Path: "/fail", Port: intstr.FromString("http")}, time.Second, false, "statuscode: 500"},
		{"redirect elsewhere counts as success", corev1.HTTPGetAction{Path: "/redirect-away", Port: intstr.FromString("http")}, time.Second, true, ""},
		{"redirect followed on the same host", corev1.HTTPGetAction{Path: "/redirect-fail", Port: intstr.FromString("http")}, time.Second, false, "statuscode: 500"},
		{"timeout", corev1.HTTPGetAction{Path: "/slow", Port: intstr.FromString("http")}, 200 * time.Millisecond, false, "deadline"},
		{"unknown port name", corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromString("nope")}, time.Second, false, `couldn't find port "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			ok, msg := httpProbe(ctx, &tt.action, spec, addr.Addr())
			if ok != tt.ok || !strings.Contains(msg, tt.msg) {
				t.Fatalf("httpProbe = %v %q, want %v containing %q", ok, msg, tt.ok, tt.msg)
			}
		})
	}
	if gotUA != probeUserAgent || gotHeader != "yes" || gotHost != "example.test" {
		t.Errorf("request: user agent %q, header %q, host %q", gotUA, gotHeader, gotHost)
	}
}

func TestTCPProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	lo := netip.MustParseAddr("127.0.0.1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if ok, msg := tcpProbe(ctx, "", intstr.FromInt32(int32(port)), corev1.Container{}, lo); !ok {
		t.Fatalf("tcp probe on a listener failed: %s", msg)
	}
	l.Close()
	if ok, msg := tcpProbe(ctx, "", intstr.FromString(strconv.Itoa(port)), corev1.Container{}, lo); ok || !strings.Contains(msg, "refused") {
		t.Fatalf("tcp probe on a closed port = %v %q", ok, msg)
	}
}

func TestProbeSettingsDefaults(t *testing.T) {
	s := settingsOf(&corev1.Probe{})
	if s.period != 10*time.Second || s.timeout != time.Second || s.success != 1 || s.failure != 3 || s.initialDelay != 0 {
		t.Errorf("defaults = %+v", s)
	}
	s = settingsOf(&corev1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 2, TimeoutSeconds: 3, SuccessThreshold: 2, FailureThreshold: 1})
	if s.period != 2*time.Second || s.timeout != 3*time.Second || s.success != 2 || s.failure != 1 || s.initialDelay != 5*time.Second {
		t.Errorf("settings = %+v", s)
	}
}

func TestStaticExpand(t *testing.T) {
	env := []corev1.EnvVar{{Name: "PORT", Value: "6379"}, {Name: "SECRET", ValueFrom: &corev1.EnvVarSource{}}}
	got := staticExpand([]string{"redis-cli", "-p", "$(PORT)", "$(SECRET)"}, env)
	if strings.Join(got, " ") != "redis-cli -p 6379 $(SECRET)" {
		t.Errorf("staticExpand = %q", got)
	}
}

func TestRequireClientCN(t *testing.T) {
	// Without TLS (no verified client certificate) every request is refused.
	h := requireClientCN([]string{"kube-apiserver-kubelet-client"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), testLogger())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/pods", nil))
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("no client certificate: status %d, want 401", rec.Code)
	}
}

// TestNextTick: startup and liveness probes run on the pod worker's ticker: a
// container's first probe comes at the next tick after it started, never at
// once (CloudNativePG seed 2: a one-failure startup budget failed on every
// start because the embedded kubelet probed as the container started).
func TestNextTick(t *testing.T) {
	origin := time.Date(2026, 11, 26, 21, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at, want time.Duration
	}{
		{0, 10 * time.Second},                // the worker's first tick probes nothing yet
		{3 * time.Second, 10 * time.Second},  // a container started 3 s in: probed 7 s later
		{10 * time.Second, 10 * time.Second}, // on a tick
		{25 * time.Second, 30 * time.Second}, // a restart between ticks
		{-5 * time.Second, 10 * time.Second}, // before the worker (clock skew): its first tick
	} {
		if got := nextTick(origin, 10*time.Second, origin.Add(tc.at)).Sub(origin); got != tc.want {
			t.Errorf("nextTick(+%s) = +%s, want +%s", tc.at, got, tc.want)
		}
	}
}
