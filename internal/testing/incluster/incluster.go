// Package incluster is the program of a test pod that checks the cluster's
// in-cluster configuration (service-account token, ca.crt,
// KUBERNETES_SERVICE_HOST): the embedded cluster's tests run their own test
// binary as that pod. It is test support.
package incluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// namespaceFile is where a pod's service account says its namespace.
const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// ListPods lists the pods of the pod's own namespace with the in-cluster
// configuration and writes "in-cluster: listed N pods in NS via HOST" to out.
// It returns the process's exit code: 0, 2 when the configuration or the
// namespace cannot be read, 3 when the list fails (each said on out).
func ListPods(out io.Writer) int {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		fmt.Fprintln(out, "in-cluster config:", err)
		return 2
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(out, "client:", err)
		return 2
	}
	ns, err := os.ReadFile(namespaceFile)
	if err != nil {
		fmt.Fprintln(out, "namespace:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pods, err := cs.CoreV1().Pods(string(ns)).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintln(out, "list pods:", err)
		return 3
	}
	fmt.Fprintf(out, "in-cluster: listed %d pods in %s via %s\n", len(pods.Items), ns, cfg.Host)
	return 0
}
