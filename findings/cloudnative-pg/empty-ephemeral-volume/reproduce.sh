#!/usr/bin/env bash
# An empty ephemeralVolumeSource deletes the only instance, which cannot be re-created (CloudNativePG v1.28.2).
#
# Needs kubectl pointed at a cluster where CloudNativePG runs (its webhooks too) and that can run
# its PostgreSQL image (ghcr.io/cloudnative-pg/postgresql:15).
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
if ! out=$(k apply -f "$here/02-cluster-empty-ephemeral.yaml" 2>&1); then
  echo "NOT REPRODUCED: the empty ephemeralVolumeSource is refused at admission: $out"
  exit 1
fi
echo "applied 02-cluster-empty-ephemeral.yaml"
# Watch for four minutes: the operator rolls the instance; does its pod come back?
gone=0
for i in $(seq 48); do
  sleep 5
  if k get pod example-1 >/dev/null 2>&1; then gone=0; else gone=$((gone + 1)); fi
  if (( gone >= 12 )); then
    why=$(k get events --field-selector involvedObject.kind=Cluster -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' | grep -m1 'volumeClaimTemplate')
    [[ -n $why ]] || why=$(kubectl -n "$(kubectl get deploy -A -l app.kubernetes.io/name=cloudnative-pg -o jsonpath='{.items[0].metadata.namespace}')" \
      logs deploy/cnpg-controller-manager --since=5m 2>/dev/null | grep "$ns" | grep -o 'unable to create Pod.*volumeClaimTemplate: Required value' | head -1 | tr -d '\\')
    echo "REPRODUCED: pod example-1 has been gone for a minute ($((i * 5)) s after the change), phase: $(phase), Ready: $(k get cluster example -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}');" \
      "the operator: ${why:-(no message found)}"
    exit 0
  fi
done
echo "NOT REPRODUCED: four minutes after the change pod example-1 is there ($(k get pod example-1 -o jsonpath='{.status.phase}')), phase: $(phase)"
exit 1
