package controlplane

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gauntlet-dev/gauntlet/internal/testenv"
)

func binariesOrSkip(t *testing.T) Binaries {
	t.Helper()
	b, err := FindBinaries(context.Background())
	if errors.Is(err, ErrBinaryMissing) {
		testenv.Unavailable(t, "control plane not built (run `make controlplane`): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStartServesAPI(t *testing.T) {
	bins := binariesOrSkip(t)
	ports := make([]int, 3)
	for i := range ports {
		p, err := FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	cp, err := Start(ctx, Config{
		Name: "cptest", Dir: t.TempDir(), Binaries: bins, Address: netip.MustParseAddr("127.0.0.1"),
		APIServerPort: ports[0], EtcdPort: ports[1], EtcdPeerPort: ports[2],
		ServiceCIDR: netip.MustParsePrefix("10.96.0.0/16"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("API server ready after %v", time.Since(start))
	defer func() {
		if err := cp.Stop(context.Background()); err != nil {
			t.Error(err)
		}
		for name, pid := range cp.PIDs() {
			t.Errorf("%s (pid %d) still running after Stop", name, pid)
		}
	}()
	cs, err := kubernetes.NewForConfig(cp.AdminRESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != Version {
		t.Errorf("server version %s, want %s", v.GitVersion, Version)
	}
	// The controller-manager publishes kube-root-ca.crt into every namespace.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-root-ca.crt never appeared: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("controller-manager active after %v", time.Since(start))
}

func TestFindBinariesWrongVersion(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		script := "#!/bin/sh\necho 'Kubernetes v1.20.0'\n"
		if n == "etcd" {
			script = "#!/bin/sh\necho 'etcd Version: 3.6.5'\n"
		}
		if err := os.WriteFile(dir+"/"+n, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(EnvBinDir, dir)
	_, err := FindBinaries(context.Background())
	if !errors.Is(err, ErrBinaryVersion) {
		t.Fatalf("err = %v, want ErrBinaryVersion", err)
	}
}

func TestCheckPortFree(t *testing.T) {
	p, err := FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPortFree("127.0.0.1", p); err != nil {
		t.Fatalf("free port reported busy: %v", err)
	}
}

// TestStartPortTaken: seed 6 of the untuned campaign died with a nil-pointer
// panic when etcd found its free port taken (the cleanup ran on the nil result
// and the API server it had started was left running). A taken port is
// ErrPortInUse, nothing is left running, and StartFreshPorts starts again on
// other ports.
func TestStartPortTaken(t *testing.T) {
	bins := binariesOrSkip(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	free := func() int {
		p, err := FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := Config{Name: "cptest", Dir: t.TempDir(), Binaries: bins, Address: netip.MustParseAddr("127.0.0.1"),
		ServiceCIDR: netip.MustParsePrefix("10.96.0.0/16")}
	one := cfg
	one.APIServerPort, one.EtcdPort, one.EtcdPeerPort = free(), takenPort, free()
	cp, err := Start(ctx, one)
	if cp != nil || !errors.Is(err, ErrPortInUse) {
		t.Fatalf("etcd on a taken port: control plane %v, error %v, want ErrPortInUse", cp, err)
	}
	if out, _ := exec.Command("pgrep", "-f", one.Dir).Output(); len(out) > 0 {
		t.Errorf("processes of the failed start still run: %s", out)
	}
	calls := 0
	cp, err = StartFreshPorts(ctx, cfg, func() ([3]int, error) {
		calls++
		if calls == 1 {
			return [3]int{free(), takenPort, free()}, nil
		}
		return [3]int{free(), free(), free()}, nil
	})
	if err != nil {
		t.Fatalf("StartFreshPorts: %v", err)
	}
	if err := cp.Stop(context.Background()); err != nil {
		t.Error(err)
	}
	if calls != 2 {
		t.Errorf("ports chosen %d times, want 2 (the taken port, then free ones)", calls)
	}
}
