package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux).
const clockTicks = 100

// groupUsage is the CPU time and resident memory of one process group.
type groupUsage struct {
	cpuNanos uint64
	rssBytes uint64
}

// processGroups reads every process's CPU time and RSS from /proc, summed by
// process group (a container's processes share the group its program leads).
func processGroups() map[int]groupUsage {
	out := map[int]groupUsage{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	page := uint64(os.Getpagesize())
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		// After "pid (comm)": state(0) ppid(1) pgrp(2) ... utime(11) stime(12) ... rss(21)
		if len(f) < 22 {
			continue
		}
		pgrp, err1 := strconv.Atoi(f[2])
		ut, err2 := strconv.ParseUint(f[11], 10, 64)
		st, err3 := strconv.ParseUint(f[12], 10, 64)
		rss, err4 := strconv.ParseUint(f[21], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			continue
		}
		u := out[pgrp]
		u.cpuNanos += (ut + st) * uint64(time.Second) / clockTicks
		u.rssBytes += rss * page
		out[pgrp] = u
	}
	return out
}

// podUsage is one pod's containers as the stats endpoints report them.
type podUsage struct {
	name, namespace, uid string
	start                metav1.Time
	containers           []ctrUsage
}

type ctrUsage struct {
	name  string
	start metav1.Time
	usage *groupUsage // nil: no process (simulated or not running)
}

func (p *provider) usage() []podUsage {
	groups := processGroups()
	p.mu.Lock()
	ws := make([]*podWorker, 0, len(p.byUID))
	for _, w := range p.byUID {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	var out []podUsage
	for _, w := range ws {
		w.mu.Lock()
		pu := podUsage{name: w.pod.Name, namespace: w.pod.Namespace, uid: string(w.uid), start: w.startTime}
		for _, c := range w.ctrs {
			if c.state.Running == nil {
				continue
			}
			cu := ctrUsage{name: c.name, start: c.state.Running.StartedAt}
			if c.proc != nil {
				if g, ok := groups[c.proc.PID()]; ok {
					g := g
					cu.usage = &g
				}
			}
			pu.containers = append(pu.containers, cu)
		}
		w.mu.Unlock()
		out = append(out, pu)
	}
	return out
}

// GetStatsSummary reports the node's pods with the CPU time and memory of
// their processes as /proc shows them; simulated containers have no numbers.
func (p *provider) GetStatsSummary(ctx context.Context) (*statsv1alpha1.Summary, error) {
	now := metav1.Now()
	sum := &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: p.nodeName, StartTime: metav1.NewTime(p.started())}}
	for _, pu := range p.usage() {
		ps := statsv1alpha1.PodStats{
			PodRef:    statsv1alpha1.PodReference{Name: pu.name, Namespace: pu.namespace, UID: pu.uid},
			StartTime: pu.start,
		}
		var cpu, mem uint64
		measured := false
		for _, cu := range pu.containers {
			cs := statsv1alpha1.ContainerStats{Name: cu.name, StartTime: cu.start}
			if cu.usage != nil {
				c, m := cu.usage.cpuNanos, cu.usage.rssBytes
				cs.CPU = &statsv1alpha1.CPUStats{Time: now, UsageCoreNanoSeconds: &c}
				cs.Memory = &statsv1alpha1.MemoryStats{Time: now, WorkingSetBytes: &m, RSSBytes: &m}
				cpu += c
				mem += m
				measured = true
			}
			ps.Containers = append(ps.Containers, cs)
		}
		if measured {
			ps.CPU = &statsv1alpha1.CPUStats{Time: now, UsageCoreNanoSeconds: &cpu}
			ps.Memory = &statsv1alpha1.MemoryStats{Time: now, WorkingSetBytes: &mem, RSSBytes: &mem}
		}
		sum.Pods = append(sum.Pods, ps)
	}
	return sum, nil
}

// GetMetricsResource reports the resource metrics (the kubelet's
// /metrics/resource) for containers that have a process.
func (p *provider) GetMetricsResource(ctx context.Context) ([]*dto.MetricFamily, error) {
	ts := time.Now().UnixMilli()
	fam := func(name, help string, t dto.MetricType) *dto.MetricFamily {
		return &dto.MetricFamily{Name: &name, Help: &help, Type: &t}
	}
	ctrCPU := fam("container_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time consumed by the container in core-seconds", dto.MetricType_COUNTER)
	ctrMem := fam("container_memory_working_set_bytes", "[STABLE] Current working set of the container in bytes", dto.MetricType_GAUGE)
	ctrStart := fam("container_start_time_seconds", "[STABLE] Start time of the container since unix epoch in seconds", dto.MetricType_GAUGE)
	podCPU := fam("pod_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time consumed by the pod in core-seconds", dto.MetricType_COUNTER)
	podMem := fam("pod_memory_working_set_bytes", "[STABLE] Current working set of the pod in bytes", dto.MetricType_GAUGE)
	scrape := fam("scrape_error", "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise", dto.MetricType_GAUGE)
	zero := 0.0
	scrape.Metric = []*dto.Metric{{Gauge: &dto.Gauge{Value: &zero}}}
	label := func(kv ...string) []*dto.LabelPair {
		var out []*dto.LabelPair
		for i := 0; i+1 < len(kv); i += 2 {
			n, v := kv[i], kv[i+1]
			out = append(out, &dto.LabelPair{Name: &n, Value: &v})
		}
		return out
	}
	for _, pu := range p.usage() {
		var cpu, mem float64
		measured := false
		for _, cu := range pu.containers {
			labels := label("container", cu.name, "namespace", pu.namespace, "pod", pu.name)
			start := float64(cu.start.Unix())
			ctrStart.Metric = append(ctrStart.Metric, &dto.Metric{Label: labels, Gauge: &dto.Gauge{Value: &start}, TimestampMs: &ts})
			if cu.usage == nil {
				continue
			}
			c := float64(cu.usage.cpuNanos) / 1e9
			m := float64(cu.usage.rssBytes)
			ctrCPU.Metric = append(ctrCPU.Metric, &dto.Metric{Label: labels, Counter: &dto.Counter{Value: &c}, TimestampMs: &ts})
			ctrMem.Metric = append(ctrMem.Metric, &dto.Metric{Label: labels, Gauge: &dto.Gauge{Value: &m}, TimestampMs: &ts})
			cpu += c
			mem += m
			measured = true
		}
		if measured {
			labels := label("namespace", pu.namespace, "pod", pu.name)
			c, m := cpu, mem
			podCPU.Metric = append(podCPU.Metric, &dto.Metric{Label: labels, Counter: &dto.Counter{Value: &c}, TimestampMs: &ts})
			podMem.Metric = append(podMem.Metric, &dto.Metric{Label: labels, Gauge: &dto.Gauge{Value: &m}, TimestampMs: &ts})
		}
	}
	var out []*dto.MetricFamily
	for _, f := range []*dto.MetricFamily{ctrCPU, ctrMem, ctrStart, podCPU, podMem, scrape} {
		if len(f.Metric) > 0 {
			out = append(out, f)
		}
	}
	return out, nil
}
