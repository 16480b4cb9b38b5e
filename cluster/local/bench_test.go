package local

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

func benchRoot(b *testing.B) string {
	b.Helper()
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	root, err := os.MkdirTemp("", "gauntlet-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(root) })
	return root
}

// BenchmarkClusterUp measures Create (cached binaries) until all three nodes are Ready.
func BenchmarkClusterUp(b *testing.B) {
	root := benchRoot(b)
	ctx := context.Background()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		c, err := Create(ctx, Options{Name: "bench-up-" + strconv.Itoa(i), StateRoot: root})
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		b.StopTimer()
		if i == 0 {
			b.Logf("phases: %v", c.Timings())
		}
		if err := c.Delete(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/up")
}

// BenchmarkPodRunning measures pod creation until the API reports it Running, for a
// mapped image (busybox → the host's sh).
func BenchmarkPodRunning(b *testing.B) {
	root := benchRoot(b)
	ctx := context.Background()
	c, err := Create(ctx, Options{Name: "bench-pod", StateRoot: root})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Delete(ctx)
	cs := c.Client()
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := "p" + strconv.Itoa(i)
		w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := cs.CoreV1().Pods("default").Create(ctx, shellPod("default", name, "exec sleep 3600", nil), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		timeout := time.After(time.Minute)
	wait:
		for {
			select {
			case ev := <-w.ResultChan():
				if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Deleted && p.Status.Phase == corev1.PodRunning {
					break wait
				}
			case <-timeout:
				b.Fatalf("pod %s not Running after a minute", name)
			}
		}
		total += time.Since(start)
		w.Stop()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/pod-running")
}

// BenchmarkIdleMemory reports the resident memory of an idle three-node cluster:
// the four control-plane processes, CoreDNS, plus this whole process, which hosts the node
// agents, the provisioner and the Service proxy (and the test binary itself, so
// the figure is an upper bound). b.N only repeats the reading.
func BenchmarkIdleMemory(b *testing.B) {
	root := benchRoot(b)
	ctx := context.Background()
	c, err := Create(ctx, Options{Name: "bench-mem", StateRoot: root})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Delete(ctx)
	time.Sleep(15 * time.Second)
	var total int64
	parts := []string{}
	for name, pid := range c.cp.PIDs() {
		kib := rssKiB(pid)
		total += kib
		parts = append(parts, fmt.Sprintf("%s=%dMiB", name, kib/1024))
	}
	dns := rssKiB(c.dns.PID())
	total += dns
	parts = append(parts, fmt.Sprintf("coredns=%dMiB", dns/1024))
	agents := rssKiB(os.Getpid())
	total += agents
	parts = append(parts, fmt.Sprintf("harness-process(node-agents,provisioner,proxy)=%dMiB", agents/1024))
	b.Logf("idle RSS: %s", strings.Join(parts, " "))
	for i := 0; i < b.N; i++ {
	}
	b.ReportMetric(float64(total)/1024, "MiB-idle-rss")
}

func rssKiB(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "VmRSS:") {
			fs := strings.Fields(sc.Text())
			if len(fs) >= 2 {
				v, _ := strconv.ParseInt(fs[1], 10, 64)
				return v
			}
		}
	}
	return 0
}
