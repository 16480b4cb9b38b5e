#!/usr/bin/env bash
# A podCertificate projected source makes the operator re-create the instance for ever (CloudNativePG v1.28.2).
#
# Needs kubectl pointed at a cluster where CloudNativePG runs (its webhooks too) and that can run
# its PostgreSQL image (ghcr.io/cloudnative-pg/postgresql:15). On Kubernetes with the
# PodCertificateRequest feature gate off (the default through 1.35), the API server drops the source
# from the pod.
# Creates a namespace of its own (NAMESPACE=... to choose it, KEEP=1 to keep it), declares the
# manifests of this folder in order, and checks what the operator did.
# Exit 0: the bug reproduces; 1: it does not (fixed); 2: error (the cluster is not ready for it).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ns=${NAMESPACE:-finding-$(basename "$here")-$$}
error() { echo "error: $*" >&2; exit 2; }
k() { kubectl -n "$ns" "$@"; }
cleanup() { [[ -n ${KEEP:-} ]] || kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true; }
command -v kubectl >/dev/null || error "kubectl is not on the PATH"
kubectl get crd clusters.postgresql.cnpg.io >/dev/null 2>&1 || error "no CloudNativePG on this cluster (CRD clusters.postgresql.cnpg.io missing)"
kubectl create namespace "$ns" >/dev/null || error "cannot create namespace $ns"
trap cleanup EXIT
echo "namespace $ns (KEEP=1 keeps it)"

# declare FILE: kubectl apply, retried for a minute while the operator's webhook cannot be called.
declare_() {
  local out
  for _ in $(seq 30); do
    if out=$(k apply -f "$here/$1" 2>&1); then echo "applied $1"; return 0; fi
    [[ $out == *"failed calling webhook"* ]] || { echo "$out" >&2; return 1; }
    sleep 2
  done
  echo "$out" >&2
  return 1
}
phase() { k get cluster example -o jsonpath='{.status.phase}'; }
# healthy FILE: declares FILE and waits (10 minutes at most: initdb) for the Cluster to be healthy
# with its one instance ready.
healthy() {
  declare_ "$1" || error "kubectl apply $1 failed"
  for _ in $(seq 120); do
    if [[ $(phase) == "Cluster in healthy state" && $(k get cluster example -o jsonpath='{.status.readyInstances}') == 1 ]]; then
      echo "  the Cluster is healthy, pod example-1 $(k get pod example-1 -o jsonpath='{.status.phase}')"
      return
    fi
    sleep 5
  done
  error "the Cluster was not healthy 10 minutes after $1 (phase: $(phase))"
}

healthy 01-cluster.yaml
uids=$(k get pod example-1 -o jsonpath='{.metadata.uid}')
declare_ 02-cluster-pod-certificate.yaml || error "kubectl apply 02-cluster-pod-certificate.yaml failed"
# Watch the instance for four minutes: a rolled pod has a new uid; count them and the restarts.
restarts=0
for i in $(seq 48); do
  sleep 5
  uid=$(k get pod example-1 -o jsonpath='{.metadata.uid}' 2>/dev/null) || continue
  [[ -n $uid && $uids != *"$uid"* ]] && uids="$uids $uid"
  r=$(k get pod example-1 -o jsonpath='{.status.containerStatuses[?(@.name=="postgres")].restartCount}' 2>/dev/null)
  (( ${r:-0} > restarts )) && restarts=$r
  rolls=$(( $(wc -w <<<"$uids") - 1 + restarts ))
  if (( rolls >= 3 )); then
    echo "REPRODUCED: after $((i * 5)) s the instance was re-created $(( $(wc -w <<<"$uids") - 1 )) times and restarted $restarts times, and it goes on" \
      "(phase: $(phase); the pod's projected sources: $(k get pod example-1 -o jsonpath='{.spec.volumes[?(@.name=="projected")].projected.sources}' 2>/dev/null))"
    exit 0
  fi
done
echo "NOT REPRODUCED: in four minutes the instance was re-created $(( $(wc -w <<<"$uids") - 1 )) times and restarted $restarts times (phase: $(phase))." \
  "If the pod kept its podCertificate source, the PodCertificateRequest gate is on here: this bug needs it off."
exit 1
