package semantic

import (
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// knownValues lists, per Go string type of the Kubernetes API, the values the API server accepts
// for it, taken from the k8s.io/api constants (a CRD copying a core type usually drops the enum).
var knownValues = func() map[string][]string {
	m := map[string][]string{}
	add := func(zero any, vals ...any) {
		t := qualified(reflect.TypeOf(zero))
		for _, v := range vals {
			m[t] = append(m[t], reflect.ValueOf(v).String())
		}
	}
	add(corev1.PullAlways, corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)
	add(corev1.ProtocolTCP, corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)
	add(corev1.TolerationOpExists, corev1.TolerationOpExists, corev1.TolerationOpEqual)
	add(corev1.TaintEffectNoSchedule, corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute)
	add(corev1.NodeSelectorOpIn, corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
		corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt)
	add(metav1.LabelSelectorOpIn, metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist)
	// Unmasked needs a user namespace (hostUsers: false).
	add(corev1.DefaultProcMount, corev1.DefaultProcMount)
	add(corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined, corev1.SeccompProfileTypeLocalhost)
	add(corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined, corev1.AppArmorProfileTypeLocalhost)
	add(corev1.Capability(""), corev1.Capability("ALL"), corev1.Capability("NET_ADMIN"), corev1.Capability("NET_BIND_SERVICE"), corev1.Capability("SYS_TIME"))
	// ReadWriteOncePod excludes every other mode of the claim.
	add(corev1.ReadWriteOnce, corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany)
	add(corev1.PersistentVolumeFilesystem, corev1.PersistentVolumeFilesystem, corev1.PersistentVolumeBlock)
	add(corev1.ServiceTypeClusterIP, corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer)
	add(corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal)
	add(corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal)
	add(corev1.ServiceAffinityNone, corev1.ServiceAffinityNone, corev1.ServiceAffinityClientIP)
	add(corev1.RestartPolicyAlways, corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)
	add(corev1.DNSClusterFirst, corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet, corev1.DNSDefault, corev1.DNSNone)
	add(corev1.TerminationMessageReadFile, corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError)
	add(corev1.DoNotSchedule, corev1.DoNotSchedule, corev1.ScheduleAnyway)
	add(corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore)
	add(corev1.FSGroupChangeOnRootMismatch, corev1.FSGroupChangeOnRootMismatch, corev1.FSGroupChangeAlways)
	add(corev1.URISchemeHTTP, corev1.URISchemeHTTP, corev1.URISchemeHTTPS)
	// Bidirectional propagation is accepted only in privileged containers.
	add(corev1.MountPropagationNone, corev1.MountPropagationNone, corev1.MountPropagationHostToContainer)
	add(corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory, corev1.HostPathFileOrCreate,
		corev1.HostPathFile, corev1.HostPathSocket, corev1.HostPathCharDev, corev1.HostPathBlockDev)
	add(corev1.NotRequired, corev1.NotRequired, corev1.RestartContainer)
	// MountOption needs the SELinuxMount feature gate (beta, off by default): only Recursive.
	add(corev1.SELinuxChangePolicyRecursive, corev1.SELinuxChangePolicyRecursive)
	// Enabled fails the container where the runtime cannot mount recursively read-only; IfPossible
	// falls back. Both need readOnly: true (kept while drawing).
	add(corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyIfPossible)
	add(corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure)
	// Test clusters run Linux nodes.
	add(corev1.Linux, corev1.Linux)
	add(corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict)
	add(corev1.PreemptLowerPriority, corev1.PreemptLowerPriority, corev1.PreemptNever)
	add(corev1.IPv4Protocol, corev1.IPv4Protocol, corev1.IPv6Protocol)
	add(appsv1.OrderedReadyPodManagement, appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)
	add(appsv1.RollingUpdateStatefulSetStrategyType, appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType)
	add(appsv1.RecreateDeploymentStrategyType, appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType)
	add(appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType)
	return m
}()

// KnownValues returns the values the Kubernetes API accepts for a Go string type of k8s.io/api
// (by qualified name, as in Semantic.Type), or nil when the type is free text.
func KnownValues(goType string) []string {
	return append([]string(nil), knownValues[goType]...)
}
