package kubelet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gauntlet-dev/gauntlet/cluster/internal/images"
	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/container"
)

// Preparing a container instance: env, command, image mapping, user and
// mounts, and the folders the instance must be able to reach.

// prepared is what a container instance needs to start.
type prepared struct {
	simulated bool
	message   string
	res       images.Resolution
	spec      container.Spec
	imageID   string
	env       *envList
}

// prepare resolves env, command, image mapping, user and mounts.
func (w *podWorker) prepare(c *ctrRun) (prepared, error) {
	ctx := w.p.ctx
	ec := w.envContext()
	w.mu.Lock()
	spec := c.spec
	pod := w.pod
	mounts := w.mounts
	w.mu.Unlock()

	env, err := w.p.containerEnv(ctx, ec, &spec)
	if err != nil {
		return prepared{}, err
	}
	command := make([]string, len(spec.Command))
	for i, s := range spec.Command {
		command[i] = expand(s, env.Get)
	}
	args := make([]string, len(spec.Args))
	for i, s := range spec.Args {
		args[i] = expand(s, env.Get)
	}
	res, err := w.p.cfg.Images.Resolve(spec.Image, command, args)
	if err != nil {
		return prepared{}, err
	}
	if res.Simulated {
		return prepared{simulated: true, message: res.Message, res: res, imageID: images.SimulatedImageIDPrefix + spec.Image}, nil
	}

	// User and groups: container securityContext over pod over image.
	var uid, gid *int64
	var nonRoot *bool
	if psc := pod.Spec.SecurityContext; psc != nil {
		uid, gid, nonRoot = psc.RunAsUser, psc.RunAsGroup, psc.RunAsNonRoot
	}
	if csc := spec.SecurityContext; csc != nil {
		if csc.RunAsUser != nil {
			uid = csc.RunAsUser
		}
		if csc.RunAsGroup != nil {
			gid = csc.RunAsGroup
		}
		if csc.RunAsNonRoot != nil {
			nonRoot = csc.RunAsNonRoot
		}
	}
	if uid == nil && res.UID != nil {
		uid = res.UID
		if gid == nil {
			gid = res.GID
		}
	}
	if nonRoot != nil && *nonRoot && (uid == nil || *uid == 0) {
		return prepared{}, fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", formatPod(pod), spec.Name)
	}
	dropRoot := res.RootUID != nil && (uid == nil || *uid == 0)
	if dropRoot {
		uid, gid = res.RootUID, res.RootGID
	}
	var cs container.Spec
	if uid != nil {
		u := uint32(*uid)
		cs.UID = &u
		g := uint32(0)
		if gid != nil {
			g = uint32(*gid)
		}
		cs.GID = &g
	} else if gid != nil {
		u, g := uint32(0), uint32(*gid)
		cs.UID, cs.GID = &u, &g
	}
	if psc := pod.Spec.SecurityContext; psc != nil && !dropRoot { // setpriv --clear-groups
		for _, g := range psc.SupplementalGroups {
			cs.SupplementalGroups = append(cs.SupplementalGroups, uint32(g))
		}
		if psc.FSGroup != nil {
			cs.SupplementalGroups = append(cs.SupplementalGroups, uint32(*psc.FSGroup))
		}
	}

	hostname := podHostname(pod)
	full := newEnvList()
	full.Set("PATH", defaultPATH)
	for _, kv := range res.Env {
		k, v, _ := cutEnv(kv)
		full.Set(k, v)
	}
	full.Set("HOSTNAME", hostname)
	if _, ok := full.Get("HOME"); !ok {
		if home, ok := imageHome(res.Users, uid); ok {
			full.Set("HOME", home)
		} else if uid == nil || *uid == 0 {
			full.Set("HOME", "/root")
		} else {
			full.Set("HOME", "/")
		}
	}
	for _, k := range env.keys {
		full.Set(k, env.vals[k])
	}

	var ms []container.Mount
	targets := map[string]bool{}
	for _, vm := range spec.VolumeMounts {
		src, ok := mounts[vm.Name]
		if !ok {
			return prepared{}, fmt.Errorf("volumeMount %q names no volume of the pod", vm.Name)
		}
		hostPath := src.path
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			sub = expand(vm.SubPathExpr, env.Get)
		}
		if sub != "" {
			hostPath, err = subPath(src.path, sub)
			if err != nil {
				return prepared{}, fmt.Errorf("volumeMount %q: %w", vm.Name, err)
			}
		}
		ms = append(ms, container.Mount{Source: hostPath, Target: vm.MountPath, ReadOnly: vm.ReadOnly || src.readOnly})
		targets[filepath.Clean(vm.MountPath)] = true
	}
	if err := makeNestedMountpoints(ms); err != nil {
		return prepared{}, err
	}
	etc := filepath.Join(w.dir, "etc")
	for _, f := range []string{"hosts", "hostname", "resolv.conf"} {
		target := "/etc/" + f
		src := filepath.Join(etc, f)
		if targets[target] {
			continue
		}
		if _, err := os.Stat(src); err != nil {
			continue
		}
		ms = append(ms, container.Mount{Source: src, Target: target})
	}
	accounts, err := w.writeAccounts(spec.Name, res.Users)
	if err != nil {
		return prepared{}, fmt.Errorf("image %s: %w", spec.Image, err)
	}
	for _, m := range accounts {
		if !targets[m.Target] {
			ms = append(ms, m)
		}
	}
	for _, a := range res.Aliases {
		if targets[a.Target] {
			continue
		}
		ms = append(ms, container.Mount{Source: a.Path, Target: a.Target, ReadOnly: true})
	}
	argv := append([]string(nil), res.Argv...)
	if hiddenInContainer(argv[0]) || !reachableByAll(argv[0]) {
		// Containers get a private /tmp: a host program there is bound in. So is one
		// in a folder that only its owner may enter (a build cache under /root), which
		// a container running as another user could not execute where it lies.
		target := path.Join(hiddenProgramDir, path.Base(argv[0]))
		ms = append(ms, container.Mount{Source: argv[0], Target: target, ReadOnly: true})
		argv[0] = target
	}
	sortMounts(ms)

	cs.Argv = argv
	cs.Env = full.Strings()
	cs.WorkingDir = spec.WorkingDir
	if cs.WorkingDir == "" {
		cs.WorkingDir = res.WorkingDir
	}
	cs.Hostname = hostname
	cs.Mounts = ms
	if dropRoot {
		if err := chownWorkingDir(ms, cs.WorkingDir, *res.RootUID); err != nil {
			return prepared{}, fmt.Errorf("image %s entrypoint: %w", spec.Image, err)
		}
	}
	return prepared{res: res, spec: cs, imageID: "gauntlet-local://" + res.Argv[0], env: env}, nil
}

// imageHome is the home folder of the image's own account for uid (root when
// uid is nil), as container runtimes take it from the image's /etc/passwd.
func imageHome(users []images.User, uid *int64) (string, bool) {
	id := int64(0)
	if uid != nil {
		id = *uid
	}
	return images.Home(users, id)
}

// writeAccounts writes, for a container whose image defines accounts of its
// own (users), the /etc/passwd and /etc/group it sees (the host's, with the
// image's entries in place of any host entry of the same name or id) into the
// pod's folder, and returns their read-only mounts; none without users.
func (w *podWorker) writeAccounts(ctr string, users []images.User) ([]container.Mount, error) {
	if len(users) == 0 {
		return nil, nil
	}
	dir := filepath.Join(w.dir, "etc", "accounts", ctr)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("image accounts: %w", err)
	}
	var ms []container.Mount
	for _, f := range []struct {
		name  string
		merge func([]byte, []images.User) []byte
	}{{"passwd", images.Passwd}, {"group", images.Group}} {
		host, err := os.ReadFile("/etc/" + f.name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("image accounts: %w", err)
		}
		p := filepath.Join(dir, f.name)
		if err := writeFileAtomic(p, f.merge(host, users), 0o644); err != nil {
			return nil, fmt.Errorf("image accounts: %w", err)
		}
		ms = append(ms, container.Mount{Source: p, Target: "/etc/" + f.name, ReadOnly: true})
	}
	return ms, nil
}

// chownWorkingDir does what the valkey and redis images' entrypoint does as
// root before it drops to its service user: `find . \! -user U -exec chown U`
// in the working directory. Only a working directory on a volume is walked (the
// container's own layer holds nothing another user wrote).
func chownWorkingDir(mounts []container.Mount, wd string, uid int64) error {
	if wd == "" {
		return nil
	}
	wd = path.Clean(wd)
	var src string
	for _, m := range mounts {
		t := path.Clean(m.Target)
		if m.ReadOnly || (wd != t && !strings.HasPrefix(wd, t+"/")) {
			continue
		}
		if fi, err := os.Stat(m.Source); err != nil || !fi.IsDir() {
			continue
		}
		src = filepath.Join(m.Source, strings.TrimPrefix(wd, t))
	}
	if src == "" {
		return nil
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && int64(st.Uid) != uid {
			if err := os.Lchown(p, int(uid), -1); err != nil {
				return fmt.Errorf("give %s to uid %d: %w", p, uid, err)
			}
		}
		return nil
	})
}

// hiddenProgramDir is where host programs that containers cannot see at
// their host path are bound.
const hiddenProgramDir = "/.gauntlet/bin"

// hiddenInContainer reports whether a host path is hidden inside containers
// (they get their own /tmp, /dev, /proc and /sys).
func hiddenInContainer(p string) bool {
	for _, d := range []string{"/tmp", "/dev", "/proc", "/sys"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// reachableByAll reports whether every folder above p lets any user through
// (the execute bit for others), so that a container of any uid reaches p.
func reachableByAll(p string) bool {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}
