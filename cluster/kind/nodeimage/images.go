package nodeimage

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// imageNames are the images kubeadm asks for (`kubeadm config images list`), with etcd's tag
// replaced by the version actually built (see EtcdImageTag).
type imageNames struct {
	apiserver, controllerManager, scheduler, proxy, coredns, pause, etcd string
	// etcdAsked is the etcd image kubeadm names, which this image does not carry.
	etcdAsked string
}

func (n imageNames) list() []string {
	return []string{n.apiserver, n.controllerManager, n.scheduler, n.proxy, n.etcd, n.coredns, n.pause}
}

// EtcdImageTag is the tag of the etcd image for an etcd version: kubeadm's convention
// (registry.k8s.io/etcd:<version>-0).
func EtcdImageTag(version string) string { return version + "-0" }

// imageRefs asks the node's kubeadm which images it expects for KubernetesVersion.
func imageRefs(ctx context.Context, b binaries) (imageNames, error) {
	out, err := exec.CommandContext(ctx, b.kubeadm, "config", "images", "list", "--kubernetes-version", KubernetesVersion).Output()
	if err != nil {
		return imageNames{}, fmt.Errorf("node image: kubeadm config images list: %w", err)
	}
	var n imageNames
	for _, ref := range strings.Fields(string(out)) {
		repo, tag, _ := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
		switch {
		case repo == "kube-apiserver":
			n.apiserver = ref
		case repo == "kube-controller-manager":
			n.controllerManager = ref
		case repo == "kube-scheduler":
			n.scheduler = ref
		case repo == "kube-proxy":
			n.proxy = ref
		case repo == "coredns":
			n.coredns = ref
			if want := b.corednsVersion; want != "" && tag != want {
				return n, fmt.Errorf("node image: kubeadm asks for CoreDNS %s, the cached build is %s", tag, want)
			}
		case repo == "pause":
			n.pause = ref
		case repo == "etcd":
			n.etcdAsked = ref
			n.etcd = strings.TrimSuffix(ref, ":"+tag) + ":" + EtcdImageTag(b.etcdVersion)
		}
	}
	for _, s := range n.list() {
		if s == "" {
			return n, fmt.Errorf("node image: unexpected `kubeadm config images list` output: %q", out)
		}
	}
	return n, nil
}

// component is one image: files from the host (or the root filesystem) at paths in the image.
type component struct {
	ref        string
	files      []imageFile
	entrypoint []string
}

type imageFile struct {
	src, dst string // dst absolute in the image; src empty for a symlink
	link     string
	mode     int64
}

func (b binaries) components(root string, refs imageNames) ([]component, error) {
	bin := func(src, dst string) imageFile { return imageFile{src: src, dst: dst, mode: 0o755} }
	proxyFiles, err := iptablesFiles(root)
	if err != nil {
		return nil, err
	}
	return []component{
		{ref: refs.pause, files: []imageFile{bin(b.pause, "/pause")}, entrypoint: []string{"/pause"}},
		{ref: refs.etcd, files: []imageFile{bin(b.etcd, "/usr/local/bin/etcd")}, entrypoint: nil},
		{ref: refs.apiserver, files: []imageFile{bin(b.apiserver, "/usr/local/bin/kube-apiserver")}},
		{ref: refs.controllerManager, files: []imageFile{bin(b.controllerManager, "/usr/local/bin/kube-controller-manager")}},
		{ref: refs.scheduler, files: []imageFile{bin(b.scheduler, "/usr/local/bin/kube-scheduler")}},
		{ref: refs.coredns, files: []imageFile{bin(b.coredns, "/coredns")}, entrypoint: []string{"/coredns"}},
		{ref: refs.proxy, files: append([]imageFile{bin(b.kubeProxy, "/usr/local/bin/kube-proxy")}, proxyFiles...)},
	}, nil
}

// iptablesFiles are the files kube-proxy's image needs to run iptables (its default mode
// shells out to iptables, iptables-save and iptables-restore): Debian's xtables-nft-multi, its
// match and target extensions, the shared libraries they load and the dynamic loader, taken
// from the node's root filesystem.
func iptablesFiles(root string) ([]imageFile, error) {
	const multi = "/usr/sbin/xtables-nft-multi"
	const xtables = "/usr/lib/x86_64-linux-gnu/xtables"
	var files []imageFile
	seen := map[string]bool{}
	var elfs []imageFile // ELF files still to scan for their needs, src in the root filesystem
	add := func(src, dst string, scan bool) {
		if seen[dst] {
			return
		}
		seen[dst] = true
		f := imageFile{src: resolveIn(root, src), dst: dst, mode: 0o755}
		files = append(files, f)
		if scan {
			elfs = append(elfs, f)
		}
	}
	add(multi, multi, true)
	exts, err := filepath.Glob(filepath.Join(resolveIn(root, xtables), "*.so"))
	if err != nil || len(exts) == 0 {
		return nil, fmt.Errorf("node image: no iptables extensions in %s", xtables)
	}
	for _, e := range exts {
		p := path.Join(xtables, filepath.Base(e))
		add(p, p, true)
	}
	for i := 0; i < len(elfs); i++ {
		f, err := elf.Open(elfs[i].src)
		if err != nil {
			return nil, fmt.Errorf("node image: %s: %w", elfs[i].dst, err)
		}
		libs, _ := f.ImportedLibraries()
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				data, _ := io.ReadAll(prog.Open())
				interp := strings.TrimRight(string(data), "\x00")
				add(interp, interp, false)
			}
		}
		f.Close()
		for _, lib := range libs {
			found := false
			for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib"} {
				if _, err := os.Stat(resolveIn(root, path.Join(dir, lib))); err == nil {
					// One place the loader always searches, whatever the image's /lib is.
					add(path.Join(dir, lib), path.Join("/lib/x86_64-linux-gnu", lib), true)
					found = true
					break
				}
			}
			if !found {
				return nil, fmt.Errorf("node image: %s needs %s, not found in the root filesystem", elfs[i].dst, lib)
			}
		}
	}
	for _, tool := range []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore",
		"iptables-nft", "iptables-nft-save", "iptables-nft-restore", "ip6tables-nft", "ip6tables-nft-save", "ip6tables-nft-restore"} {
		files = append(files, imageFile{dst: "/usr/sbin/" + tool, link: "xtables-nft-multi"})
	}
	return files, nil
}

// resolveIn resolves p inside root, following symbolic links (absolute ones relative to root).
func resolveIn(root, p string) string {
	cur := "/"
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for hops := 0; len(parts) > 0 && hops < 64; {
		next := path.Join(cur, parts[0])
		parts = parts[1:]
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			cur = next
			continue
		}
		hops++
		if !path.IsAbs(target) {
			target = path.Join(cur, target)
		}
		parts = append(strings.Split(strings.Trim(target, "/"), "/"), parts...)
		cur = "/"
	}
	return filepath.Join(root, cur)
}

// image assembles c as a single-layer linux/amd64 image.
func (c component) image() (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	var mkdirs func(d string) error
	mkdirs = func(d string) error {
		if d == "/" || d == "." || dirs[d] {
			return nil
		}
		if err := mkdirs(path.Dir(d)); err != nil {
			return err
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755, ModTime: time.Unix(0, 0)})
	}
	files := append([]imageFile(nil), c.files...)
	sort.SliceStable(files, func(i, j int) bool { return files[i].dst < files[j].dst })
	for _, f := range files {
		if err := mkdirs(path.Dir(f.dst)); err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(f.dst, "/")
		if f.link != "" {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: f.link, Mode: 0o777, ModTime: time.Unix(0, 0)}); err != nil {
				return nil, err
			}
			continue
		}
		data, err := os.ReadFile(f.src)
		if err != nil {
			return nil, fmt.Errorf("node image: %s: %w", c.ref, err)
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(data)), Mode: f.mode, ModTime: time.Unix(0, 0)}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return SingleLayerImage(buf.Bytes(), c.entrypoint, "")
}

// SingleLayerImage is a linux/amd64 image of one uncompressed layer (a tar
// archive), with the usual PATH, entrypoint and user ("" for root).
// Uncompressed, as `docker save` writes layers: nothing to gzip, and
// containerd unpacks it as is.
func SingleLayerImage(layer []byte, entrypoint []string, user string) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(layer, types.DockerUncompressedLayer))
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cfg.Config.Entrypoint = entrypoint
	cfg.Config.User = user
	return mutate.ConfigFile(img, cfg)
}

// preloadImages writes each component image as a docker archive and imports it into the root
// filesystem's containerd store (/var/lib/containerd, namespace k8s.io, unpacked for the
// overlayfs snapshotter), with the root filesystem's own containerd run on the host under a
// temporary state folder and socket. Preloading at build time rather than importing
// /kind/images at every boot keeps cluster creation as fast as with kind's own images.
func preloadImages(ctx context.Context, root, work string, b binaries, refs imageNames, p progress) error {
	comps, err := b.components(root, refs)
	if err != nil {
		return err
	}
	archives := filepath.Join(work, "images")
	if err := os.MkdirAll(archives, 0o755); err != nil {
		return err
	}
	var paths []string
	for _, c := range comps {
		img, err := c.image()
		if err != nil {
			return fmt.Errorf("node image: assemble %s: %w", c.ref, err)
		}
		tag, err := name.NewTag(c.ref)
		if err != nil {
			return err
		}
		out := filepath.Join(archives, strings.NewReplacer("/", "_", ":", "_").Replace(c.ref)+".tar")
		if err := tarball.WriteToFile(out, tag, img); err != nil {
			return fmt.Errorf("node image: write %s: %w", c.ref, err)
		}
		digest, _ := img.Digest()
		st, _ := os.Stat(out)
		p.line("assembled %s (%d files, %.1f MB, %s)", c.ref, len(c.files), float64(st.Size())/1e6, digest.String()[:19])
		paths = append(paths, out)
	}
	stop, sock, err := startContainerd(ctx, root, work)
	if err != nil {
		return err
	}
	defer stop()
	for _, a := range paths {
		if err := ctr(ctx, root, sock, "-n", "k8s.io", "images", "import", "--snapshotter", "overlayfs", a); err != nil {
			return fmt.Errorf("node image: import %s: %w", filepath.Base(a), err)
		}
	}
	var list bytes.Buffer
	if err := ctrOut(ctx, root, sock, &list, "-n", "k8s.io", "images", "list", "-q"); err != nil {
		return err
	}
	// Every layer is unpacked into an overlayfs snapshot, from which containers are made: the
	// layer blobs themselves are not needed again (containerd's CRI plugin drops them after a
	// pull too, with discard_unpacked_layers), and they are a third of the image.
	var content bytes.Buffer
	if err := ctrOut(ctx, root, sock, &content, "-n", "k8s.io", "content", "list"); err != nil {
		return err
	}
	var layers []string
	for _, line := range strings.Split(content.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(line, "containerd.io/uncompressed=") {
			layers = append(layers, f[0])
		}
	}
	if len(layers) > 0 {
		if err := ctr(ctx, root, sock, append([]string{"-n", "k8s.io", "content", "rm"}, layers...)...); err != nil {
			return err
		}
	}
	if err := stop(); err != nil {
		return err
	}
	var freed int64
	for _, l := range layers {
		blob := filepath.Join(root, "var/lib/containerd/io.containerd.content.v1.content/blobs", strings.Replace(l, ":", "/", 1))
		if st, err := os.Stat(blob); err == nil {
			freed += st.Size()
			os.Remove(blob) // containerd's garbage collector may not have run before it stopped
		}
	}
	p.done("preloaded: %s; %d unpacked layer blobs dropped (%.0f MB)", strings.Join(strings.Fields(list.String()), " "), len(layers), float64(freed)/1e6)
	return nil
}

// rootfsExec runs a dynamically linked program of the root filesystem through its own loader
// and libraries, so that the host's C library does not matter.
func rootfsExec(ctx context.Context, root, prog string, args ...string) *exec.Cmd {
	loader := resolveIn(root, "/lib64/ld-linux-x86-64.so.2")
	libs := resolveIn(root, "/usr/lib/x86_64-linux-gnu")
	return exec.CommandContext(ctx, loader, append([]string{"--library-path", libs, resolveIn(root, prog)}, args...)...)
}

func ctr(ctx context.Context, root, sock string, args ...string) error {
	return ctrOut(ctx, root, sock, nil, args...)
}

func ctrOut(ctx context.Context, root, sock string, out io.Writer, args ...string) error {
	cmd := rootfsExec(ctx, root, "/usr/bin/ctr", append([]string{"--address", sock}, args...)...)
	var errBuf tailBuffer
	cmd.Stdout, cmd.Stderr = &errBuf, &errBuf
	if out != nil {
		cmd.Stdout = out
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errBuf.String()))
	}
	return nil
}

// startContainerd runs the root filesystem's containerd with its root in the root filesystem
// and everything else (state, sockets, plugin folders) in work; the CRI plugin is off.
func startContainerd(ctx context.Context, root, work string) (stop func() error, sock string, err error) {
	dir := filepath.Join(work, "containerd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	sock = filepath.Join(dir, "containerd.sock")
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = %q
[ttrpc]
  address = %q
[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, filepath.Join(root, "var/lib/containerd"), filepath.Join(dir, "state"), sock, sock+".ttrpc", filepath.Join(dir, "opt"))
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		return nil, "", err
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		return nil, "", err
	}
	cmd := rootfsExec(context.WithoutCancel(ctx), root, "/usr/bin/containerd", "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, "", fmt.Errorf("node image: start containerd: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		defer logf.Close()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		return nil
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			if ctr(ctx, root, sock, "version") == nil {
				return stop, sock, nil
			}
		}
		select {
		case err := <-exited:
			data, _ := os.ReadFile(logf.Name())
			return nil, "", fmt.Errorf("node image: containerd exited (%v): %s", err, lastLines(string(data), 5))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			data, _ := os.ReadFile(logf.Name())
			return nil, "", fmt.Errorf("node image: containerd did not answer within 30 s: %s", lastLines(string(data), 5))
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
