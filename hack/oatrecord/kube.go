package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gauntlet-dev/gauntlet/model"
)

// What the production monitor reads from the API server, kept in the fake
// clientset: the pods (labels, IP), the client Service, its EndpointSlice (the
// pods labelled primary) and the password Secret.

const (
	authSecret = "cache-auth"
	authKey    = "password"
)

// createObjects creates the pods, the Service and the Secret.
func (c *cluster) createObjects() error {
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svcName, Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{
			"app.kubernetes.io/name": "valkey", "app.kubernetes.io/instance": svcName, roleLabel: "primary",
		}},
	}
	if _, err := c.kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the Service: %w", err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: authSecret, Namespace: ns}, Data: map[string][]byte{authKey: []byte("s3cret")}}
	if _, err := c.kube.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the Secret: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.syncObjects()
}

// syncObjects writes the pods' role labels and the EndpointSlice; c.mu is held.
func (c *cluster) syncObjects() error {
	ctx := context.Background()
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: svcName + "-x1", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svcName}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, s := range c.srv {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: s.pod, Namespace: ns, Labels: map[string]string{
				"app.kubernetes.io/name": "valkey", "app.kubernetes.io/instance": svcName, "statefulset.kubernetes.io/pod-name": s.pod,
			}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: s.ip},
		}
		if l := c.labels[s.pod]; l != "" {
			pod.Labels[roleLabel] = l
		}
		if err := upsert(ctx, pod, c.kube.CoreV1().Pods(ns).Create, c.kube.CoreV1().Pods(ns).Update); err != nil {
			return fmt.Errorf("pod %s: %w", s.pod, err)
		}
		if c.labels[s.pod] == "primary" {
			slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
				Addresses: []string{s.ip},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: s.pod},
			})
		}
	}
	if err := upsert(ctx, slice, c.kube.DiscoveryV1().EndpointSlices(ns).Create, c.kube.DiscoveryV1().EndpointSlices(ns).Update); err != nil {
		return fmt.Errorf("EndpointSlice: %w", err)
	}
	return nil
}

func upsert[T any](ctx context.Context, obj T, create func(context.Context, T, metav1.CreateOptions) (T, error), update func(context.Context, T, metav1.UpdateOptions) (T, error)) error {
	_, err := create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = update(ctx, obj, metav1.UpdateOptions{})
	}
	return err
}

// monitorCR is the ValkeyCluster the monitor is given: the desired state, with
// spec.auth naming the password Secret once the servers require one. c.mu is held.
func (c *cluster) monitorCR() model.Object {
	cr := desired(c.desired)
	if c.password != "" {
		spec := cr["spec"].(map[string]any)
		spec["auth"] = map[string]any{"passwordSecret": map[string]any{"name": authSecret, "key": authKey}}
	}
	return cr
}
