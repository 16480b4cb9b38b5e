package resources

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/conf"
)

// Backup layout: the claim holds BackupFile at its root, and BackupFile+".sha256".
const (
	BackupFile  = "dump.rdb"
	BackupMount = "/backup"
	// ResultPrefix starts the line a snapshot pod prints (and writes as its
	// termination message): "sha256:<hex> <size>".
	ResultPrefix = "sha256:"
)

// BackupClaimName is the claim of a backup.
func BackupClaimName(b *v1alpha1.ValkeyBackup) string { return b.Name + "-backup" }

// BackupPodName is the pod that takes a backup's snapshot.
func BackupPodName(b *v1alpha1.ValkeyBackup) string { return b.Name + "-snapshot" }

// RestorePodName is the pod that serves a backup to a cluster being restored.
func RestorePodName(c *v1alpha1.ValkeyCluster) string { return c.Name + "-restore" }

// BackupOwnerReference makes the backup the controller of an object.
func BackupOwnerReference(b *v1alpha1.ValkeyBackup) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ValkeyBackup", Name: b.Name, UID: b.UID, Controller: &t, BlockOwnerDeletion: &t}
}

func backupLabels(b *v1alpha1.ValkeyBackup) map[string]string {
	return map[string]string{
		v1alpha1.LabelName: "valkey-backup", v1alpha1.LabelInstance: b.Name,
		v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelComponent: "backup",
	}
}

// MakeBackupClaim is the claim a backup is stored in (owned by the backup).
func MakeBackupClaim(b *v1alpha1.ValkeyBackup) *corev1.PersistentVolumeClaim {
	b = b.Defaulted()
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: BackupClaimName(b), Namespace: b.Namespace, Labels: backupLabels(b),
			OwnerReferences: []metav1.OwnerReference{BackupOwnerReference(b)}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: b.Spec.Storage.StorageClassName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: b.Spec.Storage.Size}},
		},
	}
}

func clientSecrets(c *v1alpha1.ValkeyCluster) (mounts []corev1.VolumeMount, volumes []corev1.Volume) {
	mode := int32(0o440)
	if c.Spec.Auth.PasswordSecret != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: VolumeAuth, MountPath: conf.AuthDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: VolumeAuth, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: AuthSecretName(c), DefaultMode: &mode}}})
	}
	if c.Spec.TLS.Enabled {
		mounts = append(mounts, corev1.VolumeMount{Name: VolumeTLS, MountPath: conf.TLSDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: VolumeTLS, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: c.Spec.TLS.SecretName, DefaultMode: &mode}}})
	}
	return mounts, volumes
}

func tlsServerArgs(c *v1alpha1.ValkeyCluster) string {
	if !c.Spec.TLS.Enabled {
		return fmt.Sprintf("--port %d", conf.Port)
	}
	return fmt.Sprintf("--port 0 --tls-port %d --tls-cert-file %[2]s/tls.crt --tls-key-file %[2]s/tls.key --tls-ca-cert-file %[2]s/ca.crt --tls-replication yes --tls-auth-clients optional", conf.Port, conf.TLSDir)
}

// MakeBackupPod snapshots the primary at primaryIP with the replication protocol
// (valkey-cli --rdb: the primary forks an RDB snapshot exactly as for BGSAVE and
// streams it), stores it in the backup's claim with its SHA-256, and reports
// "sha256:<hex> <size>" as its termination message.
func MakeBackupPod(b *v1alpha1.ValkeyBackup, c *v1alpha1.ValkeyCluster, primaryIP string) *corev1.Pod {
	mounts, volumes := clientSecrets(c)
	mounts = append(mounts, corev1.VolumeMount{Name: "backup", MountPath: BackupMount})
	volumes = append(volumes, corev1.Volume{Name: "backup", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: BackupClaimName(b)}}})
	var tls string
	if c.Spec.TLS.Enabled {
		tls = fmt.Sprintf(" --tls --cacert %[1]s/ca.crt --cert %[1]s/tls.crt --key %[1]s/tls.key", conf.TLSDir)
	}
	var auth string
	if c.Spec.Auth.PasswordSecret != nil {
		auth = fmt.Sprintf("if [ -s %[1]s ]; then REDISCLI_AUTH=$(cat %[1]s); VALKEYCLI_AUTH=$REDISCLI_AUTH; export REDISCLI_AUTH VALKEYCLI_AUTH; fi\n", conf.PasswordFile)
	}
	script := `set -eu
cli=valkey-cli; command -v valkey-cli >/dev/null 2>&1 || cli=redis-cli
` + auth + fmt.Sprintf(`"$cli" -h "$PRIMARY_IP" -p %d%s --rdb %[3]s/%[4]s.tmp
mv %[3]s/%[4]s.tmp %[3]s/%[4]s
sum=$(sha256sum %[3]s/%[4]s | cut -d' ' -f1)
size=$(wc -c < %[3]s/%[4]s | tr -d ' ')
echo "$sum  %[4]s" > %[3]s/%[4]s.sha256
echo "%[5]s$sum $size" > /dev/termination-log || true
echo "%[5]s$sum $size"
`, conf.Port, tls, BackupMount, BackupFile, ResultPrefix)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: BackupPodName(b), Namespace: b.Namespace, Labels: backupLabels(b),
			OwnerReferences: []metav1.OwnerReference{BackupOwnerReference(b)}},
		Spec: oneShotPodSpec(c, 10, volumes, corev1.Container{
			Name:         "snapshot",
			Command:      shell(script),
			Env:          []corev1.EnvVar{{Name: "PRIMARY_IP", Value: primaryIP}},
			VolumeMounts: mounts,
		}),
	}
}

// oneShotPodSpec is the spec of a pod the operator runs beside a cluster (the
// backup's snapshot, the restore's server): never restarted, with the
// cluster's image, security contexts, pull secrets and scheduling, no
// service-account token or service links, and the container's termination
// message falling back to its log.
func oneShotPodSpec(c *v1alpha1.ValkeyCluster, grace int64, volumes []corev1.Volume, ctr corev1.Container) corev1.PodSpec {
	no := false
	ctr.Image = c.Spec.Image
	ctr.ImagePullPolicy = c.Spec.ImagePullPolicy
	ctr.SecurityContext = c.Spec.ContainerSecurityContext
	ctr.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	return corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: &grace,
		SecurityContext:               c.Spec.PodSecurityContext,
		AutomountServiceAccountToken:  &no,
		EnableServiceLinks:            &no,
		ImagePullSecrets:              c.Spec.ImagePullSecrets,
		Tolerations:                   c.Spec.Scheduling.Tolerations,
		NodeSelector:                  c.Spec.Scheduling.NodeSelector,
		Volumes:                       volumes,
		Containers:                    []corev1.Container{ctr},
	}
}

// ParseBackupResult reads "sha256:<hex> <size>" from a snapshot pod's
// termination message (or its last log line).
func ParseBackupResult(msg string) (checksum string, size int64, ok bool) {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		f := strings.Fields(lines[i])
		if len(f) == 2 && strings.HasPrefix(f[0], ResultPrefix) && len(f[0]) == len(ResultPrefix)+64 {
			var n int64
			if _, err := fmt.Sscanf(f[1], "%d", &n); err == nil && n > 0 {
				return f[0], n, true
			}
		}
	}
	return "", 0, false
}

// MakeRestorePod serves a completed backup to a cluster being created from it:
// it checks the file's checksum, then runs a server that loads it; the cluster's
// first pod replicates from it and is then promoted.
func MakeRestorePod(c *v1alpha1.ValkeyCluster, b *v1alpha1.ValkeyBackup) *corev1.Pod {
	mounts, volumes := clientSecrets(c)
	mounts = append(mounts, corev1.VolumeMount{Name: "backup", MountPath: BackupMount, ReadOnly: true})
	volumes = append(volumes, corev1.Volume{Name: "backup", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: b.Status.PersistentVolumeClaim, ReadOnly: true}}})
	sum := strings.TrimPrefix(b.Status.Checksum, ResultPrefix)
	var auth string
	if c.Spec.Auth.PasswordSecret != nil {
		auth = " --include " + conf.AuthFile
	}
	script := fmt.Sprintf(`set -eu
srv=valkey-server; command -v valkey-server >/dev/null 2>&1 || srv=redis-server
cd %[1]s
echo "%[2]s  %[3]s" | sha256sum -c -
exec "$srv" %[4]s --bind '*' '-::*' --protected-mode no --dir %[1]s --dbfilename %[3]s --save '' --appendonly no --repl-diskless-sync yes --repl-diskless-sync-delay 0%[5]s
`, BackupMount, sum, b.Status.Path, tlsServerArgs(c), auth)
	labels := map[string]string{
		v1alpha1.LabelName: "valkey-restore", v1alpha1.LabelInstance: c.Name,
		v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelComponent: "restore",
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: RestorePodName(c), Namespace: c.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{OwnerReference(c)}},
		Spec: oneShotPodSpec(c, 5, volumes, corev1.Container{
			Name:         ContainerValkey,
			Command:      shell(script),
			Ports:        []corev1.ContainerPort{{Name: PortNameValkey, ContainerPort: conf.Port, Protocol: corev1.ProtocolTCP}},
			VolumeMounts: mounts,
		}),
	}
}
