#!/usr/bin/env bash
# projectedVolumeTemplate {defaultMode: 2} is refused on create: the mutating webhook writes sources: null (CloudNativePG v1.28.2).
#
# Needs kubectl pointed at a cluster where CloudNativePG runs (its webhooks too) and that can run
# its PostgreSQL image (ghcr.io/cloudnative-pg/postgresql:15). Nothing is
# created: every check is a server-side dry run of a create.
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

create() { k create --dry-run=server -f "$here/$1" 2>&1; }
out=$(create 01-cluster.yaml) || error "the plain Cluster is refused, so this cluster cannot tell: $out"
echo "01-cluster.yaml: $out"
out=$(create control-sources-empty.yaml) || error "the control (sources: []) is refused too: $out"
echo "control-sources-empty.yaml: $out"
if out=$(create 02-cluster-default-mode.yaml); then
  echo "NOT REPRODUCED: 02-cluster-default-mode.yaml: $out"
  exit 1
fi
if [[ $out == *"projectedVolumeTemplate.sources"*null* ]]; then
  echo "REPRODUCED: 02-cluster-default-mode.yaml (no sources) is refused on create, while the same with sources: [] is created:"
  echo "$out" | sed 's/^/  /'
  exit 0
fi
error "02-cluster-default-mode.yaml is refused for another reason: $out"
