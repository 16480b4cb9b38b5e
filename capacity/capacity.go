// Package capacity decides how many campaign workers a host can carry and
// when it is too busy to start another step.
//
// A campaign is latency-bound (quiet windows, convergence waits, monitor
// sampling): the cores are mostly idle while a step waits, so more clusters
// than cores pay off, and memory, one cluster per worker, is the limit. Decide
// picks the worker count from the host's memory, a per-cluster figure (a
// documented estimate per back end until a measurement of the target is
// cached) and a cap per core. A Gate then starts no new step while the host is
// saturated (CPU pressure or load, low memory, a slow API server), so that
// more workers slow a campaign down on a loaded host instead of making its
// steps time out.
//
// The decisions are pure functions of given numbers; proc.go reads them from
// /proc.
package capacity

import (
	"fmt"
	"strings"
)

// MiB and GiB are byte counts.
const (
	MiB uint64 = 1 << 20
	GiB uint64 = 1 << 30
)

// Back-end names as `gauntlet run --backend` spells them.
const (
	BackendLocal = "local"
	BackendKind  = "kind"
)

// PerCoreCap bounds the workers per core whatever memory allows: measured on
// the bundled operator with every fault kind, 6 workers on 2 cores gave 2.6
// times the desired-state steps per hour of 2 workers with the load average
// between 2 and 4.6; the Gate holds new steps back when more would saturate
// the host.
const PerCoreCap = 3

// Estimate is the documented resident memory of one cluster of a back end
// running a small operator and its workload, used until a measurement of the
// target is cached (see Cache): an embedded cluster (etcd, kube-apiserver,
// controller-manager, scheduler, CoreDNS, in-process kubelets, the pods'
// processes) ≈ 1 GiB; a kind cluster (a node container per node, each with
// its own kubelet and containerd, besides the same control plane) ≈ 2.5 GiB.
// Unknown back ends get kind's figure.
func Estimate(backend string) uint64 {
	if backend == BackendLocal {
		return 1 * GiB
	}
	return 5 * GiB / 2
}

// Growth is the factor a measured per-cluster figure is multiplied by: the
// measurement is taken when the first worker's seed converged, and later
// desired states may ask for more replicas or bigger pods.
const Growth = 1.5

// Headroom is the memory kept free for everything else (the harness, the
// page cache, other users): a tenth of the host's memory, at least 2 GiB.
func Headroom(memTotal uint64) uint64 {
	return max(memTotal/10, 2*GiB)
}

// Inputs are the numbers a worker count is decided from.
type Inputs struct {
	// MemTotal and MemAvailable are the host's memory (bytes, /proc/meminfo).
	MemTotal, MemAvailable uint64
	// PerCluster is one cluster's resident memory (bytes): Estimate, or a
	// cached measurement already multiplied by Growth.
	PerCluster uint64
	// Measured says PerCluster comes from a measurement of the target.
	Measured bool
	// Backend names the cluster back end (for the explanation).
	Backend string
	// CPUs is the number of usable cores.
	CPUs int
}

// Decision is a worker count and why.
type Decision struct {
	Workers int
	// MemCap is how many clusters memory allows; CPUCap is PerCoreCap × CPUs.
	MemCap, CPUCap int
	Headroom       uint64
	Inputs         Inputs
}

// Decide picks the worker count: as many clusters as fit in the available
// memory once Headroom is kept free, at most PerCoreCap per core, at least one.
func Decide(in Inputs) Decision {
	d := Decision{Headroom: Headroom(in.MemTotal), CPUCap: PerCoreCap * max(in.CPUs, 1), Inputs: in}
	if in.PerCluster > 0 && in.MemAvailable > d.Headroom {
		d.MemCap = int((in.MemAvailable - d.Headroom) / in.PerCluster)
	}
	d.Workers = max(min(d.MemCap, d.CPUCap), 1)
	return d
}

// String is the one-line explanation `gauntlet run` prints.
func (d Decision) String() string {
	src := "estimate"
	if d.Inputs.Measured {
		src = fmt.Sprintf("measured, ×%.1f for growth", Growth)
	}
	var limit []string
	if d.MemCap <= d.CPUCap {
		limit = append(limit, "memory")
	}
	if d.CPUCap <= d.MemCap {
		limit = append(limit, "the per-core cap")
	}
	if d.MemCap < 1 {
		limit = []string{"memory (too little for one cluster beside the headroom: one worker anyway)"}
	}
	return fmt.Sprintf("%d workers: memory %s total, %s available, %s kept free; a %s cluster ≈ %s (%s) → memory allows %d; cap %d per core × %d cores = %d; limited by %s",
		d.Workers, gib(d.Inputs.MemTotal), gib(d.Inputs.MemAvailable), gib(d.Headroom), orUnknown(d.Inputs.Backend), gib(d.Inputs.PerCluster), src,
		d.MemCap, PerCoreCap, max(d.Inputs.CPUs, 1), d.CPUCap, strings.Join(limit, " and "))
}

func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/float64(GiB)) }

func orUnknown(s string) string {
	if s == "" {
		return "(unknown back end)"
	}
	return s
}
