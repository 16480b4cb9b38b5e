package resources

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/conf"
)

func metaSelector(l map[string]string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: copyMap(l)}
}

// cliPrelude sets up the shell helpers of the probes and hooks: the CLI of the
// image (valkey-cli, or redis-cli in Redis images), the password from the mounted
// auth Secret (read at each run, so a rotated password is picked up; empty while
// auth is being switched on), TLS flags.
func cliPrelude(d Desired) string {
	s := d.Cluster.Spec
	var b strings.Builder
	b.WriteString("cli=valkey-cli; command -v valkey-cli >/dev/null 2>&1 || cli=redis-cli\n")
	if s.Auth.PasswordSecret != nil {
		fmt.Fprintf(&b, "if [ -s %s ]; then REDISCLI_AUTH=$(cat %s); VALKEYCLI_AUTH=$REDISCLI_AUTH; export REDISCLI_AUTH VALKEYCLI_AUTH; fi\n", conf.PasswordFile, conf.PasswordFile)
	}
	flags := fmt.Sprintf("-h 127.0.0.1 -p %d", conf.Port)
	if s.TLS.Enabled {
		flags += fmt.Sprintf(" --tls --cacert %[1]s/ca.crt --cert %[1]s/tls.crt --key %[1]s/tls.key", conf.TLSDir)
	}
	fmt.Fprintf(&b, "c() { \"$cli\" %s \"$@\"; }\n", flags)
	return b.String()
}

// ReadinessScript: a pod is ready when it is a primary, or a replica whose link to
// its primary is up (initial sync done). A server that just started points at the
// fence and is not ready until the operator placed it.
func ReadinessScript(d Desired) string {
	return cliPrelude(d) + `out=$(c INFO replication 2>&1) || exit 1
case "$out" in *role:master*|*master_link_status:up*) exit 0;; esac
# During a password rotation the mounted password may lag behind the server's:
# the server answers, the role cannot be read; stay ready rather than drop the primary.
case "$out" in *NOAUTH*|*WRONGPASS*) exit 0;; esac
exit 1
`
}

// LivenessScript: the server answers (PONG, or an error that proves it is alive:
// loading its dataset, or a password that changed under the probe).
func LivenessScript(d Desired) string {
	return cliPrelude(d) + `out=$(c PING 2>&1)
case "$out" in *PONG*|*LOADING*|*MASTERDOWN*|*NOAUTH*|*WRONGPASS*) exit 0;; esac
echo "$out"
exit 1
`
}

// PreStopScript keeps a primary that has replicas running (at most wait
// seconds) until the operator has switched over, so that a deleted or evicted
// primary hands over without losing acknowledged writes.
func PreStopScript(d Desired, wait int64) string {
	return cliPrelude(d) + fmt.Sprintf(`i=0
while [ $i -lt %d ]; do
  out=$(c INFO replication 2>/dev/null) || exit 0
  case "$out" in *role:master*) ;; *) exit 0;; esac
  case "$out" in *connected_slaves:0*) exit 0;; esac
  sleep 1
  i=$((i+1))
done
`, wait)
}

func shell(script string) []string { return []string{"sh", "-c", script} }

// podTemplate is the pod template the operator wants.
func podTemplate(d Desired) corev1.PodTemplateSpec {
	c := d.Cluster
	s := c.Spec
	grace := *s.TerminationGracePeriodSeconds
	preStopWait := min(int64(10), grace/2)

	mounts := []corev1.VolumeMount{
		{Name: VolumeData, MountPath: conf.DataDir},
		{Name: VolumeConfig, MountPath: conf.ConfigDir, ReadOnly: true},
	}
	mode := int32(0o444)
	secretMode := int32(0o440)
	volumes := []corev1.Volume{{
		Name: VolumeConfig,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(c)},
			Items:                []corev1.KeyToPath{{Key: conf.ConfigMapKey, Path: conf.ConfigMapKey}},
			DefaultMode:          &mode,
		}},
	}}
	if !s.Persistence.Enabled {
		volumes = append(volumes, corev1.Volume{Name: VolumeData, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	if s.Auth.PasswordSecret != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: VolumeAuth, MountPath: conf.AuthDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: VolumeAuth, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  AuthSecretName(c),
			DefaultMode: &secretMode,
		}}})
	}
	if s.TLS.Enabled {
		mounts = append(mounts, corev1.VolumeMount{Name: VolumeTLS, MountPath: conf.TLSDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: VolumeTLS, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  s.TLS.SecretName,
			DefaultMode: &secretMode,
			Items: []corev1.KeyToPath{
				{Key: corev1.TLSCertKey, Path: corev1.TLSCertKey},
				{Key: corev1.TLSPrivateKeyKey, Path: corev1.TLSPrivateKeyKey},
				{Key: "ca.crt", Path: "ca.crt"},
			},
		}}})
	}

	valkey := corev1.Container{
		Name:            ContainerValkey,
		Image:           s.Image,
		ImagePullPolicy: s.ImagePullPolicy,
		// The image's entrypoint starts the server when the first argument is a
		// .conf file. The replica announces its pod IP (clients of FAILOVER and WAIT
		// identify replicas by it).
		Args: []string{conf.ConfigFile, "--replica-announce-ip", "$(POD_IP)"},
		Env: []corev1.EnvVar{
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		},
		Ports: []corev1.ContainerPort{{Name: PortNameValkey, ContainerPort: conf.Port, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: shell(ReadinessScript(d))}},
			PeriodSeconds:    2,
			TimeoutSeconds:   2,
			SuccessThreshold: 1,
			FailureThreshold: 2,
		},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: shell(LivenessScript(d))}},
			InitialDelaySeconds: 10,
			PeriodSeconds:       10,
			TimeoutSeconds:      5,
			SuccessThreshold:    1,
			FailureThreshold:    6,
		},
		Lifecycle: &corev1.Lifecycle{
			PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: shell(PreStopScript(d, preStopWait))}},
		},
		Resources:                s.Resources,
		SecurityContext:          s.ContainerSecurityContext,
		VolumeMounts:             mounts,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	containers := []corev1.Container{valkey}
	if s.Exporter.Enabled {
		containers = append(containers, exporterContainer(d))
	}

	spread := make([]corev1.TopologySpreadConstraint, len(s.Scheduling.TopologySpreadConstraints))
	for i, t := range s.Scheduling.TopologySpreadConstraints {
		t = *t.DeepCopy()
		if t.LabelSelector == nil {
			t.LabelSelector = metaSelector(SelectorLabels(c))
		}
		spread[i] = t
	}
	if len(spread) == 0 {
		spread = nil
	}
	no := false
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      Labels(c),
			Annotations: map[string]string{AnnotationRestartHash: d.Applied.RestartHash()},
		},
		Spec: corev1.PodSpec{
			Containers:                    containers,
			Volumes:                       volumes,
			TerminationGracePeriodSeconds: &grace,
			SecurityContext:               s.PodSecurityContext,
			Affinity:                      s.Scheduling.Affinity,
			Tolerations:                   s.Scheduling.Tolerations,
			NodeSelector:                  s.Scheduling.NodeSelector,
			TopologySpreadConstraints:     spread,
			PriorityClassName:             s.Scheduling.PriorityClassName,
			ImagePullSecrets:              s.ImagePullSecrets,
			EnableServiceLinks:            &no,
			AutomountServiceAccountToken:  &no,
		},
	}
	return *tmpl.DeepCopy()
}

func exporterContainer(d Desired) corev1.Container {
	s := d.Cluster.Spec
	addr := fmt.Sprintf("redis://127.0.0.1:%d", conf.Port)
	env := []corev1.EnvVar{}
	if s.TLS.Enabled {
		addr = fmt.Sprintf("rediss://127.0.0.1:%d", conf.Port)
		env = append(env,
			corev1.EnvVar{Name: "REDIS_EXPORTER_TLS_CA_CERT_FILE", Value: conf.TLSDir + "/ca.crt"},
			corev1.EnvVar{Name: "REDIS_EXPORTER_TLS_CLIENT_CERT_FILE", Value: conf.TLSDir + "/tls.crt"},
			corev1.EnvVar{Name: "REDIS_EXPORTER_TLS_CLIENT_KEY_FILE", Value: conf.TLSDir + "/tls.key"},
			// The certificate names the pod or its Service, not 127.0.0.1.
			corev1.EnvVar{Name: "REDIS_EXPORTER_SKIP_TLS_VERIFICATION", Value: "true"},
		)
	}
	env = append([]corev1.EnvVar{{Name: "REDIS_ADDR", Value: addr}}, env...)
	var mounts []corev1.VolumeMount
	if s.Auth.PasswordSecret != nil {
		env = append(env, corev1.EnvVar{Name: "REDIS_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: s.Auth.PasswordSecret.DeepCopy()}})
	}
	if s.TLS.Enabled {
		mounts = append(mounts, corev1.VolumeMount{Name: VolumeTLS, MountPath: conf.TLSDir, ReadOnly: true})
	}
	return corev1.Container{
		Name:            ContainerExporter,
		Image:           s.Exporter.Image,
		ImagePullPolicy: s.ImagePullPolicy,
		Env:             env,
		Ports:           []corev1.ContainerPort{{Name: PortNameMetrics, ContainerPort: ExporterPort, Protocol: corev1.ProtocolTCP}},
		Resources:       s.Exporter.Resources,
		SecurityContext: s.ContainerSecurityContext,
		VolumeMounts:    mounts,
	}
}

func retention(p v1alpha1.PVCRetention) appsv1.PersistentVolumeClaimRetentionPolicyType {
	if p == v1alpha1.PVCDelete {
		return appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}
	return appsv1.RetainPersistentVolumeClaimRetentionPolicyType
}

func claimTemplates(d Desired) []corev1.PersistentVolumeClaim {
	c := d.Cluster
	p := c.Spec.Persistence
	if !p.Enabled {
		return nil
	}
	return []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: VolumeData, Labels: SelectorLabels(c)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: p.StorageClassName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: p.Size}},
		},
	}}
}

// MakeStatefulSet runs the Valkey pods. Its update strategy is OnDelete: the
// operator restarts pods itself, one at a time, replicas first, the primary after
// a switchover. Pods start in parallel; each starts as a fenced replica and the
// operator places it.
func MakeStatefulSet(d Desired) *appsv1.StatefulSet {
	c := d.Cluster
	tmpl := podTemplate(d)
	replicas := d.Replicas
	s := &appsv1.StatefulSet{
		ObjectMeta: objectMeta(c, StatefulSetName(c)),
		Spec: appsv1.StatefulSetSpec{
			Replicas:             &replicas,
			Selector:             metaSelector(SelectorLabels(c)),
			ServiceName:          HeadlessServiceName(c),
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			UpdateStrategy:       appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Template:             tmpl,
			VolumeClaimTemplates: claimTemplates(d),
		},
	}
	if c.Spec.Persistence.Enabled {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: retention(c.Spec.Persistence.WhenDeleted),
			WhenScaled:  retention(c.Spec.Persistence.WhenScaled),
		}
	}
	s.Annotations = map[string]string{AnnotationTemplateHash: hashOf(tmpl)}
	return s
}

// UpdateStatefulSet sets the owned mutable fields: replicas, the pod template
// (when the operator's template changed, or the current one no longer contains
// it), the update strategy and the claim retention policy.
func UpdateStatefulSet(d Desired, cur *appsv1.StatefulSet) (*appsv1.StatefulSet, bool) {
	want := MakeStatefulSet(d)
	out := cur.DeepCopy()
	changed := updateMeta(d.Cluster, &out.ObjectMeta)
	if out.Spec.Replicas == nil || *out.Spec.Replicas != *want.Spec.Replicas {
		out.Spec.Replicas = want.Spec.Replicas
		changed = true
	}
	hash := want.Annotations[AnnotationTemplateHash]
	if out.Annotations[AnnotationTemplateHash] != hash || !equality.Semantic.DeepDerivative(want.Spec.Template, out.Spec.Template) {
		out.Spec.Template = want.Spec.Template
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[AnnotationTemplateHash] = hash
		changed = true
	}
	if out.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		out.Spec.UpdateStrategy = want.Spec.UpdateStrategy
		changed = true
	}
	if want.Spec.PersistentVolumeClaimRetentionPolicy != nil &&
		(out.Spec.PersistentVolumeClaimRetentionPolicy == nil || *out.Spec.PersistentVolumeClaimRetentionPolicy != *want.Spec.PersistentVolumeClaimRetentionPolicy) {
		out.Spec.PersistentVolumeClaimRetentionPolicy = want.Spec.PersistentVolumeClaimRetentionPolicy
		changed = true
	}
	return out, changed
}

// StatefulSetNeedsRecreate reports whether an immutable field of the current
// StatefulSet differs from what the operator wants (the claim size or class, the
// service name, the selector, the pod management policy): the StatefulSet is then
// deleted with its pods orphaned and created again, which adopts them.
func StatefulSetNeedsRecreate(d Desired, cur *appsv1.StatefulSet) (bool, string) {
	want := MakeStatefulSet(d)
	if cur.Spec.ServiceName != want.Spec.ServiceName {
		return true, "serviceName changed"
	}
	if cur.Spec.PodManagementPolicy != "" && cur.Spec.PodManagementPolicy != want.Spec.PodManagementPolicy {
		return true, "podManagementPolicy changed"
	}
	if cur.Spec.Selector == nil || !equalStrings(cur.Spec.Selector.MatchLabels, want.Spec.Selector.MatchLabels) {
		return true, "selector changed"
	}
	if len(cur.Spec.VolumeClaimTemplates) != len(want.Spec.VolumeClaimTemplates) {
		return true, "persistence changed"
	}
	for i, w := range want.Spec.VolumeClaimTemplates {
		cv := cur.Spec.VolumeClaimTemplates[i]
		ws, cs := w.Spec.Resources.Requests[corev1.ResourceStorage], cv.Spec.Resources.Requests[corev1.ResourceStorage]
		if ws.Cmp(cs) != 0 {
			return true, fmt.Sprintf("claim size %s -> %s", cs.String(), ws.String())
		}
		if w.Spec.StorageClassName != nil && (cv.Spec.StorageClassName == nil || *cv.Spec.StorageClassName != *w.Spec.StorageClassName) {
			return true, "storage class changed"
		}
	}
	return false, ""
}
