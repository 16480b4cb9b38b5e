package model

import "testing"

func TestObjectKeyRoundTrip(t *testing.T) {
	tests := []ObjectKey{
		{Group: "apps", Version: "v1", Kind: "StatefulSet", Namespace: "ns", Name: "db"},
		{Version: "v1", Kind: "Namespace", Name: "ns"},
		{Group: "valkey.gauntlet.dev", Version: "v1alpha1", Kind: "ValkeyCluster", Namespace: "a", Name: "b"},
	}
	for _, k := range tests {
		got, ok := ParseObjectKey(k.String())
		if !ok || got != k {
			t.Errorf("ParseObjectKey(%q) = %+v, %v; want %+v", k.String(), got, ok, k)
		}
	}
	for _, bad := range []string{"", "a/b", "g//Kind/ns/name", "g/v/Kind/ns/"} {
		if _, ok := ParseObjectKey(bad); ok {
			t.Errorf("ParseObjectKey(%q) accepted a malformed key", bad)
		}
	}
}

func TestSignatureStableAndOrderFree(t *testing.T) {
	a := Signature("consistency", "spec.replicas", "StatefulSet")
	b := Signature("consistency", "StatefulSet", "spec.replicas")
	if a != b {
		t.Fatalf("signature depends on part order: %s vs %s", a, b)
	}
	if a == Signature("health", "spec.replicas", "StatefulSet") {
		t.Fatal("different oracles share a signature")
	}
	if a == Signature("consistency", "spec.image", "StatefulSet") {
		t.Fatal("different parts share a signature")
	}
}

func TestStepID(t *testing.T) {
	s := Step{Worker: 2, Index: 17}
	if got := s.ID(); got != "w2/s17" {
		t.Fatalf("ID = %q", got)
	}
}
