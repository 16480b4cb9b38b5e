package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/gauntlet-dev/gauntlet/capacity"
	"github.com/gauntlet-dev/gauntlet/cluster/hoststate"
)

// workersAuto is --workers' default: as many as memory allows.
const workersAuto = "auto"

// parseWorkers reads --workers: "auto" (0, true) or a positive count.
func parseWorkers(s string) (n int, auto bool, err error) {
	if s == workersAuto {
		return 0, true, nil
	}
	n, err = strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, false, fmt.Errorf("--workers %q: pass auto (as many clusters as memory allows) or a positive number", s)
	}
	return n, false, nil
}

// autoWorkers decides the worker count of --workers auto, holds steps back on
// a saturated host, and measures a cluster's memory once for the next run.
type autoWorkers struct {
	proc    capacity.Proc
	cache   capacity.Cache
	backend string
	target  string
	log     *slog.Logger
	out     io.Writer
}

func newAutoWorkers(backend, target string, log *slog.Logger, out io.Writer) autoWorkers {
	return autoWorkers{proc: capacity.Proc{CPUs: runtime.NumCPU()}, cache: capacity.Cache{Dir: hoststate.CacheDir()},
		backend: backend, target: target, log: log, out: out}
}

// decide picks the worker count and prints why (one line).
func (a autoWorkers) decide(shared bool) (int, error) {
	total, avail, err := a.proc.Memory()
	if err != nil {
		return 0, fmt.Errorf("--workers auto: %w (pass --workers N)", err)
	}
	per, measured, err := a.cache.PerCluster(a.backend, a.target)
	if err != nil {
		a.log.Warn("--workers auto: the cached cluster measurement is unreadable; using the estimate", "err", err)
	}
	if shared {
		// One cluster whatever the count: only the per-core cap applies.
		per = 1
	}
	d := capacity.Decide(capacity.Inputs{MemTotal: total, MemAvailable: avail, PerCluster: per, Measured: measured, Backend: a.backend, CPUs: a.proc.CPUs})
	fmt.Fprintf(a.out, "gauntlet: --workers auto: %s\n", d)
	a.log.Debug("workers chosen", "workers", d.Workers, "memTotal", total, "memAvailable", avail, "perCluster", per, "measured", measured,
		"memCap", d.MemCap, "cpuCap", d.CPUCap)
	return d.Workers, nil
}

// gate holds new steps back while the host is saturated.
func (a autoWorkers) gate() *capacity.Gate {
	total, _, err := a.proc.Memory()
	if err != nil {
		total = 0
	}
	return capacity.NewGate(a.proc.Sample, capacity.DefaultThresholds(total), 2*time.Second, a.log)
}

// afterSeed measures the embedded clusters' memory (this process and its
// descendants: control planes, CoreDNS, pods) once the first seed converged
// and caches the per-cluster figure. Kind's node containers are not this
// process's descendants: kind keeps its estimate.
func (a autoWorkers) afterSeed(_ context.Context, clusters int) {
	if a.backend != capacity.BackendLocal || clusters < 1 {
		return
	}
	b, procs, err := a.proc.TreeMemory(os.Getpid())
	if err != nil || b == 0 {
		a.log.Warn("--workers auto: measuring the clusters' memory", "err", err)
		return
	}
	per := b / uint64(clusters)
	m := capacity.Measurement{Bytes: per, Clusters: clusters, Taken: time.Now().UTC()}
	if err := a.cache.Save(a.backend, a.target, m); err != nil {
		a.log.Warn("--workers auto: caching the clusters' memory", "err", err)
		return
	}
	fmt.Fprintf(a.out, "gauntlet: a %s cluster of %s measured %.2f GiB (%d processes over %d clusters, after the first seed converged); the next --workers auto plans with %.2f GiB per cluster\n",
		a.backend, a.target, float64(per)/float64(capacity.GiB), procs, clusters, float64(per)*capacity.Growth/float64(capacity.GiB))
}
