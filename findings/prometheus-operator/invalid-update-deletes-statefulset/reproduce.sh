#!/usr/bin/env bash
# A desired state whose StatefulSet update is refused deletes the running Alertmanager's StatefulSet
# (Prometheus operator v0.85.0).
#
# Needs kubectl pointed at a cluster where the Prometheus operator runs (watching every namespace,
# as its bundle.yaml deploys it) and that can run Alertmanager 0.25 (quay.io/prometheus/alertmanager:v0.25.0).
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
kubectl get crd alertmanagers.monitoring.coreos.com >/dev/null 2>&1 || error "no Prometheus operator on this cluster (CRD alertmanagers.monitoring.coreos.com missing)"
kubectl create namespace "$ns" >/dev/null || error "cannot create namespace $ns"
trap cleanup EXIT
echo "namespace $ns (KEEP=1 keeps it)"

sts=alertmanager-example
ready() { k get statefulset "$sts" -o jsonpath='{.status.readyReplicas}' 2>/dev/null; }
reconciled() { k get alertmanager example -o jsonpath='{.status.conditions[?(@.type=="Reconciled")].status}: {.status.conditions[?(@.type=="Reconciled")].message}'; }

k apply -f "$here/01-alertmanager.yaml" >/dev/null || error "kubectl apply 01-alertmanager.yaml failed"
echo "applied 01-alertmanager.yaml"
for i in $(seq 60); do
  [[ $(ready) == 1 ]] && break
  (( i == 60 )) && error "StatefulSet $sts had no ready replica 5 minutes after 01-alertmanager.yaml"
  sleep 5
done
uid=$(k get statefulset "$sts" -o jsonpath='{.metadata.uid}')
echo "  StatefulSet $sts ready (1 replica), uid $uid"

k apply -f "$here/02-alertmanager-storage-no-source.yaml" >/dev/null 2>&1 || {
  echo "NOT REPRODUCED: storage without a volume source is refused at admission"; exit 1; }
echo "applied 02-alertmanager-storage-no-source.yaml"
# Watch for two minutes: is the StatefulSet deleted and left deleted?
gone=0
for i in $(seq 24); do
  sleep 5
  if k get statefulset "$sts" >/dev/null 2>&1; then gone=0; else gone=$((gone + 1)); fi
  if (( gone >= 6 )); then
    why=$(kubectl -n "$(kubectl get deploy -A -l app.kubernetes.io/name=prometheus-operator -o jsonpath='{.items[0].metadata.namespace}')" \
      logs deploy/prometheus-operator --since=5m 2>/dev/null | grep "$ns/example" | grep -m1 -o 'msg="recreating[^"]*"')
    pods=$(k get pods -o name | wc -l) rec=$(reconciled)
    # Not part of the verdict: declaring the first state again brings the Alertmanager back.
    k apply -f "$here/01-alertmanager.yaml" >/dev/null 2>&1
    back="not within two minutes"
    for j in $(seq 24); do sleep 5; [[ $(ready) == 1 ]] && { back="in $((j * 5)) s"; break; }; done
    echo "REPRODUCED: StatefulSet $sts has been gone for 30 s ($((i * 5)) s after the change), pods: $pods;" \
      "Reconciled=$rec; the operator: ${why:-(no log line found)}; re-applying 01-alertmanager.yaml brought it back $back"
    exit 0
  fi
done
now=$(k get statefulset "$sts" -o jsonpath='{.metadata.uid}' 2>/dev/null)
echo "NOT REPRODUCED: two minutes after the change StatefulSet $sts is there (uid ${now:-none}, was $uid; ready: $(ready)), Reconciled=$(reconciled)"
exit 1
