package faults

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

func gz(t *testing.T, s string) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	if _, err := z.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return &b
}

func TestNetemIn(t *testing.T) {
	for _, tc := range []struct {
		config string
		want   bool
	}{
		{"CONFIG_NET_SCHED=y\nCONFIG_NET_SCH_NETEM=y\n", true},
		{"CONFIG_NET_SCHED=y\n# CONFIG_NET_SCH_NETEM is not set\n", false},
		{"CONFIG_NET_SCHED=y\n", false},
	} {
		ok, why := netemIn(gz(t, tc.config), "config.gz")
		if ok != tc.want || (!ok && !strings.Contains(why, "CONFIG_NET_SCH_NETEM")) {
			t.Errorf("netemIn(%q) = %v, %q; want %v (and a reason naming the option when false)", tc.config, ok, why, tc.want)
		}
	}
	if ok, _ := netemIn(strings.NewReader("not gzip"), "x"); !ok {
		t.Error("an unreadable configuration must leave the answer to the injection (true)")
	}
	if ok, _ := Netem("/nonexistent/config.gz"); !ok {
		t.Error("a missing configuration must leave the answer to the injection (true)")
	}
}

func TestChaosMeshWithoutNetem(t *testing.T) {
	m := newChaosMesh(nil, WithoutNetem("this kernel has no netem"))
	for _, k := range []Kind{Delay, Loss} {
		if slices.Contains(m.Capabilities(), k) {
			t.Errorf("without netem, Capabilities still lists %s", k)
		}
		err := m.Inject(context.Background(), Spec{Kind: k, Name: "x", Namespace: "ns", Pods: []string{"p"}, Latency: 1, LossPercent: 10})
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "no netem") {
			t.Errorf("Inject(%s) without netem = %v, want ErrUnsupported naming the reason", k, err)
		}
	}
	if !slices.Contains(m.Capabilities(), Partition) {
		t.Error("without netem, partitions must stay")
	}
}
