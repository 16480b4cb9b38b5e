package capacity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/atomicfile"
)

// CacheFile is the measurements file's name in gauntlet's cache folder.
const CacheFile = "cluster-memory.json"

// Measurement is one cluster's measured resident memory for a target on a back end.
type Measurement struct {
	// Bytes is the memory of one cluster (before Growth).
	Bytes uint64 `json:"bytes"`
	// Clusters is how many clusters the measurement was divided over.
	Clusters int       `json:"clusters"`
	Taken    time.Time `json:"taken"`
}

type cacheDoc struct {
	Format int `json:"format"`
	// Clusters maps "BACKEND TARGET" to its measurement.
	Clusters map[string]Measurement `json:"clusters"`
}

// Cache keeps per-target measurements in a JSON file (Dir/CacheFile).
type Cache struct{ Dir string }

func key(backend, target string) string { return backend + " " + target }

func (c Cache) path() string { return filepath.Join(c.Dir, CacheFile) }

func (c Cache) read() (cacheDoc, error) {
	doc := cacheDoc{Format: 1, Clusters: map[string]Measurement{}}
	b, err := os.ReadFile(c.path())
	if errors.Is(err, fs.ErrNotExist) {
		return doc, nil
	}
	if err != nil {
		return doc, fmt.Errorf("capacity: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return doc, fmt.Errorf("capacity: decode %s: %w (delete it: the next run measures again)", c.path(), err)
	}
	if doc.Format != 1 {
		return doc, fmt.Errorf("capacity: %s has format %d, this gauntlet reads 1 (delete it: the next run measures again)", c.path(), doc.Format)
	}
	if doc.Clusters == nil {
		doc.Clusters = map[string]Measurement{}
	}
	return doc, nil
}

// Load returns the measurement for target on backend, false when there is none.
func (c Cache) Load(backend, target string) (Measurement, bool, error) {
	doc, err := c.read()
	if err != nil {
		return Measurement{}, false, err
	}
	m, ok := doc.Clusters[key(backend, target)]
	return m, ok && m.Bytes > 0, nil
}

// Save records the measurement for target on backend.
func (c Cache) Save(backend, target string, m Measurement) error {
	doc, err := c.read()
	if err != nil {
		doc = cacheDoc{Format: 1, Clusters: map[string]Measurement{}} // an unreadable file is replaced
	}
	doc.Clusters[key(backend, target)] = m
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("capacity: encode %s: %w", c.path(), err)
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("capacity: %w", err)
	}
	return atomicfile.Write(c.path(), append(b, '\n'), 0o644)
}

// PerCluster is the per-cluster figure Decide should use for target on
// backend: the cached measurement × Growth, else Estimate.
func (c Cache) PerCluster(backend, target string) (bytes uint64, measured bool, err error) {
	m, ok, err := c.Load(backend, target)
	if err != nil || !ok {
		return Estimate(backend), false, err
	}
	return uint64(float64(m.Bytes) * Growth), true, nil
}
