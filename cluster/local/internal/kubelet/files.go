package kubelet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/container"
)

// podHostname is the pod's hostname: spec.hostname or the pod name, at most
// 63 characters, or the FQDN when setHostnameAsFQDN asks for it.
func podHostname(pod *corev1.Pod) string {
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	if pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN && pod.Spec.Subdomain != "" {
		return h + "." + pod.Spec.Subdomain + "." + pod.Namespace + ".svc"
	}
	return h
}

// writeEtcFiles writes the pod's /etc/hosts, /etc/hostname and (with
// cluster DNS or dnsPolicy None) /etc/resolv.conf into its folder.
func (w *podWorker) writeEtcFiles(pod *corev1.Pod, ip netip.Addr) error {
	dir := filepath.Join(w.dir, "etc")
	domain := w.p.cfg.ClusterDomain
	hostname := podHostname(pod)
	short := hostname
	if i := strings.IndexByte(short, '.'); i > 0 {
		short = short[:i]
	}
	if !pod.Spec.HostNetwork {
		var b strings.Builder
		b.WriteString("# Kubernetes-managed hosts file.\n")
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
		if pod.Spec.Subdomain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s.%s.svc.%s\t%s\n", ip, short, pod.Spec.Subdomain, pod.Namespace, domain, short)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, short)
		}
		if len(pod.Spec.HostAliases) > 0 {
			b.WriteString("\n# Entries added by HostAliases.\n")
			for _, ha := range pod.Spec.HostAliases {
				fmt.Fprintf(&b, "%s\t%s\n", ha.IP, strings.Join(ha.Hostnames, "\t"))
			}
		}
		if err := writeFileAtomic(filepath.Join(dir, "hosts"), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	if err := writeFileAtomic(filepath.Join(dir, "hostname"), []byte(hostname+"\n"), 0o644); err != nil {
		return err
	}
	resolv := resolvConf(pod, w.p.cfg.DNS, domain)
	path := filepath.Join(dir, "resolv.conf")
	if resolv == "" {
		_ = os.Remove(path)
		return nil
	}
	return writeFileAtomic(path, []byte(resolv), 0o644)
}

// resolvConf renders a pod's resolv.conf, or "" to keep the host's.
func resolvConf(pod *corev1.Pod, dns []netip.Addr, domain string) string {
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = corev1.DNSClusterFirst
	}
	if policy == corev1.DNSClusterFirst && pod.Spec.HostNetwork {
		policy = corev1.DNSDefault
	}
	var servers, searches []string
	options := map[string]string{}
	var optOrder []string
	setOpt := func(name, val string) {
		if _, ok := options[name]; !ok {
			optOrder = append(optOrder, name)
		}
		options[name] = val
	}
	switch policy {
	case corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet:
		if len(dns) == 0 {
			if pod.Spec.DNSConfig == nil {
				return ""
			}
			break
		}
		for _, a := range dns {
			servers = append(servers, a.String())
		}
		searches = []string{pod.Namespace + ".svc." + domain, "svc." + domain, domain}
		setOpt("ndots", "5")
	case corev1.DNSNone:
	default:
		if pod.Spec.DNSConfig == nil {
			return ""
		}
		// Default with dnsConfig: the node's resolver, merged with dnsConfig.
		var hostOpts []string
		servers, searches, hostOpts = parseResolvConf(hostResolvConf)
		for _, o := range hostOpts {
			name, val, _ := strings.Cut(o, ":")
			setOpt(name, val)
		}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		servers = append(servers, dc.Nameservers...)
		searches = append(searches, dc.Searches...)
		for _, o := range dc.Options {
			v := ""
			if o.Value != nil {
				v = *o.Value
			}
			setOpt(o.Name, v)
		}
	}
	if len(servers) == 0 && len(searches) == 0 {
		return ""
	}
	var b strings.Builder
	if len(searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(searches, " "))
	}
	for _, s := range servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(optOrder) > 0 {
		var opts []string
		for _, n := range optOrder {
			if options[n] != "" {
				opts = append(opts, n+":"+options[n])
			} else {
				opts = append(opts, n)
			}
		}
		fmt.Fprintf(&b, "options %s\n", strings.Join(opts, " "))
	}
	return b.String()
}

// writeFileAtomic replaces a file by rename.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// subPath resolves a volumeMount's subPath inside a volume on the host,
// refusing paths (or symlinks) that lead outside it, and creates a missing
// folder with the volume's mode as the kubelet does.
func subPath(volume, sub string) (string, error) {
	if filepath.IsAbs(sub) {
		return "", fmt.Errorf("subPath %q must be a relative path", sub)
	}
	for _, part := range strings.Split(filepath.ToSlash(sub), "/") {
		if part == ".." {
			return "", fmt.Errorf("subPath %q must not contain '..'", sub)
		}
	}
	root, err := filepath.EvalSymlinks(volume)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(root)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return "", fmt.Errorf("subPath %q of a volume that is not a folder", sub)
	}
	p := filepath.Join(root, sub)
	if _, err := os.Lstat(p); os.IsNotExist(err) {
		if err := os.MkdirAll(p, st.Mode().Perm()); err != nil {
			return "", err
		}
		_ = os.Chmod(p, st.Mode().Perm())
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	if real != root && !hasPathPrefix(real, root) {
		return "", fmt.Errorf("subPath %q leads outside the volume (to %s)", sub, real)
	}
	return real, nil
}

// makeNestedMountpoints creates, in the host folder behind each of a
// container's volume mounts, the mount points of the volumes mounted beneath
// it, as the kubelet does before a container starts (MakeNestedMountpoints in
// pkg/volume/util/nested_volumes.go). The folders are made on the host side,
// so a read-only parent still gets them (a configMap at /config with a secret
// at /config/users), whatever the parent's volume type. ms are the volume
// mounts with their subPath resolved, so a mount point lands inside the
// subPath. A mount's parent is the deepest other mount above its target (the
// last listed among equal targets); a mount point that is a file (a subPath
// file) is created as an empty file.
func makeNestedMountpoints(ms []container.Mount) error {
	for j, child := range ms {
		target := filepath.Clean(child.Target)
		parent := -1
		for i, m := range ms {
			t := filepath.Clean(m.Target)
			if i == j || !hasPathPrefix(target, t) {
				continue
			}
			if parent < 0 || len(t) >= len(filepath.Clean(ms[parent].Target)) {
				parent = i
			}
		}
		if parent < 0 {
			continue
		}
		p := ms[parent]
		if st, err := os.Stat(p.Source); err != nil || !st.IsDir() {
			continue // the container runtime reports it
		}
		rel, err := filepath.Rel(filepath.Clean(p.Target), target)
		if err != nil {
			return err
		}
		st, err := os.Stat(child.Source)
		isFile := err == nil && !st.IsDir()
		if err := makeMountpoint(p.Source, rel, isFile); err != nil {
			return fmt.Errorf("create the mount point %s inside the volume mounted at %s: %w", child.Target, p.Target, err)
		}
	}
	return nil
}

// makeMountpoint creates rel (a folder, or an empty file) inside the volume
// folder root unless it exists, following symbolic links only while they stay
// inside the volume.
func makeMountpoint(root, rel string, isFile bool) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	cur := realRoot
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for k, part := range parts {
		last := k == len(parts)-1
		p := filepath.Join(cur, part)
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if last && isFile {
				f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					return err
				}
				_ = f.Close()
				return nil
			}
			if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			cur = p
			continue
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				return fmt.Errorf("%s: %w", filepath.Join(root, filepath.FromSlash(strings.Join(parts[:k+1], "/"))), err)
			}
			if real != realRoot && !hasPathPrefix(real, realRoot) {
				return fmt.Errorf("%s leads outside the volume (to %s)", strings.Join(parts[:k+1], "/"), real)
			}
			cur = real
		default:
			cur = p
		}
		if last {
			return nil
		}
		if st, err := os.Stat(cur); err != nil || !st.IsDir() {
			return fmt.Errorf("%s is not a folder", strings.Join(parts[:k+1], "/"))
		}
	}
	return nil
}

// hasPathPrefix reports whether p is inside dir.
func hasPathPrefix(p, dir string) bool {
	return strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// sortMounts orders mounts so that a parent is mounted before anything
// inside it (as container runtimes do); ties keep their order.
func sortMounts(ms []container.Mount) {
	depth := func(p string) int { return strings.Count(filepath.Clean(p), "/") }
	sort.SliceStable(ms, func(i, j int) bool { return depth(ms[i].Target) < depth(ms[j].Target) })
}

// terminationMessage is what a stopped container leaves for its status: the
// termination message file, or with FallbackToLogsOnError after a failure,
// the end of its log.
func terminationMessage(termPath, logPath string, spec corev1.Container, exit container.Exit) string {
	if f, err := os.Open(termPath); err == nil {
		b, _ := io.ReadAll(io.LimitReader(f, terminationMsgMax))
		f.Close()
		if len(b) > 0 {
			return string(b)
		}
	}
	if spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError && exit.Code != 0 {
		return tailLogMessage(logPath, 80, 2048)
	}
	return ""
}

// tailLogMessage returns the last lines (at most maxBytes) of a CRI log.
func tailLogMessage(path string, lines, maxBytes int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var out bytes.Buffer
	for _, line := range splitLines(string(b)) {
		f := strings.SplitN(line, " ", 4)
		if len(f) < 4 {
			continue
		}
		out.WriteString(f[3])
		if f[2] != "P" {
			out.WriteByte('\n')
		}
	}
	msgLines := splitLines(out.String())
	if len(msgLines) > lines {
		msgLines = msgLines[len(msgLines)-lines:]
	}
	s := strings.Join(msgLines, "\n")
	if len(s) > maxBytes {
		s = s[len(s)-maxBytes:]
	}
	return s
}

// writeSimulatedLog appends one CRI log line explaining a simulated container.
func writeSimulatedLog(path, msg string) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s stdout F gauntlet: %s\n", time.Now().UTC().Format(time.RFC3339Nano), msg)
}

func splitLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func fields(s string) []string { return strings.Fields(s) }
