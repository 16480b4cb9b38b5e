package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Modes the kubelet uses.
const (
	defaultFileMode  = int32(0o644)
	emptyDirMode     = 0o777
	dataDirName      = "..data"
	tokenRefreshFrac = 0.8
	maxTokenAge      = 24 * time.Hour
)

// errUnsupportedVolume marks a volume type the nodes cannot provide.
var errUnsupportedVolume = errors.New("volume type not supported by the embedded cluster's nodes (supported: emptyDir, configMap, secret, downwardAPI, projected, persistentVolumeClaim with hostPath or local PVs, ephemeral, hostPath)")

// mountSource is where a pod volume lives on the host.
type mountSource struct {
	path string
	// readOnly: the volume type is always mounted read-only (configMap,
	// secret, downwardAPI, projected) or the claim says so.
	readOnly bool
	// managed: the node writes the volume's content (atomic writer).
	managed bool
}

// payloadFile is one file of a configMap, secret, downwardAPI or projected volume.
type payloadFile struct {
	data []byte
	mode int32
	uid  *int64 // owner, for service account tokens when the pod has one user
}

// cachedToken is a service account token and when to refresh it.
type cachedToken struct {
	token     string
	refreshAt time.Time
}

// volumeManager materializes one pod's volumes in its folder.
type volumeManager struct {
	p      *provider
	dir    string // the pod's volumes folder
	tokens map[string]cachedToken
}

// volumeDir is where the node keeps a pod volume.
func (vm *volumeManager) volumeDir(name string) string { return filepath.Join(vm.dir, name) }

// setupAll materializes every volume of pod, returning where each lives. It
// stops at the first volume that cannot be set up (the caller retries).
func (vm *volumeManager) setupAll(ctx context.Context, ec envContext) (map[string]mountSource, error) {
	pod := ec.pod
	out := map[string]mountSource{}
	if err := os.MkdirAll(vm.dir, 0o750); err != nil {
		return nil, fmt.Errorf("volumes folder: %w", err)
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		src, err := vm.setup(ctx, ec, v)
		if err != nil {
			return nil, &volumeError{volume: v.Name, err: err}
		}
		out[v.Name] = src
	}
	return out, nil
}

// volumeError names the volume that failed, as the kubelet's FailedMount events do.
type volumeError struct {
	volume string
	err    error
}

func (e *volumeError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.volume, e.err)
}
func (e *volumeError) Unwrap() error { return e.err }

// setup materializes one volume.
func (vm *volumeManager) setup(ctx context.Context, ec envContext, v *corev1.Volume) (mountSource, error) {
	pod := ec.pod
	dir := vm.volumeDir(v.Name)
	fsGroup := podFSGroup(pod)
	switch {
	case v.EmptyDir != nil:
		if err := os.MkdirAll(dir, emptyDirMode); err != nil {
			return mountSource{}, err
		}
		if err := os.Chmod(dir, emptyDirMode); err != nil {
			return mountSource{}, err
		}
		if fsGroup != nil {
			if err := setOwnership(dir, *fsGroup, false, fsGroupPolicy(pod)); err != nil {
				return mountSource{}, err
			}
		}
		return mountSource{path: dir}, nil
	case v.HostPath != nil:
		p, err := hostPathVolume(v.HostPath)
		return mountSource{path: p}, err
	case v.PersistentVolumeClaim != nil:
		return vm.claimVolume(ctx, pod, v.PersistentVolumeClaim.ClaimName, v.PersistentVolumeClaim.ReadOnly, "")
	case v.Ephemeral != nil:
		return vm.claimVolume(ctx, pod, pod.Name+"-"+v.Name, false, pod.UID)
	case v.ConfigMap != nil, v.Secret != nil, v.DownwardAPI != nil, v.Projected != nil:
		if err := vm.refreshManaged(ctx, ec, v); err != nil {
			return mountSource{}, err
		}
		return mountSource{path: dir, readOnly: true, managed: true}, nil
	}
	return mountSource{}, errUnsupportedVolume
}

// refreshManaged (re)writes a configMap, secret, downwardAPI or projected
// volume; files change atomically (a ..data symlink swap) as on a real node.
func (vm *volumeManager) refreshManaged(ctx context.Context, ec envContext, v *corev1.Volume) error {
	pod := ec.pod
	payload, err := vm.payload(ctx, ec, v)
	if err != nil {
		return err
	}
	dir := vm.volumeDir(v.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	_, err = writeAtomic(dir, payload, podFSGroup(pod))
	return err
}

// payload computes the files of a managed volume.
func (vm *volumeManager) payload(ctx context.Context, ec envContext, v *corev1.Volume) (map[string]payloadFile, error) {
	pod := ec.pod
	out := map[string]payloadFile{}
	switch {
	case v.ConfigMap != nil:
		s := v.ConfigMap
		return out, vm.configMapFiles(ctx, pod, s.Name, s.Items, s.Optional, modeOr(s.DefaultMode), out)
	case v.Secret != nil:
		s := v.Secret
		return out, vm.secretFiles(ctx, pod, s.SecretName, s.Items, s.Optional, modeOr(s.DefaultMode), out)
	case v.DownwardAPI != nil:
		return out, downwardFiles(ec, v.DownwardAPI.Items, modeOr(v.DownwardAPI.DefaultMode), out)
	case v.Projected != nil:
		mode := modeOr(v.Projected.DefaultMode)
		for i, src := range v.Projected.Sources {
			var err error
			switch {
			case src.ConfigMap != nil:
				err = vm.configMapFiles(ctx, pod, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, mode, out)
			case src.Secret != nil:
				err = vm.secretFiles(ctx, pod, src.Secret.Name, src.Secret.Items, src.Secret.Optional, mode, out)
			case src.DownwardAPI != nil:
				err = downwardFiles(ec, src.DownwardAPI.Items, mode, out)
			case src.ServiceAccountToken != nil:
				err = vm.tokenFile(ctx, pod, v.Name, i, src.ServiceAccountToken, mode, out)
			case src.ClusterTrustBundle != nil:
				err = fmt.Errorf("projected clusterTrustBundle sources are not supported by the embedded cluster's nodes")
			case src.PodCertificate != nil:
				err = fmt.Errorf("projected podCertificate sources are not supported by the embedded cluster's nodes")
			}
			if err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return out, nil
}

func modeOr(m *int32) int32 {
	if m == nil {
		return defaultFileMode
	}
	return *m
}

func (vm *volumeManager) configMapFiles(ctx context.Context, pod *corev1.Pod, name string, items []corev1.KeyToPath, optional *bool, mode int32, out map[string]payloadFile) error {
	cm, err := vm.p.getConfigMap(ctx, pod.Namespace, name)
	if err != nil {
		return readErr("configmap", name, optional, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles("configmap", name, data, items, optional, mode, out)
}

func (vm *volumeManager) secretFiles(ctx context.Context, pod *corev1.Pod, name string, items []corev1.KeyToPath, optional *bool, mode int32, out map[string]payloadFile) error {
	s, err := vm.p.getSecret(ctx, pod.Namespace, name)
	if err != nil {
		return readErr("secret", name, optional, err)
	}
	return keyFiles("secret", name, s.Data, items, optional, mode, out)
}

// readErr says what a failed read of the configmap or secret (kind) a pod
// names means: nothing (leave it out) when it is optional and missing, else an
// error naming it.
func readErr(kind, name string, optional *bool, err error) error {
	switch {
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("%s %q: %w", kind, name, err)
	case optional != nil && *optional:
		return nil
	}
	return fmt.Errorf("%s %q not found", kind, name)
}

// keyFiles turns a configMap's or secret's keys (all, or the listed items)
// into files.
func keyFiles(kind, name string, data map[string][]byte, items []corev1.KeyToPath, optional *bool, mode int32, out map[string]payloadFile) error {
	if len(items) == 0 {
		for k, v := range data {
			out[k] = payloadFile{data: v, mode: mode}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional != nil && *optional {
				continue
			}
			return fmt.Errorf("%s %q references non-existent key %q", kind, name, it.Key)
		}
		m := mode
		if it.Mode != nil {
			m = *it.Mode
		}
		out[it.Path] = payloadFile{data: v, mode: m}
	}
	return nil
}

// downwardFiles renders downward API items.
func downwardFiles(ec envContext, items []corev1.DownwardAPIVolumeFile, mode int32, out map[string]payloadFile) error {
	for _, it := range items {
		var val string
		var err error
		switch {
		case it.FieldRef != nil:
			val, err = podFieldValue(ec, it.FieldRef.FieldPath, true)
		case it.ResourceFieldRef != nil:
			val, err = resourceFieldValue(ec, nil, it.ResourceFieldRef)
		default:
			err = fmt.Errorf("downwardAPI item %q names neither fieldRef nor resourceFieldRef", it.Path)
		}
		if err != nil {
			return fmt.Errorf("downwardAPI %q: %w", it.Path, err)
		}
		m := mode
		if it.Mode != nil {
			m = *it.Mode
		}
		out[it.Path] = payloadFile{data: []byte(val), mode: m}
	}
	return nil
}

// tokenFile requests (or reuses until 80% of its lifetime) a service account
// token bound to the pod, through the TokenRequest API.
func (vm *volumeManager) tokenFile(ctx context.Context, pod *corev1.Pod, volume string, idx int, src *corev1.ServiceAccountTokenProjection, mode int32, out map[string]payloadFile) error {
	key := fmt.Sprintf("%s/%d", volume, idx)
	fsUser := podFSUser(pod)
	if fsUser != nil || podFSGroup(pod) != nil {
		mode = 0o600
	}
	if t, ok := vm.tokens[key]; ok && time.Now().Before(t.refreshAt) {
		out[src.Path] = payloadFile{data: []byte(t.token), mode: mode, uid: fsUser}
		return nil
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	var auds []string
	if src.Audience != "" {
		auds = []string{src.Audience}
	}
	tr, err := vm.p.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			Audiences:         auds,
			ExpirationSeconds: src.ExpirationSeconds,
			BoundObjectRef: &authenticationv1.BoundObjectReference{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("request a token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	now := time.Now()
	life := tr.Status.ExpirationTimestamp.Sub(now)
	refresh := now.Add(time.Duration(float64(life) * tokenRefreshFrac))
	if refresh.Sub(now) > maxTokenAge {
		refresh = now.Add(maxTokenAge)
	}
	vm.tokens[key] = cachedToken{token: tr.Status.Token, refreshAt: refresh}
	out[src.Path] = payloadFile{data: []byte(tr.Status.Token), mode: mode, uid: fsUser}
	return nil
}

// claimVolume resolves a PVC to its bound PV's host folder (hostPath or
// local). owner, when set, is the pod that must own the claim (ephemeral
// volumes).
func (vm *volumeManager) claimVolume(ctx context.Context, pod *corev1.Pod, claim string, readOnly bool, owner types.UID) (mountSource, error) {
	pvc, err := vm.p.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return mountSource{}, fmt.Errorf("persistentvolumeclaim %q not found", claim)
		}
		return mountSource{}, fmt.Errorf("persistentvolumeclaim %q: %w", claim, err)
	}
	if owner != "" {
		owned := false
		for _, ref := range pvc.OwnerReferences {
			if ref.UID == owner {
				owned = true
			}
		}
		if !owned {
			return mountSource{}, fmt.Errorf("persistentvolumeclaim %q was not created for the pod", claim)
		}
	}
	if pvc.DeletionTimestamp != nil {
		return mountSource{}, fmt.Errorf("persistentvolumeclaim %q is being deleted", claim)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return mountSource{}, fmt.Errorf("persistentvolumeclaim %q is not bound yet (phase %s)", claim, pvc.Status.Phase)
	}
	pv, err := vm.p.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return mountSource{}, fmt.Errorf("persistentvolume %q of claim %q: %w", pvc.Spec.VolumeName, claim, err)
	}
	var dir string
	ownership := false
	switch {
	case pv.Spec.HostPath != nil:
		dir, err = hostPathVolume(pv.Spec.HostPath)
		if err != nil {
			return mountSource{}, fmt.Errorf("persistentvolume %q: %w", pv.Name, err)
		}
	case pv.Spec.Local != nil:
		dir = pv.Spec.Local.Path
		ownership = true // the local volume plugin applies fsGroup; hostPath does not
	default:
		return mountSource{}, fmt.Errorf("persistentvolume %q has neither hostPath nor local source: the embedded cluster's nodes can mount only those", pv.Name)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return mountSource{}, fmt.Errorf("persistentvolume %q: path %s: %w", pv.Name, dir, err)
	}
	if ownership && st.IsDir() {
		if g := podFSGroup(pod); g != nil {
			if err := setOwnership(dir, *g, false, fsGroupPolicy(pod)); err != nil {
				return mountSource{}, fmt.Errorf("persistentvolume %q: fsGroup: %w", pv.Name, err)
			}
		}
	}
	return mountSource{path: dir, readOnly: readOnly}, nil
}

// hostPathVolume checks (or creates) a hostPath volume's path by its type.
func hostPathVolume(hp *corev1.HostPathVolumeSource) (string, error) {
	p := filepath.Clean(hp.Path)
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("hostPath %q is not absolute", hp.Path)
	}
	t := corev1.HostPathUnset
	if hp.Type != nil {
		t = *hp.Type
	}
	st, err := os.Stat(p)
	exists := err == nil
	switch t {
	case corev1.HostPathUnset:
		return p, nil
	case corev1.HostPathDirectoryOrCreate:
		if !exists {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return "", fmt.Errorf("hostPath %s: %w", p, err)
			}
			return p, nil
		}
		if !st.IsDir() {
			return "", fmt.Errorf("hostPath %s exists and is not a directory", p)
		}
	case corev1.HostPathFileOrCreate:
		if !exists {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return "", fmt.Errorf("hostPath %s: %w", p, err)
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return "", fmt.Errorf("hostPath %s: %w", p, err)
			}
			f.Close()
			return p, nil
		}
		if st.IsDir() {
			return "", fmt.Errorf("hostPath %s exists and is a directory, not a file", p)
		}
	default:
		if !exists {
			return "", fmt.Errorf("hostPath type check failed: %s does not exist (type %s)", p, t)
		}
		m := st.Mode()
		ok := map[corev1.HostPathType]bool{
			corev1.HostPathDirectory: m.IsDir(),
			corev1.HostPathFile:      m.IsRegular(),
			corev1.HostPathSocket:    m&fs.ModeSocket != 0,
			corev1.HostPathCharDev:   m&fs.ModeCharDevice != 0,
			corev1.HostPathBlockDev:  m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0,
		}[t]
		if !ok {
			return "", fmt.Errorf("hostPath type check failed: %s is not a %s", p, t)
		}
	}
	return p, nil
}

// podFSGroup is the pod's fsGroup, if any.
func podFSGroup(pod *corev1.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		return sc.FSGroup
	}
	return nil
}

func fsGroupPolicy(pod *corev1.Pod) *corev1.PodFSGroupChangePolicy {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroupChangePolicy
	}
	return nil
}

// podFSUser is the single runAsUser all containers share, if any (the kubelet
// then owns service account token files by it).
func podFSUser(pod *corev1.Pod) *int64 {
	var user *int64
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for i := range all {
		u := effectiveRunAsUser(pod, &all[i])
		if u == nil || (user != nil && *user != *u) {
			return nil
		}
		user = u
	}
	return user
}

// effectiveRunAsUser is the container's runAsUser, else the pod's.
func effectiveRunAsUser(pod *corev1.Pod, c *corev1.Container) *int64 {
	if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
		return c.SecurityContext.RunAsUser
	}
	if pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.RunAsUser != nil {
		return pod.Spec.SecurityContext.RunAsUser
	}
	return nil
}

// setOwnership applies fsGroup as the kubelet does: group ownership, group
// read (and write unless readOnly), and setgid on folders. With policy
// OnRootMismatch nothing changes when the root already conforms.
func setOwnership(root string, gid int64, readOnly bool, policy *corev1.PodFSGroupChangePolicy) error {
	mask := os.FileMode(0o660)
	if readOnly {
		mask = 0o440
	}
	if policy != nil && *policy == corev1.FSGroupChangeOnRootMismatch {
		if st, err := os.Stat(root); err == nil {
			if sys, ok := st.Sys().(*syscall.Stat_t); ok && int64(sys.Gid) == gid {
				want := mask | 0o110
				if !st.IsDir() || (st.Mode().Perm()&want == want && st.Mode()&os.ModeSetgid != 0) {
					return nil
				}
			}
		}
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, -1, int(gid)); err != nil {
			return fmt.Errorf("fsGroup: chown %s: %w", p, err)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		m := mask
		if info.IsDir() {
			m |= os.ModeSetgid | 0o110
		}
		if err := os.Chmod(p, info.Mode()|m); err != nil {
			return fmt.Errorf("fsGroup: chmod %s: %w", p, err)
		}
		return nil
	})
}

// validPayloadPath rejects absolute paths and paths that leave the volume.
func validPayloadPath(p string) error {
	if p == "" || path.IsAbs(p) {
		return fmt.Errorf("invalid file path %q: must be relative", p)
	}
	if path.Clean(p) == "." {
		return fmt.Errorf("invalid file path %q: names no file", p)
	}
	parts := strings.Split(p, "/")
	if strings.HasPrefix(parts[0], "..") {
		return fmt.Errorf("invalid file path %q: must not start with '..'", p)
	}
	for _, part := range parts {
		if part == ".." {
			return fmt.Errorf("invalid file path %q: must not contain '..'", p)
		}
	}
	return nil
}

// writeAtomic makes dir show exactly payload, as the kubelet's atomic writer
// (pkg/volume/util/atomic_writer.go) does: the files live in a timestamped
// folder that "..data" points to, and each top-level payload name is a symlink
// through "..data", so a reader sees the old or the new content, never a mix.
// An update swaps "..data" and then removes only the previous payload's
// top-level names that left: anything else in dir (the mount points of volumes
// mounted beneath this one, see makeNestedMountpoints) stays. It reports
// whether the content changed.
func writeAtomic(dir string, payload map[string]payloadFile, gid *int64) (bool, error) {
	clean := make(map[string]payloadFile, len(payload))
	for p, f := range payload {
		if err := validPayloadPath(p); err != nil {
			return false, err
		}
		if gid != nil {
			f.mode |= 0o440 // fsGroup: group-readable files (the volume is read-only)
		}
		clean[path.Clean(p)] = f
	}
	payload = clean
	tops := map[string]bool{}
	for rel := range payload {
		top, _, _ := strings.Cut(rel, "/")
		tops[top] = true
	}

	dataLink := filepath.Join(dir, dataDirName)
	old, err := os.Readlink(dataLink)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("write volume: %w", err)
	}
	// The previous payload's top-level names that are not in the new one.
	var gone []string
	if old != "" {
		entries, err := os.ReadDir(filepath.Join(dir, old))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("write volume: previous payload: %w", err)
		}
		for _, e := range entries {
			if !tops[e.Name()] {
				gone = append(gone, e.Name())
			}
		}
	}

	current := old
	changed := old == "" || !sameContent(filepath.Join(dir, old), payload)
	if changed {
		ts, err := writeTimestampDir(dir, payload, gid)
		if err != nil {
			return false, err
		}
		tmp := filepath.Join(dir, dataDirName+"_tmp")
		_ = os.Remove(tmp)
		err = os.Symlink(ts, tmp)
		if err == nil {
			err = os.Rename(tmp, dataLink)
		}
		if err != nil {
			_ = os.Remove(tmp)
			_ = os.RemoveAll(filepath.Join(dir, ts))
			return false, fmt.Errorf("write volume: swap %s: %w", dataDirName, err)
		}
		current = ts
	}

	// User-visible names: a symlink through ..data for each top-level name,
	// unless the name exists already (as a link, or a nested mount point).
	for top := range tops {
		link := filepath.Join(dir, top)
		if _, err := os.Lstat(link); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := os.Symlink(filepath.Join(dataDirName, top), link); err != nil {
			return changed, fmt.Errorf("write volume: %w", err)
		}
	}
	// The names that left: only the writer's own links are removed.
	for _, name := range gone {
		link := filepath.Join(dir, name)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join(dataDirName, name) {
			if err := os.Remove(link); err != nil {
				return changed, fmt.Errorf("write volume: %w", err)
			}
		}
	}
	// The previous payload, and any left by a writer that died mid-update.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return changed, fmt.Errorf("write volume: %w", err)
	}
	for _, e := range entries {
		if name := e.Name(); name != current && isTimestampDir(name) {
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				return changed, fmt.Errorf("write volume: remove the previous payload: %w", err)
			}
		}
	}
	return changed, nil
}

// timestampLayout names the atomic writer's payload folders ("..2006_01_02_15_04_05.<random>").
const timestampLayout = "2006_01_02_15_04_05"

// isTimestampDir reports whether name is one of the atomic writer's payload folders.
func isTimestampDir(name string) bool {
	rest, ok := strings.CutPrefix(name, "..")
	if !ok || len(rest) <= len(timestampLayout) || rest[len(timestampLayout)] != '.' {
		return false
	}
	_, err := time.Parse(timestampLayout, rest[:len(timestampLayout)])
	return err == nil
}

// writeTimestampDir writes payload into a new timestamped folder of dir and
// returns its name.
func writeTimestampDir(dir string, payload map[string]payloadFile, gid *int64) (string, error) {
	tsDir, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format(timestampLayout)+".")
	if err != nil {
		return "", fmt.Errorf("write volume: %w", err)
	}
	ts := filepath.Base(tsDir)
	fail := func(err error) (string, error) {
		_ = os.RemoveAll(tsDir)
		return "", fmt.Errorf("write volume: %w", err)
	}
	// 0755 whatever the umask: group and others must reach the files.
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return fail(err)
	}
	for _, rel := range slices.Sorted(maps.Keys(payload)) {
		f := payload[rel]
		full := filepath.Join(tsDir, filepath.FromSlash(rel))
		if err := mkdirAllMode(tsDir, filepath.Dir(full), 0o755); err != nil {
			return fail(err)
		}
		mode := os.FileMode(f.mode) & os.ModePerm
		if err := os.WriteFile(full, f.data, mode); err != nil {
			return fail(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			return fail(err)
		}
		if f.uid != nil || gid != nil {
			uid, g := -1, -1
			if f.uid != nil {
				uid = int(*f.uid)
			}
			if gid != nil {
				g = int(*gid)
			}
			if err := os.Chown(full, uid, g); err != nil {
				return fail(err)
			}
		}
	}
	if gid != nil {
		// fsGroup, as SetVolumeOwnership does on a read-only volume: folders
		// get the group, group read and search, and setgid.
		err := filepath.WalkDir(tsDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if err := os.Chown(p, -1, int(*gid)); err != nil {
				return err
			}
			return os.Chmod(p, 0o755|os.ModeSetgid)
		})
		if err == nil {
			if err = os.Chown(dir, -1, int(*gid)); err == nil {
				err = os.Chmod(dir, 0o755|os.ModeSetgid)
			}
		}
		if err != nil {
			return fail(err)
		}
	}
	return ts, nil
}

// mkdirAllMode creates dir and its missing parents below root with mode
// (whatever the umask).
func mkdirAllMode(root, dir string, mode os.FileMode) error {
	if dir == root {
		return nil
	}
	if _, err := os.Lstat(dir); err == nil {
		return nil
	}
	if err := mkdirAllMode(root, filepath.Dir(dir), mode); err != nil {
		return err
	}
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Chmod(dir, mode)
}

// sameContent reports whether dir holds exactly payload (data and modes).
func sameContent(dir string, payload map[string]payloadFile) bool {
	seen := 0
	ok := true
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		f, found := payload[filepath.ToSlash(rel)]
		if !found {
			ok = false
			return filepath.SkipAll
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, f.data) || info.Mode().Perm() != os.FileMode(f.mode)&os.ModePerm {
			ok = false
			return filepath.SkipAll
		}
		seen++
		return nil
	})
	return err == nil && ok && seen == len(payload)
}
