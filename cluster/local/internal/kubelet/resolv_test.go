package kubelet

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseResolvConf(t *testing.T) {
	p := filepath.Join(t.TempDir(), "resolv.conf")
	body := "# generated\nnameserver 10.0.0.2\nnameserver 10.0.0.3 # second\ndomain corp.example\nsearch a.example b.example\noptions ndots:2 rotate\n; comment\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	servers, searches, options := parseResolvConf(p)
	if want := []string{"10.0.0.2", "10.0.0.3"}; !reflect.DeepEqual(servers, want) {
		t.Errorf("servers = %v, want %v", servers, want)
	}
	if want := []string{"a.example", "b.example"}; !reflect.DeepEqual(searches, want) {
		t.Errorf("searches = %v, want %v (the last search/domain line wins)", searches, want)
	}
	if want := []string{"ndots:2", "rotate"}; !reflect.DeepEqual(options, want) {
		t.Errorf("options = %v, want %v", options, want)
	}
	if s, _, _ := parseResolvConf(filepath.Join(t.TempDir(), "missing")); s != nil {
		t.Errorf("a missing file gives %v, want nothing", s)
	}
}

// TestResolvConfDefaultWithDNSConfig: dnsPolicy Default with dnsConfig is the
// node's resolv.conf merged with dnsConfig, as the kubelet does.
func TestResolvConfDefaultWithDNSConfig(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{
		DNSPolicy: corev1.DNSDefault,
		DNSConfig: &corev1.PodDNSConfig{Nameservers: []string{"192.0.2.53"}, Searches: []string{"extra.example"}},
	}}
	got := resolvConf(pod, nil, "cluster.local")
	servers, searches, _ := parseResolvConf(hostResolvConf)
	if !strings.Contains(got, "nameserver 192.0.2.53\n") || !strings.Contains(got, "extra.example") {
		t.Fatalf("resolv.conf = %q, want dnsConfig's server and search", got)
	}
	for _, s := range servers {
		if !strings.Contains(got, "nameserver "+s+"\n") {
			t.Errorf("resolv.conf = %q lacks the node's nameserver %s", got, s)
		}
	}
	if want := "search " + strings.Join(append(searches, "extra.example"), " ") + "\n"; !strings.HasPrefix(got, want) {
		t.Errorf("resolv.conf = %q, want it to start with %q", got, want)
	}
}
