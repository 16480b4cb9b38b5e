package kind

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gauntlet-dev/gauntlet/cluster/kind/nodeimage"
)

func TestRegistry(t *testing.T) {
	reg := registry{dir: t.TempDir()}
	a, err := reg.add("a", true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := reg.add("b", true)
	if err != nil {
		t.Fatal(err)
	}
	if a.PodSubnet != subnet(0) || b.PodSubnet != subnet(1) {
		t.Errorf("subnets %s, %s; want %s, %s", a.PodSubnet, b.PodSubnet, subnet(0), subnet(1))
	}
	if _, err := reg.add("a", true); err == nil {
		t.Error("a second cluster called a while its owner (this process) lives was accepted")
	}
	if !a.ownerAlive() {
		t.Error("this process's record is not alive")
	}
	if _, ok := reg.abandoned("a"); ok {
		t.Error("a live cluster is abandoned")
	}
	// An owner that exited: its record is abandoned, and its subnet is taken until GC.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	a.Owner = cmd.Process.Pid
	if err := reg.write(a); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.abandoned("a"); !ok {
		t.Error("a cluster whose owner exited is not abandoned")
	}
	c, err := reg.add("c", true)
	if err != nil {
		t.Fatal(err)
	}
	if c.PodSubnet != subnet(2) {
		t.Errorf("c got %s, want %s (a's subnet stays taken until its cluster is removed)", c.PodSubnet, subnet(2))
	}
	reg.remove("a")
	if recs, _ := reg.list(); len(recs) != 2 {
		t.Errorf("records after remove: %+v", recs)
	}
	d, _ := reg.add("d", true)
	if d.PodSubnet != subnet(0) {
		t.Errorf("d got %s, want the freed %s", d.PodSubnet, subnet(0))
	}
}

func TestOperatorImage(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	img, err := OperatorImage("ghcr.io/gauntlet-dev/valkey-operator:dev", exe).build()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" || len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/manager" {
		t.Errorf("config = %+v", cfg.Config)
	}
	layers, _ := img.Layers()
	if len(layers) != 1 {
		t.Errorf("%d layers, want 1", len(layers))
	}
	file := t.TempDir() + "/images.tar"
	if err := WriteArchive(file, []Image{OperatorImage("example.com/op:1", exe)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tarball.ImageFromPath(file, nil); err != nil {
		t.Errorf("the archive does not read back: %v", err)
	}
}

func TestValkeyImageLibraries(t *testing.T) {
	img, err := ValkeyImage(ValkeyImageRefs...)
	if err != nil {
		t.Skipf("no valkey-server on this host: %v", err)
	}
	files, err := img.expand()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range files {
		have[f.Dst] = true
	}
	for _, want := range []string{"/usr/bin/valkey-server", "/usr/bin/valkey-cli", "/bin/sh", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"} {
		if !have[want] {
			t.Errorf("the Valkey image lacks %s", want)
		}
	}
}

func TestBridgeCNIConfigSubnet(t *testing.T) {
	conf, err := nodeimage.BridgeCNIConfig(subnet(3))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Plugins []struct {
			IPAM struct {
				Ranges [][]struct{ Subnet string } `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(conf, &c); err != nil {
		t.Fatal(err)
	}
	if got := c.Plugins[0].IPAM.Ranges[0][0].Subnet; got != "10.244.48.0/20" {
		t.Errorf("subnet %q, want 10.244.48.0/20", got)
	}
}

func TestList(t *testing.T) {
	root := t.TempDir()
	if infos, err := List(root); err != nil || len(infos) != 0 {
		t.Fatalf("no registry yet: %v, %v; want none and no error", infos, err)
	}
	reg := registry{dir: recordsDir(root)}
	if _, err := reg.add("b", true); err != nil {
		t.Fatal(err)
	}
	a, err := reg.add("a", true)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	a.Owner, a.Kubeconfig = cmd.Process.Pid, "/k/a"
	if err := reg.write(a); err != nil {
		t.Fatal(err)
	}
	infos, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 || infos[0].Name != "a" || infos[1].Name != "b" {
		t.Fatalf("infos %+v, want a and b by name", infos)
	}
	if infos[0].Running || !infos[1].Running {
		t.Errorf("running: a %v (owner exited), b %v (this process); want false, true", infos[0].Running, infos[1].Running)
	}
	if infos[0].Kubeconfig != "/k/a" || infos[0].PodSubnet != a.PodSubnet {
		t.Errorf("a: %+v, want its record's kubeconfig and subnet", infos[0])
	}
}
