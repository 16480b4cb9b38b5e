package nodeimage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// rootfsTarball returns the cached tarball of the Debian root filesystem, made with debootstrap
// on first use (CacheDir/kind/rootfs-<suite>-<hash of the package list>.tar).
func rootfsTarball(ctx context.Context, opts Options, p progress) (string, error) {
	sum := sha256.Sum256([]byte(Suite + " minbase " + strings.Join(Packages, ",")))
	dir := filepath.Join(opts.CacheDir, "kind")
	tarball := filepath.Join(dir, fmt.Sprintf("rootfs-%s-%s.tar", Suite, hex.EncodeToString(sum[:])[:12]))
	if _, err := os.Stat(tarball); err == nil {
		p.done("cached %s", tarball)
		return tarball, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		p.line("debootstrap missing: apt-get install debootstrap")
		if err := run(ctx, nil, nil, "apt-get", "install", "-y", "-qq", "--no-install-recommends", "debootstrap"); err != nil {
			return "", fmt.Errorf("node image: install debootstrap: %w", err)
		}
	}
	tmp, err := os.MkdirTemp(dir, "debootstrap-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "rootfs")
	p.line("debootstrap --variant=minbase %s from %s (packages: %s)", Suite, opts.Mirror, strings.Join(Packages, " "))
	count := 0
	lines := &lineWriter{f: func(l string) {
		// debootstrap prints a line per package and phase ("I: Retrieving libc6 2.36", "I:
		// Configuring libc6:amd64..."): show the phases and a count, and every warning or error.
		switch {
		case strings.HasPrefix(l, "E:") || strings.HasPrefix(l, "W:"):
			p.line("  %s", l)
		case strings.Contains(l, " packages...") || strings.Contains(l, "base system") || strings.HasPrefix(l, "I: Retrieving InRelease"):
			p.line("  %s (%d lines so far)", l, count)
		}
		count++
	}}
	if err := run(ctx, nil, lines, "debootstrap", "--variant=minbase", "--include="+strings.Join(Packages, ","), Suite, root, opts.Mirror); err != nil {
		return "", fmt.Errorf("node image: debootstrap: %w", err)
	}
	// What a container image does not need: downloaded packages, apt lists, docs, man pages.
	for _, junk := range []string{"var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/info"} {
		matches, _ := filepath.Glob(filepath.Join(root, junk, "*"))
		for _, m := range matches {
			if filepath.Base(m) == "partial" || filepath.Base(m) == "lock" {
				continue
			}
			os.RemoveAll(m)
		}
	}
	part := tarball + ".part"
	if err := run(ctx, nil, nil, "tar", "-C", root, "--numeric-owner", "--xattrs", "--xattrs-include=*", "-cf", part, "."); err != nil {
		return "", fmt.Errorf("node image: tar the root filesystem: %w", err)
	}
	if err := os.Rename(part, tarball); err != nil {
		return "", err
	}
	p.done("cached %s", tarball)
	return tarball, nil
}

// installNodeFiles puts kind's layout into the root filesystem: the entrypoint, /kind, the
// containerd configuration, the kubelet's unit and drop-ins, the CNI configuration and the node
// binaries.
func installNodeFiles(root string, b binaries, refs imageNames) error {
	asset := func(name, dst string, mode os.FileMode, replace ...string) error {
		data, err := assets.ReadFile("assets/" + name)
		if err != nil {
			return err
		}
		s := string(data)
		for i := 0; i+1 < len(replace); i += 2 {
			s = strings.ReplaceAll(s, replace[i], replace[i+1])
		}
		path := filepath.Join(root, dst)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return os.WriteFile(path, []byte(s), mode)
	}
	steps := []error{
		asset("entrypoint", "usr/local/bin/entrypoint", 0o755),
		asset("kubelet-cgroups.sh", "kind/bin/kubelet-cgroups.sh", 0o755),
		asset("containerd.toml", "etc/containerd/config.toml", 0o644, "{{SANDBOX_IMAGE}}", refs.pause),
		asset("kubelet.service", "etc/systemd/system/kubelet.service", 0o644),
		asset("10-kubeadm.conf", "etc/systemd/system/kubelet.service.d/10-kubeadm.conf", 0o644),
		asset("11-node.conf", "etc/systemd/system/kubelet.service.d/11-node.conf", 0o644),
		asset("kubelet.slice", "etc/systemd/system/kubelet.slice", 0o644),
		asset("kubelet.default", "etc/default/kubelet", 0o644),
		asset("10-bridge.conflist", "etc/cni/net.d/10-bridge.conflist", 0o644),
		asset("default-storage.yaml", "kind/manifests/default-storage.yaml", 0o644),
		os.WriteFile(filepath.Join(root, "kind/version"), []byte(KubernetesVersion), 0o644),
		copyFile(b.kubelet, filepath.Join(root, "usr/bin/kubelet"), 0o755),
		copyFile(b.kubeadm, filepath.Join(root, "usr/bin/kubeadm"), 0o755),
		copyFile(b.kubectl, filepath.Join(root, "usr/bin/kubectl"), 0o755),
	}
	for _, err := range steps {
		if err != nil {
			return fmt.Errorf("node image: node files: %w", err)
		}
	}
	// Enable the kubelet (it waits for kubeadm's config.yaml); containerd's package enabled it.
	wants := filepath.Join(root, "etc/systemd/system/multi-user.target.wants")
	if err := os.MkdirAll(wants, 0o755); err != nil {
		return err
	}
	link := filepath.Join(wants, "kubelet.service")
	os.Remove(link)
	if err := os.Symlink("/etc/systemd/system/kubelet.service", link); err != nil {
		return err
	}
	// Units that make no sense in a node container: they would wait on devices or the console.
	for _, unit := range []string{"getty.target", "systemd-udevd.service", "systemd-udev-trigger.service", "systemd-modules-load.service", "e2scrub_reap.service", "e2scrub_all.timer", "apt-daily.timer", "apt-daily-upgrade.timer"} {
		mask := filepath.Join(root, "etc/systemd/system", unit)
		os.Remove(mask)
		if err := os.Symlink("/dev/null", mask); err != nil {
			return err
		}
	}
	// The image carries no machine ID: the entrypoint makes one per node.
	os.Remove(filepath.Join(root, "etc/machine-id"))
	return nil
}
