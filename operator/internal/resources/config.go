package resources

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gauntlet-dev/gauntlet/operator/internal/conf"
)

// ConfBase is what the operator itself puts in valkey.conf for a cluster.
func ConfBase(d Desired) conf.Base {
	s := d.Cluster.Spec
	return conf.Base{TLS: s.TLS.Enabled, Auth: s.Auth.PasswordSecret != nil, Persistence: s.Persistence.Enabled}
}

// MakeConfigMap holds valkey.conf (the operator's settings and the accepted
// configuration) and the operator's record of what was accepted.
func MakeConfigMap(d Desired) *corev1.ConfigMap {
	c := d.Cluster
	return &corev1.ConfigMap{
		ObjectMeta: objectMeta(c, ConfigMapName(c)),
		Data: map[string]string{
			conf.ConfigMapKey: conf.Render(ConfBase(d), d.Applied.Config),
			conf.AppliedKey:   d.Applied.Encode(),
		},
	}
}

// UpdateConfigMap sets the two keys the operator owns.
func UpdateConfigMap(d Desired, cur *corev1.ConfigMap) (*corev1.ConfigMap, bool) {
	want := MakeConfigMap(d)
	out := cur.DeepCopy()
	changed := updateMeta(d.Cluster, &out.ObjectMeta)
	if out.Data == nil {
		out.Data = map[string]string{}
	}
	for k, v := range want.Data {
		if out.Data[k] != v {
			out.Data[k] = v
			changed = true
		}
	}
	return out, changed
}

// MakeAuthSecret holds auth.conf (requirepass and masterauth), which valkey.conf
// includes, so the password never appears in a ConfigMap or on a command line.
func MakeAuthSecret(d Desired) *corev1.Secret {
	c := d.Cluster
	return &corev1.Secret{
		ObjectMeta: objectMeta(c, AuthSecretName(c)),
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			conf.AuthSecretKey: []byte(conf.AuthFileContent(d.Password)),
			conf.PasswordKey:   []byte(d.Password),
		},
	}
}

// UpdateAuthSecret sets auth.conf.
func UpdateAuthSecret(d Desired, cur *corev1.Secret) (*corev1.Secret, bool) {
	want := MakeAuthSecret(d)
	out := cur.DeepCopy()
	changed := updateMeta(d.Cluster, &out.ObjectMeta)
	if out.Data == nil {
		out.Data = map[string][]byte{}
	}
	for k, v := range want.Data {
		if string(out.Data[k]) != string(v) {
			out.Data[k] = v
			changed = true
		}
	}
	return out, changed
}

// PasswordFromAuthSecret returns the password an auth Secret holds ("" if none).
func PasswordFromAuthSecret(s *corev1.Secret) string {
	if s == nil {
		return ""
	}
	return string(s.Data[conf.PasswordKey])
}

// WantPDB reports whether the cluster gets a PodDisruptionBudget: enabled, and
// more than one pod.
func WantPDB(d Desired) bool {
	s := d.Cluster.Spec
	return (s.PodDisruptionBudget.Enabled == nil || *s.PodDisruptionBudget.Enabled) && s.Replicas > 1
}

// PDBMaxUnavailable is spec.podDisruptionBudget.maxUnavailable, or by default the
// largest number that keeps a majority of the copies: max(1, (replicas-1)/2).
func PDBMaxUnavailable(d Desired) int32 {
	s := d.Cluster.Spec
	if s.PodDisruptionBudget.MaxUnavailable != nil {
		return *s.PodDisruptionBudget.MaxUnavailable
	}
	return max(1, (s.Replicas-1)/2)
}

// MakePDB is the PodDisruptionBudget of the cluster's pods.
func MakePDB(d Desired) *policyv1.PodDisruptionBudget {
	c := d.Cluster
	mu := intstr.FromInt32(PDBMaxUnavailable(d))
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: objectMeta(c, PDBName(c)),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &mu,
			Selector:       metaSelector(SelectorLabels(c)),
		},
	}
}

// UpdatePDB sets maxUnavailable and the selector.
func UpdatePDB(d Desired, cur *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, bool) {
	want := MakePDB(d)
	out := cur.DeepCopy()
	changed := updateMeta(d.Cluster, &out.ObjectMeta)
	if out.Spec.MaxUnavailable == nil || *out.Spec.MaxUnavailable != *want.Spec.MaxUnavailable || out.Spec.MinAvailable != nil {
		out.Spec.MaxUnavailable = want.Spec.MaxUnavailable
		out.Spec.MinAvailable = nil
		changed = true
	}
	if out.Spec.Selector == nil || !equalStrings(out.Spec.Selector.MatchLabels, want.Spec.Selector.MatchLabels) || len(out.Spec.Selector.MatchExpressions) > 0 {
		out.Spec.Selector = want.Spec.Selector
		changed = true
	}
	return out, changed
}

func equalStrings(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
