package faults

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		ok   bool
	}{
		{"crash", Spec{Kind: ContainerCrash, Name: "c", Namespace: "ns", Pods: []string{"p"}}, true},
		{"no pods", Spec{Kind: ContainerCrash, Name: "c", Namespace: "ns"}, false},
		{"no namespace", Spec{Kind: PodKill, Name: "k", Pods: []string{"p"}}, false},
		{"partition without peers", Spec{Kind: Partition, Name: "p", Namespace: "ns", Pods: []string{"a"}}, false},
		{"partition overlapping", Spec{Kind: Partition, Name: "p", Namespace: "ns", Pods: []string{"a"}, Peers: []string{"a"}}, false},
		{"partition", Spec{Kind: Partition, Name: "p", Namespace: "ns", Pods: []string{"a"}, Peers: []string{"b"}}, true},
	}
	for _, tc := range tests {
		err := tc.spec.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %v is not ErrInvalid", tc.name, err)
		}
	}
}

func TestDescribe(t *testing.T) {
	g := int64(0)
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: Partition, Name: "p1", Namespace: "ns", Pods: []string{"a"}, Peers: []string{"b", "c"}}, "partition p1: ns/a from b,c"},
		{Spec{Kind: APIServerPartition, Name: "api", Namespace: "ns", Pods: []string{"op"}}, "partition api: ns/op from the API server"},
		{Spec{Kind: PodKill, Name: "k", Namespace: "ns", Pods: []string{"a"}, Grace: &g}, "pod-kill ns/a (grace 0s)"},
		{Spec{Kind: ContainerCrash, Name: "c", Namespace: "ns", Pods: []string{"a"}, Container: "valkey"}, "container-crash ns/a container valkey"},
	}
	for _, tc := range tests {
		if got := Describe(tc.spec); got != tc.want {
			t.Errorf("Describe = %q, want %q", got, tc.want)
		}
	}
}

func TestNativeRefusesNetem(t *testing.T) {
	n := NewNative(nil)
	for _, k := range []Kind{Delay, Loss} {
		if Supports(n, k) {
			t.Errorf("native back end claims %s", k)
		}
		err := n.Inject(context.Background(), Spec{Kind: k, Name: "d", Namespace: "ns", Pods: []string{"a"}})
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "netem") {
			t.Errorf("%s: err = %v, want ErrUnsupported naming netem", k, err)
		}
	}
	for _, k := range []Kind{ContainerCrash, PodKill, PodFailure, Partition, APIServerPartition} {
		if !Supports(n, k) {
			t.Errorf("native back end lacks %s", k)
		}
	}
}
