package kind

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/hoststate"
	"github.com/gauntlet-dev/gauntlet/internal/pidfile"
)

func recordsDir(root string) string { return filepath.Join(hoststate.StateRoot(root), "kind") }

// subnets are the pod subnets of offline clusters, one per cluster, so that the host routes
// each to its own node: 10.244.0.0/16 (kind's default pod network) in sixteen /20s.
const subnetCount = 16

func subnet(i int) string { return fmt.Sprintf("10.244.%d.0/20", i*16) }

// record is what the registry keeps of a kind cluster: its owner, so that GC knows it
// abandoned, and what Delete must undo besides kind's containers.
type record struct {
	Name       string    `json:"name"`
	Owner      int       `json:"owner"`
	OwnerStart uint64    `json:"ownerStart"` // /proc/PID/stat's start time: a reused PID is not the owner
	Created    time.Time `json:"created"`
	NodeImage  string    `json:"nodeImage,omitempty"`
	PodSubnet  string    `json:"podSubnet,omitempty"`
	NodeIP     string    `json:"nodeIP,omitempty"` // the route to PodSubnet goes via NodeIP
	Kubeconfig string    `json:"kubeconfig,omitempty"`
}

func (r record) ownerAlive() bool {
	start, err := pidfile.StartTime(r.Owner)
	return err == nil && start == r.OwnerStart
}

// registry is the folder of kind cluster records: DIR/NAME/record.json beside the cluster's
// kubeconfig and CNI configuration.
type registry struct{ dir string }

func (g registry) clusterDir(name string) string { return filepath.Join(g.dir, name) }

func (g registry) lock() (func(), error) {
	unlock, err := hoststate.Lock(filepath.Join(g.dir, ".lock"))
	if err != nil {
		return nil, fmt.Errorf("kind: cluster registry: %w", err)
	}
	return unlock, nil
}

func (g registry) list() ([]record, error) {
	entries, err := os.ReadDir(g.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kind: cluster registry: %w", err)
	}
	var out []record
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(g.dir, e.Name(), "record.json"))
		if err != nil {
			continue
		}
		var r record
		if json.Unmarshal(b, &r) == nil && r.Name == e.Name() {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// add records a new cluster owned by this process, with a free pod subnet when withSubnet.
// A recorded cluster of the same name is refused while its owner lives.
func (g registry) add(name string, withSubnet bool) (record, error) {
	unlock, err := g.lock()
	if err != nil {
		return record{}, err
	}
	defer unlock()
	recs, err := g.list()
	if err != nil {
		return record{}, err
	}
	used := map[string]bool{}
	for _, r := range recs {
		if r.Name == name {
			if r.ownerAlive() {
				return record{}, fmt.Errorf("kind: a cluster called %s already runs (owner process %d)", name, r.Owner)
			}
			continue // abandoned: Create's kind call fails on it unless GC removed it first
		}
		used[r.PodSubnet] = true
	}
	start, err := pidfile.StartTime(os.Getpid())
	if err != nil {
		return record{}, err
	}
	r := record{Name: name, Owner: os.Getpid(), OwnerStart: start, Created: time.Now().UTC()}
	if withSubnet {
		for i := 0; i < subnetCount && r.PodSubnet == ""; i++ {
			if !used[subnet(i)] {
				r.PodSubnet = subnet(i)
			}
		}
		if r.PodSubnet == "" {
			return record{}, fmt.Errorf("kind: all %d pod subnets of 10.244.0.0/16 are taken by recorded clusters: delete some (`gauntlet cluster gc` removes abandoned ones)", subnetCount)
		}
	}
	if err := os.MkdirAll(g.clusterDir(name), 0o755); err != nil {
		return record{}, fmt.Errorf("kind: %w", err)
	}
	return r, g.writeLocked(r)
}

func (g registry) write(r record) error {
	unlock, err := g.lock()
	if err != nil {
		return err
	}
	defer unlock()
	return g.writeLocked(r)
}

func (g registry) writeLocked(r record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(g.clusterDir(r.Name), "record.json")
	if err := os.WriteFile(p+".tmp", b, 0o644); err != nil {
		return fmt.Errorf("kind: record cluster %s: %w", r.Name, err)
	}
	return os.Rename(p+".tmp", p)
}

func (g registry) remove(name string) {
	unlock, err := g.lock()
	if err != nil {
		return
	}
	defer unlock()
	_ = os.RemoveAll(g.clusterDir(name))
}

// abandoned returns the record of a cluster called name whose owner is gone, if any.
func (g registry) abandoned(name string) (record, bool) {
	b, err := os.ReadFile(filepath.Join(g.clusterDir(name), "record.json"))
	if err != nil {
		return record{}, false
	}
	var r record
	if json.Unmarshal(b, &r) != nil || r.Name != name || r.ownerAlive() {
		return record{}, false
	}
	return r, true
}

// Info is what List says of a kind cluster Gauntlet recorded.
type Info struct {
	// Name is kind's cluster name.
	Name string
	// Running says whether the process that created it still runs; a cluster
	// whose owner is gone is removed by GC.
	Running bool
	// PodSubnet is the pod network the host routes to the node (offline image),
	// empty with kind's own node image.
	PodSubnet string
	// Kubeconfig is the cluster's kubeconfig file.
	Kubeconfig string
}

// List returns the kind clusters recorded under stateDir (see StateRoot), by name.
func List(stateDir string) ([]Info, error) {
	reg := registry{dir: recordsDir(stateDir)}
	if _, err := os.Stat(reg.dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	unlock, err := reg.lock()
	if err != nil {
		return nil, err
	}
	recs, err := reg.list()
	unlock()
	if err != nil {
		return nil, err
	}
	infos := make([]Info, 0, len(recs))
	for _, r := range recs {
		infos = append(infos, Info{Name: r.Name, Running: r.ownerAlive(), PodSubnet: r.PodSubnet, Kubeconfig: r.Kubeconfig})
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	return infos, nil
}
