package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

// TestE2EAuthOnOffOn switches password authentication on, off and on again with
// another password on a serving cluster: each time every server requires exactly
// the password of the moment, the replicas stay linked, no acknowledged write is
// lost, and switching it off removes the operator's auth Secret. (An exploratory
// fault campaign found auth off stuck on a real API server: the ClusterRole did
// not allow deleting Secrets.)
func TestE2EAuthOnOffOn(t *testing.T) {
	cl, ns, _ := readyCache(t, "vk-auth")
	keys := writeKeys(t, checkTopology(t, cl, ns, "cache"), "auth", 50)

	for _, pw := range []string{"first-password", "", "second-password"} {
		if pw != "" {
			create(t, cl, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: pw, Namespace: ns}, StringData: map[string]string{"password": pw}})
		}
		update(t, cl, ns, "cache", func(s *v1alpha1.ValkeyClusterSpec) {
			s.Auth.PasswordSecret = nil
			if pw != "" {
				s.Auth.PasswordSecret = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: pw}, Key: "password"}
			}
		})
		waitReady(t, cl, ns, "cache", 3*time.Minute)
		c := getCluster(t, cl, ns, "cache")
		var primIP string
		for _, p := range pods(t, cl, ns, "cache") {
			if p.Name == c.Status.Primary {
				primIP = p.Status.PodIP
			}
		}
		for _, p := range pods(t, cl, ns, "cache") {
			ep := valkey.Endpoint{Addr: addr(p), Password: pw}
			in := authInfo(t, ep)
			if p.Name != c.Status.Primary && (!in.ReplicatingFrom(primIP, 6379) || !in.MasterLinkUp) {
				t.Fatalf("password %q: %s is not a linked replica of %s: role %s, master %s:%d, link up %v", pw, p.Name, c.Status.Primary, in.Role, in.MasterHost, in.MasterPort, in.MasterLinkUp)
			}
			if pw != "" { // the password is required
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				_, err := valkey.NewPool().Do(ctx, valkey.Endpoint{Addr: addr(p)}, "GET", keys[0])
				cancel()
				if err == nil {
					t.Fatalf("password %q: %s answers without it", pw, p.Name)
				}
			}
			for _, k := range keys {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				r, err := pool.Do(ctx, ep, "EXISTS", k)
				cancel()
				if err != nil || r.Int != 1 {
					t.Fatalf("password %q: %s lost key %s (%v)", pw, p.Name, k, err)
				}
			}
		}
		err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cache-auth"}, &corev1.Secret{})
		if pw == "" && !apierrors.IsNotFound(err) {
			t.Fatalf("auth off: the operator's auth Secret cache-auth is still there (%v)", err)
		}
	}
}

func authInfo(t testing.TB, ep valkey.Endpoint) valkey.Info {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r, err := pool.Do(ctx, ep, "INFO")
	if err != nil {
		t.Fatalf("INFO %s: %v", ep.Addr, err)
	}
	in, err := valkey.ParseInfo(r.String())
	if err != nil {
		t.Fatal(err)
	}
	return in
}
