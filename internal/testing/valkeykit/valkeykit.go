// Package valkeykit has the small pieces the demo and the end-to-end tests share:
// a Valkey StatefulSet on an embedded cluster and one-shot Valkey commands over pod IPs.
package valkeykit

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/valkey-io/valkey-go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/gauntlet-dev/gauntlet/internal/readiness"
)

// CreateValkey creates a headless Service and a StatefulSet of Valkey pods with a
// 1Gi volume each (image valkey/valkey:8, mapped to a local server by the cluster).
func CreateValkey(ctx context.Context, cs kubernetes.Interface, ns, name string, replicas int32) error {
	labels := map[string]string{"app": name}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, Selector: labels,
			Ports: []corev1.ServicePort{{Name: "valkey", Port: 6379, TargetPort: intstr.FromInt32(6379)}},
		},
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("valkeykit: create service: %w", err)
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &replicas,
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:  "valkey",
						Image: "valkey/valkey:8.1",
						Args:  []string{"--port", "6379", "--dir", "/data", "--appendonly", "yes", "--protected-mode", "no"},
						Ports: []corev1.ContainerPort{{Name: "valkey", ContainerPort: 6379}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(6379)}},
							PeriodSeconds: 1,
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("valkeykit: create statefulset: %w", err)
	}
	return nil
}

// WaitReady waits until the StatefulSet's pods name-0 … name-(n-1) are all Ready and returns them in order.
func WaitReady(ctx context.Context, cs kubernetes.Interface, ns, name string, n int32, timeout time.Duration) ([]corev1.Pod, error) {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		pods := make([]corev1.Pod, 0, n)
		for i := range n {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name+"-"+strconv.Itoa(int(i)), metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				break
			}
			if !readiness.Pod(p) {
				last = fmt.Sprintf("%s is %s (%s)", p.Name, p.Status.Phase, describeStatus(p))
				break
			}
			pods = append(pods, *p)
		}
		if len(pods) == int(n) {
			return pods, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("valkeykit: StatefulSet %s/%s not ready after %v: %s", ns, name, timeout, last)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func describeStatus(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			return string(c.Type) + ": " + c.Message
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting != nil {
			return cs.Name + " waiting: " + cs.State.Waiting.Reason + " " + cs.State.Waiting.Message
		}
	}
	return "no detail"
}

// Client connects to the Valkey server at ip:6379.
func Client(ip string) (valkey.Client, error) {
	c, err := valkey.NewClient(valkey.ClientOption{
		InitAddress:       []string{net.JoinHostPort(ip, "6379")},
		DisableCache:      true,
		ForceSingleClient: true,
		Dialer:            net.Dialer{Timeout: 2 * time.Second},
	})
	if err != nil {
		return nil, fmt.Errorf("connect to valkey at %s: %w", ip, err)
	}
	return c, nil
}

// Do runs one command against the server at ip.
func Do(ctx context.Context, ip string, args ...string) error {
	c, err := Client(ip)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Do(ctx, c.B().Arbitrary(args...).Build()).Error(); err != nil {
		return fmt.Errorf("valkey %s at %s: %w", args[0], ip, err)
	}
	return nil
}

// Get runs a command and returns its reply as a string (the first element of an array reply).
func Get(ctx context.Context, ip string, args ...string) (string, error) {
	c, err := Client(ip)
	if err != nil {
		return "", err
	}
	defer c.Close()
	res := c.Do(ctx, c.B().Arbitrary(args...).Build())
	if arr, err := res.ToArray(); err == nil && len(arr) > 0 {
		return arr[0].ToString()
	}
	return res.ToString()
}

// WaitValue polls GET key on ip until it exists.
func WaitValue(ctx context.Context, ip, key string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		v, err := Get(ctx, ip, "GET", key)
		if err == nil {
			return v, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("key %s never appeared on %s: %w", key, ip, err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
