package podnet

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// On-disk layout under Config.StateDir:
//
//	netns/                   a shared bind mount of itself (see makeSharedMountDir)
//	netns/<id>               the pod's network namespace (an nsfs bind mount)
//	podnet/sandboxes/<id>.json  sandboxRecord, written before anything is created
//
// The record is written first and removed last, so after a crash at any point
// Cleanup finds everything the sandbox may own.
const (
	netnsDirName   = "netns"
	recordsDirName = "podnet/sandboxes"
	recordSuffix   = ".json"
)

// sandboxRecord is what survives the owner's death.
type sandboxRecord struct {
	ID       string     `json:"id"`
	IP       netip.Addr `json:"ip"`
	HostVeth string     `json:"hostVeth"`
	NetNS    string     `json:"netns"`
}

type stateDirs struct {
	root, netns, records string
}

func newStateDirs(root string) stateDirs {
	return stateDirs{
		root:    root,
		netns:   filepath.Join(root, netnsDirName),
		records: filepath.Join(root, filepath.FromSlash(recordsDirName)),
	}
}

func (d stateDirs) netnsPath(id string) string  { return filepath.Join(d.netns, id) }
func (d stateDirs) recordPath(id string) string { return filepath.Join(d.records, id+recordSuffix) }

// writeRecord replaces the record atomically (write then rename).
func (d stateDirs) writeRecord(r sandboxRecord) error {
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("podnet: encode sandbox record: %w", err)
	}
	tmp := filepath.Join(d.records, ".tmp-"+r.ID)
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("podnet: write sandbox record: %w", err)
	}
	if err := os.Rename(tmp, d.recordPath(r.ID)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("podnet: write sandbox record: %w", err)
	}
	return nil
}

func (d stateDirs) removeRecord(id string) error {
	if err := os.Remove(d.recordPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("podnet: remove sandbox record: %w", err)
	}
	return nil
}

// readRecords returns every record on disk. Unreadable records are reported
// in the error but do not hide the others.
func (d stateDirs) readRecords() ([]sandboxRecord, error) {
	entries, err := os.ReadDir(d.records)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("podnet: read sandbox records: %w", err)
	}
	var recs []sandboxRecord
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, recordSuffix) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(d.records, name))
		if err != nil {
			errs = append(errs, fmt.Errorf("podnet: read sandbox record %s: %w", name, err))
			continue
		}
		var r sandboxRecord
		if err := json.Unmarshal(data, &r); err != nil {
			errs = append(errs, fmt.Errorf("podnet: decode sandbox record %s: %w", name, err))
			continue
		}
		recs = append(recs, r)
	}
	return recs, errors.Join(errs...)
}

// leftovers names what a previous Network over this state folder left behind.
func (d stateDirs) leftovers() ([]string, error) {
	var found []string
	for _, dir := range []string{d.netns, d.records} {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("podnet: inspect state folder: %w", err)
		}
		for _, e := range entries {
			found = append(found, filepath.Join(dir, e.Name()))
		}
	}
	return found, nil
}
