package local

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/hoststate"
	"github.com/gauntlet-dev/gauntlet/internal/pidfile"
)

// Info is what a cluster records about itself in its state folder (cluster.json).
type Info struct {
	Name        string       `json:"name"`
	Dir         string       `json:"dir"`
	PodCIDR     netip.Prefix `json:"podCIDR"`
	ServiceCIDR netip.Prefix `json:"serviceCIDR"`
	Bridge      string       `json:"bridge,omitempty"`
	Server      string       `json:"server,omitempty"`
	Kubeconfig  string       `json:"kubeconfig,omitempty"`
	Nodes       []string     `json:"nodes,omitempty"`
	Phase       string       `json:"phase"`
	Created     time.Time    `json:"created"`
	// Running is true while the process that owns the cluster is alive (not stored).
	Running bool `json:"-"`
}

// Phases recorded in Info.Phase.
const (
	PhaseCreating = "Creating"
	PhaseRunning  = "Running"
	PhaseDeleting = "Deleting"
)

// StateRoot resolves the state root (see hoststate.StateRoot).
func StateRoot(root string) string { return hoststate.StateRoot(root) }

func clustersDir(root string) string { return filepath.Join(root, "clusters") }

// rootsDir is the registry of other state roots kept in a home root: one file
// per root that a cluster was created in, holding that root's path, so that GC
// of the home root (StateRoot("") by default) also finds clusters left under
// temporary roots, such as the ones tests use.
func rootsDir(home string) string { return filepath.Join(home, "roots") }

func rootRecord(home, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(rootsDir(home), hex.EncodeToString(sum[:8]))
}

// registerRoot records root in the registry of the home root (StateRoot("")),
// unless it is that root. Create calls it before it makes anything under root.
func registerRoot(root string) error {
	home := StateRoot("")
	abs, err := filepath.Abs(root)
	if err != nil {
		return fmt.Errorf("local: register state root %s: %w", root, err)
	}
	if abs == filepath.Clean(home) {
		return nil
	}
	if err := os.MkdirAll(rootsDir(home), 0o755); err != nil {
		return fmt.Errorf("local: register state root %s in %s (gc finds clusters through it): %w", abs, rootsDir(home), err)
	}
	rec := rootRecord(home, abs)
	if b, err := os.ReadFile(rec); err == nil && string(b) == abs+"\n" {
		return nil
	}
	tmp := rec + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, []byte(abs+"\n"), 0o644); err != nil {
		return fmt.Errorf("local: register state root %s in %s (gc finds clusters through it): %w", abs, rootsDir(home), err)
	}
	return os.Rename(tmp, rec)
}

// registeredRoots returns the state roots recorded in home's registry, with the
// path of each one's record.
func registeredRoots(home string) (map[string]string, error) {
	entries, err := os.ReadDir(rootsDir(home))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("local: read the state-root registry %s: %w", rootsDir(home), err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || strings.Contains(e.Name(), ".tmp") {
			continue
		}
		rec := filepath.Join(rootsDir(home), e.Name())
		b, err := os.ReadFile(rec)
		if err != nil {
			continue
		}
		if root := strings.TrimSpace(string(b)); filepath.IsAbs(root) {
			out[root] = rec
		}
	}
	return out, nil
}

func writeInfo(info Info) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(info.Dir, "cluster.json.tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("local: write cluster record: %w", err)
	}
	return os.Rename(tmp, filepath.Join(info.Dir, "cluster.json"))
}

func readInfo(dir string) (Info, error) {
	var info Info
	b, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("local: %s: corrupt cluster record: %w", dir, err)
	}
	_, info.Running, _ = pidfile.Alive(hoststate.OwnerRecord(dir))
	return info, nil
}

// List returns the clusters recorded under root (see StateRoot), sorted by name.
func List(root string) ([]Info, error) {
	root = StateRoot(root)
	entries, err := os.ReadDir(clustersDir(root))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("local: list clusters: %w", err)
	}
	var out []Info
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(clustersDir(root), e.Name())
		info, err := readInfo(dir)
		if err != nil {
			// A folder without a record: a creation that died very early.
			info = Info{Name: e.Name(), Dir: dir, Phase: "Unknown"}
			_, info.Running, _ = pidfile.Alive(hoststate.OwnerRecord(dir))
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// lockRoot takes an exclusive lock on the state root for allocation decisions.
func lockRoot(root string) (func(), error) {
	if err := os.MkdirAll(clustersDir(root), 0o755); err != nil {
		return nil, fmt.Errorf("local: create state root %s: %w", root, err)
	}
	unlock, err := hoststate.Lock(filepath.Join(root, "lock"))
	if err != nil {
		return nil, fmt.Errorf("local: lock state root: %w", err)
	}
	return unlock, nil
}
