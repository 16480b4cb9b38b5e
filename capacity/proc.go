package capacity

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Proc reads the host's figures from a proc file system (normally "/proc").
type Proc struct {
	// Dir is the proc mount ("" means /proc).
	Dir string
	// CPUs is the number of usable cores (runtime.NumCPU()).
	CPUs int
}

func (p Proc) path(elem ...string) string {
	d := p.Dir
	if d == "" {
		d = "/proc"
	}
	return filepath.Join(append([]string{d}, elem...)...)
}

// Memory returns MemTotal and MemAvailable from meminfo, in bytes.
func (p Proc) Memory() (total, available uint64, err error) {
	b, err := os.ReadFile(p.path("meminfo"))
	if err != nil {
		return 0, 0, fmt.Errorf("capacity: %w", err)
	}
	f := parseKB(b, "MemTotal", "MemAvailable")
	if f["MemTotal"] == 0 || f["MemAvailable"] == 0 {
		return 0, 0, fmt.Errorf("capacity: %s has no MemTotal or MemAvailable", p.path("meminfo"))
	}
	return f["MemTotal"], f["MemAvailable"], nil
}

// Sample reads CPU pressure, the load average and the available memory. A
// figure it cannot read is left zero (HasPSI false without pressure); the
// error names what was missing.
func (p Proc) Sample() (Sample, error) {
	s := Sample{CPUs: p.CPUs}
	var errs []error
	if b, err := os.ReadFile(p.path("pressure", "cpu")); err == nil {
		if v, ok := parsePressure(b); ok {
			s.CPUSome, s.HasPSI = v, true
		} else {
			errs = append(errs, fmt.Errorf("capacity: no \"some avg10\" in %s", p.path("pressure", "cpu")))
		}
	} else {
		errs = append(errs, fmt.Errorf("capacity: %w", err))
	}
	if b, err := os.ReadFile(p.path("loadavg")); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			s.Load1, _ = strconv.ParseFloat(f[0], 64)
		}
	} else {
		errs = append(errs, fmt.Errorf("capacity: %w", err))
	}
	if _, avail, err := p.Memory(); err == nil {
		s.MemAvailable = avail
	} else {
		errs = append(errs, err)
	}
	return s, errors.Join(errs...)
}

// parsePressure returns the "some" line's avg10 of a /proc/pressure file.
func parsePressure(b []byte) (float64, bool) {
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "avg10="); ok {
				x, err := strconv.ParseFloat(v, 64)
				return x, err == nil
			}
		}
	}
	return 0, false
}

// parseKB reads "Name:   123 kB" lines (meminfo, status, smaps_rollup) for the
// given names, in bytes.
func parseKB(b []byte, names ...string) map[string]uint64 {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		for _, n := range names {
			if n != name {
				continue
			}
			f := strings.Fields(rest)
			if len(f) == 0 {
				continue
			}
			v, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				continue
			}
			if len(f) > 1 && f[1] == "kB" {
				v *= 1024
			}
			out[n] = v
		}
	}
	return out
}

// TreeMemory sums the proportional set size (Pss from smaps_rollup; VmRSS
// from status where smaps_rollup cannot be read) of every descendant of pid,
// and of pid itself (its in-process parts: an embedded cluster's kubelets),
// and counts the processes. An embedded cluster's control plane, CoreDNS
// and pods' processes are descendants of the gauntlet process that made it;
// the proportional figure shares the pages of a binary that several clusters
// run among them rather than counting them once per cluster.
func (p Proc) TreeMemory(pid int) (bytes uint64, processes int, err error) {
	entries, err := os.ReadDir(p.path())
	if err != nil {
		return 0, 0, fmt.Errorf("capacity: %w", err)
	}
	children := map[int][]int{}
	for _, e := range entries {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(p.path(e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		if pp, ok := parentOf(b); ok {
			children[pp] = append(children[pp], id)
		}
	}
	queue := []int{pid}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		queue = append(queue, children[id]...)
		if m, ok := p.processMemory(id); ok {
			bytes += m
			processes++
		}
	}
	return bytes, processes, nil
}

// processMemory is one process's Pss (else VmRSS), false when it is gone.
func (p Proc) processMemory(pid int) (uint64, bool) {
	id := strconv.Itoa(pid)
	if b, err := os.ReadFile(p.path(id, "smaps_rollup")); err == nil {
		if v, ok := parseKB(b, "Pss")["Pss"]; ok {
			return v, true
		}
	}
	if b, err := os.ReadFile(p.path(id, "status")); err == nil {
		return parseKB(b, "VmRSS")["VmRSS"], true // a zombie has no VmRSS: 0
	}
	return 0, false
}

// parentOf reads the parent pid from a /proc/PID/stat line ("pid (comm) state ppid ...";
// comm may hold spaces and parentheses, so the fields after its last ')' are used).
func parentOf(stat []byte) (int, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}
