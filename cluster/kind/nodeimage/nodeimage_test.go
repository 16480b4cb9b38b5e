package nodeimage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/cluster/kind/internal/e2ekit"
	"sigs.k8s.io/yaml"
)

func TestResolveIn(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "usr/lib/x86_64-linux-gnu"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "usr/lib64"), 0o755))
	must(os.WriteFile(filepath.Join(root, "usr/lib/x86_64-linux-gnu/ld-2.36.so"), []byte("x"), 0o755))
	must(os.Symlink("usr/lib", filepath.Join(root, "lib")))      // merged /usr, relative
	must(os.Symlink("/usr/lib64", filepath.Join(root, "lib64"))) // absolute: must stay inside root
	must(os.Symlink("../lib/x86_64-linux-gnu/ld-2.36.so", filepath.Join(root, "usr/lib64/ld-linux-x86-64.so.2")))
	for in, want := range map[string]string{
		"/lib64/ld-linux-x86-64.so.2":      "usr/lib/x86_64-linux-gnu/ld-2.36.so",
		"/lib/x86_64-linux-gnu/ld-2.36.so": "usr/lib/x86_64-linux-gnu/ld-2.36.so",
		"/usr/lib/missing":                 "usr/lib/missing",
	} {
		if got := resolveIn(root, in); got != filepath.Join(root, want) {
			t.Errorf("resolveIn(%s) = %s, want %s", in, got, filepath.Join(root, want))
		}
	}
}

func TestComponentImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "pause")
	if err := os.WriteFile(bin, []byte("#!pause"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := component{ref: "registry.k8s.io/pause:3.10.1", entrypoint: []string{"/pause"}, files: []imageFile{
		{src: bin, dst: "/usr/local/bin/pause", mode: 0o755},
		{dst: "/usr/sbin/iptables", link: "xtables-nft-multi"},
	}}
	img, err := c.image()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" || strings.Join(cfg.Config.Entrypoint, " ") != "/pause" {
		t.Errorf("config: os %s arch %s entrypoint %v", cfg.OS, cfg.Architecture, cfg.Config.Entrypoint)
	}
	var names []string
	for _, e := range e2ekit.OnlyLayer(t, img) {
		names = append(names, e.Header.Name)
	}
	want := "usr/ usr/local/ usr/local/bin/ usr/local/bin/pause usr/sbin/ usr/sbin/iptables"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("layer = %s, want %s", got, want)
	}
	// Same inputs, same image: the build is reproducible (no timestamps).
	again, _ := c.image()
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("digests differ: %s, %s", d1, d2)
	}
}

func TestInputsHash(t *testing.T) {
	dir := t.TempDir()
	var b binaries
	for _, p := range []*string{&b.kubelet, &b.kubeadm, &b.kubectl, &b.kubeProxy, &b.etcd, &b.apiserver, &b.controllerManager, &b.scheduler, &b.coredns, &b.pause} {
		f, err := os.CreateTemp(dir, "bin")
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(f.Name())
		f.Close()
		*p = f.Name()
	}
	refs := imageNames{apiserver: "a", controllerManager: "b", scheduler: "c", proxy: "d", coredns: "e", pause: "f", etcd: "g"}
	h1, err := inputsHash(b, refs)
	if err != nil {
		t.Fatal(err)
	}
	if h2, _ := inputsHash(b, refs); h2 != h1 {
		t.Fatalf("hash not stable: %s, %s", h1, h2)
	}
	if err := os.WriteFile(b.kubelet, []byte("another kubelet"), 0o755); err != nil {
		t.Fatal(err)
	}
	if h3, _ := inputsHash(b, refs); h3 == h1 {
		t.Error("a changed kubelet did not change the inputs hash")
	}
	refs.etcd = "g2"
	if h4, _ := inputsHash(b, refs); h4 == h1 {
		t.Error("a changed image name did not change the inputs hash")
	}
}

func TestClusterConfig(t *testing.T) {
	c := ClusterConfig("", 0)
	if len(c.Nodes) != 1 || c.Nodes[0].Image != DefaultImage || !c.Networking.DisableDefaultCNI {
		t.Fatalf("config: %+v", c)
	}
	for _, p := range c.KubeadmConfigPatches {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(p), &m); err != nil || m["kind"] == nil {
			t.Errorf("patch %q: %v %v", p, m, err)
		}
	}
	if !strings.Contains(strings.Join(c.KubeadmConfigPatches, ""), "imageTag: "+EtcdImageTag(EtcdVersion)) {
		t.Errorf("no etcd image tag in %v", c.KubeadmConfigPatches)
	}
	// The bridge configuration's subnet is the cluster's pod subnet.
	conf, err := assets.ReadFile("assets/10-bridge.conflist")
	if err != nil || !strings.Contains(string(conf), `"subnet": "`+PodSubnet+`"`) {
		t.Errorf("10-bridge.conflist does not use %s: %v", PodSubnet, err)
	}
}
