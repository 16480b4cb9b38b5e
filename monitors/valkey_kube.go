package monitors

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/monitors/internal/valkeyconn"
)

// Conventions of the bundled Valkey operator (operator/api/v1alpha1/defaults.go and
// operator/internal/resources). They are repeated here on purpose: the harness
// reads the CR as unstructured data and never imports the operator's Go packages.
const (
	valkeyLabelName     = "app.kubernetes.io/name"
	valkeyLabelInstance = "app.kubernetes.io/instance"
	valkeyAppName       = "valkey"
	// ValkeyRoleLabel is the pod label the operator moves on failover; the client
	// Service selects the value "primary".
	ValkeyRoleLabel = "valkey.gauntlet.dev/role"
	// ValkeyPort is the port Valkey serves clients on (plain or TLS).
	ValkeyPort = 6379
	// valkeyDefaultReplicas is the CRD's default of spec.replicas.
	valkeyDefaultReplicas = 3
	// serviceNameLabel marks an EndpointSlice with the Service it belongs to.
	serviceNameLabel = discoveryv1.LabelServiceName
)

// valkeySpec is what the harness needs from a ValkeyCluster, read from the
// unstructured CR.
type valkeySpec struct {
	name      string
	namespace string // metadata.namespace, may be empty
	replicas  int    // spec.replicas, the CRD default when absent
	// configKeys are the keys of spec.config, sorted.
	configKeys []string
	// authSecret and authKey locate the password (spec.auth.passwordSecret); empty
	// when auth is off.
	authSecret, authKey string
	// tlsSecret names the TLS Secret (spec.tls.secretName) when spec.tls.enabled.
	tlsSecret string
}

// parseValkeyCR reads a ValkeyCluster from its unstructured form.
func parseValkeyCR(cr model.Object) (valkeySpec, error) {
	var s valkeySpec
	if cr == nil {
		return s, errors.New("no custom resource: Env.CR must hold the ValkeyCluster as declared")
	}
	meta, _ := cr["metadata"].(map[string]any)
	s.name, _ = meta["name"].(string)
	if s.name == "" {
		return s, errors.New("the ValkeyCluster has no metadata.name")
	}
	s.namespace, _ = meta["namespace"].(string)
	spec, _ := cr["spec"].(map[string]any)

	s.replicas = valkeyDefaultReplicas
	if v, ok := spec["replicas"]; ok && v != nil {
		n, err := toInt(v)
		if err != nil {
			return s, fmt.Errorf("spec.replicas: %w", err)
		}
		s.replicas = n
	}
	if cfg, ok := spec["config"].(map[string]any); ok {
		for k := range cfg {
			s.configKeys = append(s.configKeys, k)
		}
		sort.Strings(s.configKeys)
	}
	if auth, ok := spec["auth"].(map[string]any); ok {
		// The CRD has no "enabled" switch: auth is on when passwordSecret is set.
		if ref, ok := auth["passwordSecret"].(map[string]any); ok {
			s.authSecret, _ = ref["name"].(string)
			s.authKey, _ = ref["key"].(string)
			if s.authSecret == "" || s.authKey == "" {
				return s, errors.New("spec.auth.passwordSecret needs both name and key")
			}
		}
	}
	if t, ok := spec["tls"].(map[string]any); ok {
		if on, _ := t["enabled"].(bool); on {
			s.tlsSecret, _ = t["secretName"].(string)
			if s.tlsSecret == "" {
				return s, errors.New("spec.tls.enabled is true but spec.tls.secretName is empty")
			}
		}
	}
	return s, nil
}

// requiredAcks is the replication level the bundled operator promises for an
// acknowledged write: with at least one replica, a write that WAIT reports as
// held by one replica survives a failover, because the operator (as Sentinel
// would) promotes the reachable replica with the highest replication offset. More
// than one ack is not promised (replication is asynchronous). A single pod has no
// copy to fail over to, and without persistence a restart empties it: no promise.
func (s valkeySpec) requiredAcks() int {
	if s.replicas >= 2 {
		return 1
	}
	return 0
}

// toInt reads an integer however it was decoded, or written as a string.
func toInt(v any) (int, error) {
	if s, ok := v.(string); ok {
		return strconv.Atoi(s)
	}
	n, ok := jsonv.AsInt(v)
	if !ok {
		return 0, fmt.Errorf("%v (%T) is not an integer", v, v)
	}
	return int(n), nil
}

// clusterOf reads what the monitor and the workload need of env: the CR's
// spec and the namespace to look in, and a Kubernetes client.
func clusterOf(env Env) (valkeySpec, string, error) {
	spec, err := parseValkeyCR(env.CR)
	if err != nil {
		return valkeySpec{}, "", err
	}
	ns, err := namespaceOf(env, spec)
	if err != nil {
		return valkeySpec{}, "", err
	}
	if env.Kube == nil {
		return valkeySpec{}, "", errors.New("Env.Kube is nil")
	}
	return spec, ns, nil
}

// namespaceOf is the namespace to look in: env's, or the CR's.
func namespaceOf(env Env, s valkeySpec) (string, error) {
	if env.Namespace != "" {
		return env.Namespace, nil
	}
	if s.namespace != "" {
		return s.namespace, nil
	}
	return "", errors.New("no namespace: set Env.Namespace or the CR's metadata.namespace")
}

// valkeySelector selects a cluster's Valkey pods.
func valkeySelector(name string) string {
	return labels.SelectorFromSet(labels.Set{valkeyLabelName: valkeyAppName, valkeyLabelInstance: name}).String()
}

// listValkeyPods returns the cluster's pods, sorted by name.
func listValkeyPods(ctx context.Context, kube kubernetes.Interface, ns, name string) ([]corev1.Pod, error) {
	l, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: valkeySelector(name)})
	if err != nil {
		return nil, fmt.Errorf("list the Valkey pods of %s/%s: %w", ns, name, err)
	}
	pods := l.Items
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods, nil
}

// serviceEndpoint is a ready endpoint of the client Service.
type serviceEndpoint struct {
	pod string // targetRef name ("" if the endpoint has no pod reference)
	ip  string
}

// clientService resolves the client Service: exists is false when the Service does
// not exist; endpoints are its EndpointSlices' ready endpoints, sorted by pod then IP.
func clientService(ctx context.Context, kube kubernetes.Interface, ns, name string) (exists bool, eps []serviceEndpoint, err error) {
	if _, err := kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil, nil
		}
		return false, nil, fmt.Errorf("get the client Service %s/%s: %w", ns, name, err)
	}
	l, err := kube.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{serviceNameLabel: name}).String(),
	})
	if err != nil {
		return true, nil, fmt.Errorf("list the EndpointSlices of Service %s/%s: %w", ns, name, err)
	}
	seen := map[serviceEndpoint]bool{}
	for _, sl := range l.Items {
		if sl.AddressType == discoveryv1.AddressTypeFQDN {
			continue
		}
		for _, ep := range sl.Endpoints {
			// A nil Ready is to be read as ready (discovery.k8s.io/v1 API docs).
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			if len(ep.Addresses) == 0 {
				continue
			}
			e := serviceEndpoint{ip: ep.Addresses[0]}
			if ep.TargetRef != nil && (ep.TargetRef.Kind == "" || ep.TargetRef.Kind == "Pod") {
				e.pod = ep.TargetRef.Name
			}
			if !seen[e] {
				seen[e] = true
				eps = append(eps, e)
			}
		}
	}
	sort.Slice(eps, func(i, j int) bool {
		if eps[i].pod != eps[j].pod {
			return eps[i].pod < eps[j].pod
		}
		return eps[i].ip < eps[j].ip
	})
	return true, eps, nil
}

// selectedPods are the pod names of the endpoints (nil-safe, sorted, unique).
func selectedPods(eps []serviceEndpoint) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, e := range eps {
		if e.pod != "" && !seen[e.pod] {
			seen[e.pod] = true
			out = append(out, e.pod)
		}
	}
	sort.Strings(out)
	return out
}

// security reads the credentials the CR declares from its Secrets. The TLS server
// names are left for the caller (they depend on the pod dialled).
func security(ctx context.Context, kube kubernetes.Interface, ns string, s valkeySpec) (valkeyconn.Security, error) {
	var sec valkeyconn.Security
	if s.authSecret != "" {
		sc, err := kube.CoreV1().Secrets(ns).Get(ctx, s.authSecret, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return sec, secretMissingf("auth: Secret %s/%s (spec.auth.passwordSecret) does not exist: create it or fix the reference", ns, s.authSecret)
			}
			return sec, fmt.Errorf("auth: read Secret %s/%s: %w", ns, s.authSecret, err)
		}
		pw, ok := secretValue(sc, s.authKey)
		if !ok {
			return sec, secretMissingf("auth: Secret %s/%s has no key %q (spec.auth.passwordSecret.key)", ns, s.authSecret, s.authKey)
		}
		sec.Password = pw
	}
	if s.tlsSecret != "" {
		sc, err := kube.CoreV1().Secrets(ns).Get(ctx, s.tlsSecret, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return sec, secretMissingf("TLS: Secret %s/%s (spec.tls.secretName) does not exist: create it with tls.crt, tls.key and ca.crt", ns, s.tlsSecret)
			}
			return sec, fmt.Errorf("TLS: read Secret %s/%s: %w", ns, s.tlsSecret, err)
		}
		ca, ok := secretValue(sc, "ca.crt")
		if !ok {
			return sec, secretMissingf("TLS: Secret %s/%s has no ca.crt: the harness verifies the servers against it", ns, s.tlsSecret)
		}
		t := &valkeyconn.TLS{CA: []byte(ca)}
		if crt, ok := secretValue(sc, corev1.TLSCertKey); ok {
			if key, ok := secretValue(sc, corev1.TLSPrivateKeyKey); ok {
				t.Cert, t.Key = []byte(crt), []byte(key)
			}
		}
		sec.TLS = t
	}
	return sec, nil
}

// errSecretMissing marks a credentials Secret (or key) the CR names but that does
// not exist: no connection can be made until it is created.
var errSecretMissing = errors.New("a Secret the ValkeyCluster names is missing")

type secretMissingError struct{ msg string }

func (e *secretMissingError) Error() string { return e.msg }

func (e *secretMissingError) Is(target error) bool { return target == errSecretMissing }

// securityUnreachable classifies a member the monitor could not dial because
// security failed: a Secret the desired state names is missing (nothing to
// connect with, model.UnreachableNoCredentials), or reading it failed.
func securityUnreachable(err error) string {
	if errors.Is(err, errSecretMissing) {
		return model.UnreachableNoCredentials
	}
	return model.UnreachableError
}

func secretMissingf(format string, args ...any) error {
	return &secretMissingError{msg: fmt.Sprintf(format, args...)}
}

func secretValue(s *corev1.Secret, key string) (string, bool) {
	if v, ok := s.Data[key]; ok {
		return string(v), true
	}
	if v, ok := s.StringData[key]; ok { // objects built in Go (fake clients) may only set StringData
		return v, true
	}
	return "", false
}

// withServerNames copies sec with the DNS names a pod's certificate may carry: its
// name under the headless Service (<pod>.<cr>-headless.<ns>.svc, as the operator
// itself verifies) and the client Service's names.
func withServerNames(sec valkeyconn.Security, ns, cr, pod string) valkeyconn.Security {
	if sec.TLS == nil {
		return sec
	}
	t := *sec.TLS
	t.ServerNames = nil
	if pod != "" {
		h := fmt.Sprintf("%s.%s-headless.%s.svc", pod, cr, ns)
		t.ServerNames = append(t.ServerNames, h, h+".cluster.local")
	}
	svc := fmt.Sprintf("%s.%s.svc", cr, ns)
	t.ServerNames = append(t.ServerNames, svc, svc+".cluster.local")
	sec.TLS = &t
	return sec
}

func hostPort(ip string, port int) string { return net.JoinHostPort(ip, strconv.Itoa(port)) }
