#!/usr/bin/env bash
# Reverting a change that crash-looped the only instance is never applied (CloudNativePG v1.28.2).
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

uid() { k get pod example-1 -o jsonpath='{.spec.securityContext.runAsUser}' 2>/dev/null; }
healthy 01-cluster.yaml
echo "  pod example-1 runs as uid $(uid)"
declare_ 02-cluster-uid-1000.yaml || error "kubectl apply 02-cluster-uid-1000.yaml failed"
# Wait (five minutes at most) for the instance to run as uid 1000 and fail: its data belongs to uid 26.
for _ in $(seq 60); do
  r=$(k get pod example-1 -o jsonpath='{.status.containerStatuses[?(@.name=="postgres")].restartCount}' 2>/dev/null)
  [[ $(uid) == 1000 && ${r:-0} -ge 1 ]] && break
  sleep 5
done
[[ $(uid) == 1000 && ${r:-0} -ge 1 ]] || error "the instance did not crash-loop as uid 1000 within five minutes (uid $(uid), restarts ${r:-0}, phase: $(phase))"
echo "  pod example-1 runs as uid 1000 and crash-loops (restarts: $r)"
declare_ 03-cluster-reverted.yaml || error "kubectl apply 03-cluster-reverted.yaml failed"
# The revert should roll the instance back to uid 26 within a few minutes.
for i in $(seq 48); do
  sleep 5
  ready=$(k get pod example-1 -o jsonpath='{.status.containerStatuses[?(@.name=="postgres")].ready}' 2>/dev/null)
  if [[ $(uid) != 1000 && $ready == true ]]; then
    echo "NOT REPRODUCED: $((i * 5)) s after the revert the instance runs as uid $(uid) and is ready"
    exit 1
  fi
done
echo "REPRODUCED: four minutes after the revert, pod example-1 still runs as uid $(uid) and is not ready" \
  "(restarts: $(k get pod example-1 -o jsonpath='{.status.containerStatuses[?(@.name=="postgres")].restartCount}'), phase: $(phase));" \
  "the Cluster's spec has no podSecurityContext: '$(k get cluster example -o jsonpath='{.spec.podSecurityContext}')'"
exit 0
