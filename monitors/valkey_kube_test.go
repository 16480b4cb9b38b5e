package monitors

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gauntlet-dev/gauntlet/model"
)

func TestParseValkeyCR(t *testing.T) {
	tests := []struct {
		name     string
		cr       model.Object
		want     valkeySpec
		required int
		wantErr  string
	}{
		{
			name:     "defaults",
			cr:       model.Object{"metadata": map[string]any{"name": "vk"}},
			want:     valkeySpec{name: "vk", replicas: 3},
			required: 1,
		},
		{
			name: "full",
			cr: model.Object{"metadata": map[string]any{"name": "vk", "namespace": "ns"}, "spec": map[string]any{
				"replicas": int64(1),
				"config":   map[string]any{"maxmemory": "1mb", "appendfsync": "always"},
				"auth":     map[string]any{"passwordSecret": map[string]any{"name": "s", "key": "pw"}},
				"tls":      map[string]any{"enabled": true, "secretName": "t"},
			}},
			want:     valkeySpec{name: "vk", namespace: "ns", replicas: 1, configKeys: []string{"appendfsync", "maxmemory"}, authSecret: "s", authKey: "pw", tlsSecret: "t"},
			required: 0,
		},
		{
			name:     "json number replicas, TLS off keeps no secret",
			cr:       model.Object{"metadata": map[string]any{"name": "vk"}, "spec": map[string]any{"replicas": json.Number("2"), "tls": map[string]any{"enabled": false, "secretName": "t"}}},
			want:     valkeySpec{name: "vk", replicas: 2},
			required: 1,
		},
		{name: "fractional replicas", cr: model.Object{"metadata": map[string]any{"name": "vk"}, "spec": map[string]any{"replicas": 1.5}}, wantErr: "spec.replicas"},
		{name: "incomplete secret ref", cr: model.Object{"metadata": map[string]any{"name": "vk"}, "spec": map[string]any{"auth": map[string]any{"passwordSecret": map[string]any{"name": "s"}}}}, wantErr: "name and key"},
		{name: "TLS without secret", cr: model.Object{"metadata": map[string]any{"name": "vk"}, "spec": map[string]any{"tls": map[string]any{"enabled": true}}}, wantErr: "secretName is empty"},
		{name: "nil", cr: nil, wantErr: "no custom resource"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseValkeyCR(tc.cr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if r := got.requiredAcks(); r != tc.required {
				t.Errorf("requiredAcks %d, want %d", r, tc.required)
			}
		})
	}
}

func TestClientService(t *testing.T) {
	fqdn := sliceObject("vk", "vk-fqdn", ep{"vk-9", "vk-9.example", nil})
	fqdn.AddressType = discoveryv1.AddressTypeFQDN
	tests := []struct {
		name     string
		objs     []runtime.Object
		exists   bool
		selected []string
		ips      []string
	}{
		{name: "no Service", objs: []runtime.Object{sliceObject("vk", "vk-a", ep{"vk-0", "10.0.0.1", nil})}, exists: false},
		{name: "Service without slices", objs: []runtime.Object{serviceObject("vk")}, exists: true, selected: []string{}},
		{
			name: "ready, unknown and not ready endpoints over two slices",
			objs: []runtime.Object{
				serviceObject("vk"),
				sliceObject("vk", "vk-a", ep{"vk-1", "10.0.0.2", boolp(true)}, ep{"vk-2", "10.0.0.3", boolp(false)}),
				sliceObject("vk", "vk-b", ep{"vk-0", "10.0.0.1", nil}, ep{"vk-1", "10.0.0.2", boolp(true)}),
				sliceObject("vk-headless", "vk-headless-a", ep{"vk-3", "10.0.0.4", nil}),
				fqdn,
			},
			exists:   true,
			selected: []string{"vk-0", "vk-1"},
			ips:      []string{"10.0.0.1", "10.0.0.2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			exists, eps, err := clientService(context.Background(), fakeKube(tc.objs...), testNS, "vk")
			if err != nil {
				t.Fatal(err)
			}
			if exists != tc.exists {
				t.Fatalf("exists %v, want %v", exists, tc.exists)
			}
			if !exists {
				return
			}
			if got := selectedPods(eps); !reflect.DeepEqual(got, tc.selected) {
				t.Errorf("selected %v, want %v", got, tc.selected)
			}
			var ips []string
			for _, e := range eps {
				ips = append(ips, e.ip)
			}
			if !reflect.DeepEqual(ips, tc.ips) {
				t.Errorf("endpoint IPs %v, want %v", ips, tc.ips)
			}
		})
	}
}

func TestSecurity(t *testing.T) {
	spec := valkeySpec{name: "vk", authSecret: "auth", authKey: "pw", tlsSecret: "tls"}
	tests := []struct {
		name        string
		objs        []runtime.Object
		wantErr     string
		wantMissing bool
		wantCert    bool
	}{
		{name: "both present", objs: []runtime.Object{
			secretObject("auth", map[string]string{"pw": "x"}),
			secretObject("tls", map[string]string{"ca.crt": "CA", "tls.crt": "C", "tls.key": "K"}),
		}, wantCert: true},
		{name: "CA only", objs: []runtime.Object{
			secretObject("auth", map[string]string{"pw": "x"}),
			secretObject("tls", map[string]string{"ca.crt": "CA"}),
		}},
		{name: "auth secret missing", objs: []runtime.Object{secretObject("tls", map[string]string{"ca.crt": "CA"})}, wantErr: "spec.auth.passwordSecret) does not exist", wantMissing: true},
		{name: "TLS secret missing", objs: []runtime.Object{secretObject("auth", map[string]string{"pw": "x"})}, wantErr: "spec.tls.secretName) does not exist", wantMissing: true},
		{name: "no ca.crt", objs: []runtime.Object{
			secretObject("auth", map[string]string{"pw": "x"}),
			secretObject("tls", map[string]string{"tls.crt": "C", "tls.key": "K"}),
		}, wantErr: "has no ca.crt", wantMissing: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sec, err := security(context.Background(), fakeKube(tc.objs...), testNS, spec)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if errors.Is(err, errSecretMissing) != tc.wantMissing {
					t.Errorf("errors.Is(err, errSecretMissing) = %v, want %v", !tc.wantMissing, tc.wantMissing)
				}
				// A missing Secret leaves the monitor nothing to dial with: its
				// members are not "unreachable" servers (roll-safety and
				// system-state do not count them).
				if want := map[bool]string{true: model.UnreachableNoCredentials, false: model.UnreachableError}[tc.wantMissing]; securityUnreachable(err) != want {
					t.Errorf("securityUnreachable = %q, want %q", securityUnreachable(err), want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sec.Password != "x" || sec.TLS == nil || string(sec.TLS.CA) != "CA" {
				t.Fatalf("security %+v, want password x and CA", sec)
			}
			if (len(sec.TLS.Cert) > 0) != tc.wantCert {
				t.Errorf("client certificate present %v, want %v", len(sec.TLS.Cert) > 0, tc.wantCert)
			}
			named := withServerNames(sec, testNS, "vk", "vk-0")
			want := []string{"vk-0.vk-headless.gauntlet-test.svc", "vk-0.vk-headless.gauntlet-test.svc.cluster.local", "vk.gauntlet-test.svc", "vk.gauntlet-test.svc.cluster.local"}
			if !reflect.DeepEqual(named.TLS.ServerNames, want) {
				t.Errorf("server names %v, want %v", named.TLS.ServerNames, want)
			}
			if sec.TLS.ServerNames != nil {
				t.Error("withServerNames modified its argument")
			}
		})
	}
}
