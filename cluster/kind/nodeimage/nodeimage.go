// Package nodeimage builds an offline kind node image: a Debian bookworm root filesystem
// (debootstrap) with systemd, containerd, runc, the CNI plugins and the network tools a node
// needs, the pinned Kubernetes node binaries (make kind-binaries), an entrypoint of its own, and
// every image kubeadm asks for preloaded into the node's containerd — each assembled from the
// locally built static binaries with go-containerregistry. Nothing is pulled from any registry.
//
// The image follows kind's node image contract (what kind's library relies on): ENTRYPOINT
// /usr/local/bin/entrypoint running /sbin/init (systemd) as PID 1, STOPSIGNAL SIGRTMIN+3,
// /kind/version, containerd listening on /run/containerd/containerd.sock with a config version 2
// naming its snapshotter, kubelet.service with kubeadm's drop-in, kubeadm, kubectl and kubelet on
// PATH, and /kind/manifests/default-storage.yaml. It ships no CNI image (kindnetd): clusters are
// created with networking.disableDefaultCNI and a bridge CNI configuration in the image (see
// ClusterConfig).
package nodeimage

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/hoststate"
)

// KubernetesVersion is the pinned Kubernetes release (build/controlplane/go.mod).
const KubernetesVersion = "v1.35.4"

// DefaultImage is the node image's name.
const DefaultImage = "gauntlet/kind-node:" + KubernetesVersion

// InputsLabel is the image label holding the hash of everything the image was built from; an
// image whose label matches is not rebuilt.
const InputsLabel = "dev.gauntlet.kind-node.inputs"

// formatVersion changes when the build itself changes in a way the inputs do not show.
const formatVersion = "gauntlet-kind-node/2"

// Suite is the Debian release of the root filesystem.
const Suite = "bookworm"

// Packages are the Debian packages of the root filesystem besides debootstrap's minbase.
var Packages = []string{
	"systemd", "systemd-sysv", "dbus", // PID 1; runc's and the kubelet's systemd cgroup driver talk D-Bus
	"containerd", "runc", "containernetworking-plugins",
	"iptables", "nftables", "iproute2", "mount", "util-linux", "conntrack", "ethtool", "socat",
	"ca-certificates", "procps", "kmod", "libseccomp2",
}

//go:embed assets
var assets embed.FS

// Options configure Build. The zero value builds DefaultImage from the cache folders the
// Makefile fills (make kind-binaries, controlplane, coredns).
type Options struct {
	// Image is the image's name (default DefaultImage).
	Image string
	// CacheDir is gauntlet's cache (default $GAUNTLET_CACHE_DIR, else ~/.cache/gauntlet); the
	// root filesystem's tarball is kept in CacheDir/kind.
	CacheDir string
	// NodeBinDir holds kubelet, kubeadm, kubectl and kube-proxy (default CacheDir/kind-binaries/<version>).
	NodeBinDir string
	// ControlPlaneBinDir holds etcd, kube-apiserver, kube-controller-manager and kube-scheduler
	// (default $GAUNTLET_CONTROLPLANE_BIN, else CacheDir/controlplane/<version>).
	ControlPlaneBinDir string
	// CoreDNSDir holds the coredns binary and its VERSION (default CacheDir/coredns-kubeadm/<newest>:
	// make kind-coredns, CoreDNS with the plugins of kubeadm's Corefile; the embedded cluster's
	// build lacks forward, loop, reload and prometheus, and kubeadm's Corefile names them).
	CoreDNSDir string
	// PauseBinary is the pod sandbox's binary (default: built from ./pause with the go command).
	PauseBinary string
	// Mirror is the Debian mirror (default http://deb.debian.org/debian).
	Mirror string
	// Force rebuilds even when an image with the same inputs exists.
	Force bool
	// Progress receives one line per step (default: discarded).
	Progress io.Writer
}

func (o Options) withDefaults() (Options, error) {
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir()
	}
	if o.NodeBinDir == "" {
		o.NodeBinDir = filepath.Join(o.CacheDir, "kind-binaries", KubernetesVersion)
	}
	if o.ControlPlaneBinDir == "" {
		o.ControlPlaneBinDir = os.Getenv("GAUNTLET_CONTROLPLANE_BIN")
	}
	if o.ControlPlaneBinDir == "" {
		o.ControlPlaneBinDir = filepath.Join(o.CacheDir, "controlplane", KubernetesVersion)
	}
	if o.CoreDNSDir == "" {
		dirs, _ := filepath.Glob(filepath.Join(o.CacheDir, "coredns-kubeadm", "v*"))
		sort.Strings(dirs)
		if len(dirs) == 0 {
			return o, fmt.Errorf("node image: no CoreDNS build in %s: run `make kind-coredns`", filepath.Join(o.CacheDir, "coredns-kubeadm"))
		}
		o.CoreDNSDir = dirs[len(dirs)-1]
	}
	if o.Mirror == "" {
		o.Mirror = "http://deb.debian.org/debian"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o, nil
}

// DefaultCacheDir is Gauntlet's cache folder (hoststate.CacheDir).
func DefaultCacheDir() string { return hoststate.CacheDir() }

// Result describes a built (or reused) image.
type Result struct {
	Image  string
	Inputs string // the inputs' hash, also the image's InputsLabel
	Cached bool   // an image with these inputs existed: nothing was built
	Images []string
	Took   time.Duration
}

// binaries are the files the image is made of besides Debian's packages.
type binaries struct {
	kubelet, kubeadm, kubectl, kubeProxy          string
	etcd, apiserver, controllerManager, scheduler string
	coredns, pause                                string
	etcdVersion, corednsVersion                   string
}

func (o Options) binaries() (binaries, error) {
	b := binaries{
		kubelet:           filepath.Join(o.NodeBinDir, "kubelet"),
		kubeadm:           filepath.Join(o.NodeBinDir, "kubeadm"),
		kubectl:           filepath.Join(o.NodeBinDir, "kubectl"),
		kubeProxy:         filepath.Join(o.NodeBinDir, "kube-proxy"),
		etcd:              filepath.Join(o.ControlPlaneBinDir, "etcd"),
		apiserver:         filepath.Join(o.ControlPlaneBinDir, "kube-apiserver"),
		controllerManager: filepath.Join(o.ControlPlaneBinDir, "kube-controller-manager"),
		scheduler:         filepath.Join(o.ControlPlaneBinDir, "kube-scheduler"),
		coredns:           filepath.Join(o.CoreDNSDir, "coredns"),
		pause:             o.PauseBinary,
	}
	for _, f := range []struct{ path, make string }{
		{b.kubelet, "make kind-binaries"}, {b.kubeadm, "make kind-binaries"}, {b.kubectl, "make kind-binaries"}, {b.kubeProxy, "make kind-binaries"},
		{b.etcd, "make controlplane"}, {b.apiserver, "make controlplane"}, {b.controllerManager, "make controlplane"}, {b.scheduler, "make controlplane"},
		{b.coredns, "make kind-coredns"},
	} {
		if _, err := os.Stat(f.path); err != nil {
			return b, fmt.Errorf("node image: %s is missing: run `%s`", f.path, f.make)
		}
	}
	return b, nil
}

// Build builds the node image, or returns at once when the local engine has an image of the
// same name whose inputs label matches.
func Build(ctx context.Context, opts Options) (Result, error) {
	start := time.Now()
	opts, err := opts.withDefaults()
	if err != nil {
		return Result{}, err
	}
	p := progress{w: opts.Progress, total: 6}
	p.step("checking inputs")
	b, err := opts.binaries()
	if err != nil {
		return Result{}, err
	}
	work, err := workDir(opts.CacheDir)
	if err != nil {
		return Result{}, fmt.Errorf("node image: %w", err)
	}
	defer os.RemoveAll(work)
	if b.pause == "" {
		b.pause = filepath.Join(work, "pause")
		if err := buildPause(ctx, b.pause); err != nil {
			return Result{}, err
		}
	}
	if b.etcdVersion, err = etcdVersion(ctx, b.etcd); err != nil {
		return Result{}, err
	}
	if v, err := os.ReadFile(filepath.Join(opts.CoreDNSDir, "VERSION")); err == nil {
		b.corednsVersion = strings.TrimSpace(string(v))
	} else {
		b.corednsVersion = filepath.Base(opts.CoreDNSDir)
	}
	refs, err := imageRefs(ctx, b)
	if err != nil {
		return Result{}, err
	}
	inputs, err := inputsHash(b, refs)
	if err != nil {
		return Result{}, err
	}
	res := Result{Image: opts.Image, Inputs: inputs, Images: refs.list()}
	if !opts.Force {
		if have, _ := imageLabel(ctx, opts.Image, InputsLabel); have == inputs {
			p.done("%s is up to date (inputs %s): nothing to build", opts.Image, inputs[:12])
			res.Cached, res.Took = true, time.Since(start)
			return res, nil
		}
	}
	p.done("inputs %s; building %s", inputs[:12], opts.Image)

	p.step("root filesystem (Debian %s)", Suite)
	tarball, err := rootfsTarball(ctx, opts, p)
	if err != nil {
		return Result{}, err
	}
	root := filepath.Join(work, "rootfs")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return Result{}, err
	}
	if err := run(ctx, nil, nil, "tar", "-C", root, "--numeric-owner", "--xattrs", "--xattrs-include=*", "-xpf", tarball); err != nil {
		return Result{}, fmt.Errorf("node image: unpack %s: %w", tarball, err)
	}
	p.done("unpacked %s", tarball)

	p.step("node files (entrypoint, containerd, kubelet unit, CNI, binaries)")
	if err := installNodeFiles(root, b, refs); err != nil {
		return Result{}, err
	}
	p.done("installed")

	p.step("images kubeadm asks for, preloaded into the node's containerd")
	if err := preloadImages(ctx, root, work, b, refs, p); err != nil {
		return Result{}, err
	}

	p.step("importing into the engine as %s", opts.Image)
	oldID, _ := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", opts.Image).Output()
	if err := dockerImport(ctx, root, opts.Image, inputs); err != nil {
		return Result{}, err
	}
	if id := strings.TrimSpace(string(oldID)); id != "" {
		// The previous build, now untagged (1.4 GB); kept if a container still uses it.
		_ = exec.CommandContext(ctx, "docker", "rmi", id).Run()
	}
	size, _ := imageSize(ctx, opts.Image)
	p.done("%s (%s)", opts.Image, size)
	res.Took = time.Since(start)
	p.step("done in %s", res.Took.Round(time.Second))
	return res, nil
}

type progress struct {
	w     io.Writer
	n     int
	total int
	at    time.Time
}

func (p *progress) step(format string, a ...any) {
	p.n++
	p.at = time.Now()
	fmt.Fprintf(p.w, "node image [%d/%d] %s\n", p.n, p.total, fmt.Sprintf(format, a...))
}

func (p *progress) done(format string, a ...any) {
	fmt.Fprintf(p.w, "node image       %s (%s)\n", fmt.Sprintf(format, a...), time.Since(p.at).Round(100*time.Millisecond))
}

func (p *progress) line(format string, a ...any) {
	fmt.Fprintf(p.w, "node image       %s\n", fmt.Sprintf(format, a...))
}

// inputsHash hashes everything the image is made of: this package's assets and format, the
// Debian suite and packages, the component images' names and every binary.
func inputsHash(b binaries, refs imageNames) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s %s\n", formatVersion, Suite, strings.Join(Packages, ","))
	for _, r := range refs.list() {
		fmt.Fprintf(h, "image %s\n", r)
	}
	err := fs.WalkDir(assets, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := assets.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "asset %s %d\n", path, len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		return "", err
	}
	for _, f := range []string{b.kubelet, b.kubeadm, b.kubectl, b.kubeProxy, b.etcd, b.apiserver, b.controllerManager, b.scheduler, b.coredns, b.pause} {
		in, err := os.Open(f)
		if err != nil {
			return "", fmt.Errorf("node image: %w", err)
		}
		fmt.Fprintf(h, "binary %s\n", filepath.Base(f))
		_, err = io.Copy(h, in)
		in.Close()
		if err != nil {
			return "", fmt.Errorf("node image: read %s: %w", f, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func buildPause(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "github.com/gauntlet-dev/gauntlet/cluster/kind/nodeimage/pause")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if o, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("node image: build the pause binary (run from gauntlet's source tree, or pass a pause binary): %w: %s", err, strings.TrimSpace(string(o)))
	}
	return nil
}

func etcdVersion(ctx context.Context, etcd string) (string, error) {
	out, err := exec.CommandContext(ctx, etcd, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("node image: %s --version: %w", etcd, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "etcd Version: "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("node image: no version in `%s --version`: %q", etcd, out)
}

// run runs a command, its output going to out (stderr too) or kept for the error.
func run(ctx context.Context, stdin io.Reader, out io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = stdin
	var tail tailBuffer
	if out != nil {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(out, &tail), io.MultiWriter(out, &tail)
	} else {
		cmd.Stdout, cmd.Stderr = &tail, &tail
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(tail.String()))
	}
	return nil
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

// lineWriter calls f for every complete line written.
type lineWriter struct {
	f   func(string)
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			return len(p), nil
		}
		l.f(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
}

func imageLabel(ctx context.Context, image, label string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", fmt.Sprintf("{{index .Config.Labels %q}}", label), image).Output()
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

func imageSize(ctx context.Context, image string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Size}}", image).Output()
	if err != nil {
		return "", err
	}
	var n int64
	fmt.Sscan(strings.TrimSpace(string(out)), &n)
	return fmt.Sprintf("%.0f MB", float64(n)/1e6), nil
}

// dockerImport streams the root filesystem into `docker import`, then sets what import cannot
// (Docker 20.10 refuses STOPSIGNAL as an import change) with a one-line build on top, which adds
// no layer. The inputs label goes on last, so that an interrupted build never looks complete.
func dockerImport(ctx context.Context, root, image, inputs string) error {
	base := "gauntlet/kind-node-rootfs:" + inputs[:12]
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	tarCmd := exec.CommandContext(ctx, "tar", "-C", root, "--numeric-owner", "--xattrs", "--xattrs-include=*", "-cf", "-", ".")
	var tarErr tailBuffer
	tarCmd.Stdout, tarCmd.Stderr = w, &tarErr
	if err := tarCmd.Start(); err != nil {
		r.Close()
		w.Close()
		return fmt.Errorf("node image: tar: %w", err)
	}
	w.Close() // tar holds the write end; a failing import then stops tar with EPIPE
	importErr := run(ctx, r, nil, "docker", "import",
		"--change", `ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]`,
		"--change", "ENV container=docker",
		"--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"-", base)
	r.Close()
	if err := tarCmd.Wait(); err != nil && importErr == nil {
		return fmt.Errorf("node image: tar %s: %w: %s", root, err, tarErr.String())
	}
	if importErr != nil {
		return fmt.Errorf("node image: %w", importErr)
	}
	dockerfile := fmt.Sprintf("FROM %s\n# systemd shuts down cleanly on SIGRTMIN+3 (docker stop)\nSTOPSIGNAL SIGRTMIN+3\nLABEL dev.gauntlet.kind-node.kubernetes=%s %s=%s\n", base, KubernetesVersion, InputsLabel, inputs)
	build := exec.CommandContext(ctx, "docker", "build", "-q", "-t", image, "-")
	build.Env = append(os.Environ(), "DOCKER_BUILDKIT=0") // the classic builder: no BuildKit plugin needed, nothing pulled
	build.Stdin = strings.NewReader(dockerfile)
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("node image: docker build (STOPSIGNAL, labels): %w: %s", err, out)
	}
	_ = exec.CommandContext(ctx, "docker", "rmi", base).Run() // only the tag: the image is the final one's parent
	return nil
}

// copyFile copies src to dst with mode.
func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// workDir makes CacheDir/kind/build-<pid>-<random>, after removing the folders of builds whose
// process is gone (a killed build leaves a root filesystem of about 1.3 GB).
func workDir(cache string) (string, error) {
	dir := filepath.Join(cache, "kind")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "build-*"))
	for _, o := range old {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(o), "build-%d", &pid); err == nil && pid != os.Getpid() {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
				os.RemoveAll(o)
			}
		}
	}
	// One folder per build, not per process: tests of one process build at once.
	return os.MkdirTemp(dir, fmt.Sprintf("build-%d-", os.Getpid()))
}
