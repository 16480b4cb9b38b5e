#!/usr/bin/env bash
# spec.web.timeout is rendered --web.timeout=6, a duration without a unit, and Alertmanager
# crash-loops (Prometheus operator v0.85.0).
#
# Needs kubectl pointed at a cluster where the Prometheus operator runs (watching every namespace,
# as its bundle.yaml deploys it) and that can run Alertmanager 0.25 (quay.io/prometheus/alertmanager:v0.25.0).
# Creates a namespace of its own (NAMESPACE=... to choose it, KEEP=1 to keep it), declares the
# manifests of this folder in order, and checks what the operator rendered and how the pod runs.
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

sts=alertmanager-example pod=alertmanager-example-0
field() { k get statefulset "$sts" -o jsonpath="{$1}" 2>/dev/null; }
# the alertmanager container's status in the pod: ready, restarts, waiting reason
container() { k get pod "$pod" -o jsonpath='{.status.containerStatuses[?(@.name=="alertmanager")].ready} {.status.containerStatuses[?(@.name=="alertmanager")].restartCount} {.status.containerStatuses[?(@.name=="alertmanager")].state.waiting.reason}' 2>/dev/null; }

k apply -f "$here/01-alertmanager.yaml" >/dev/null || error "kubectl apply 01-alertmanager.yaml failed"
echo "applied 01-alertmanager.yaml"
for i in $(seq 60); do
  [[ $(field .status.readyReplicas) == 1 ]] && break
  (( i == 60 )) && error "StatefulSet $sts had no ready replica 5 minutes after 01-alertmanager.yaml"
  sleep 5
done
rev=$(field .status.currentRevision)
echo "  StatefulSet $sts ready (1 replica), revision $rev"

k apply -f "$here/02-alertmanager-web-timeout.yaml" >/dev/null 2>&1 || {
  echo "NOT REPRODUCED: web.timeout 6 is refused at admission"; exit 1; }
echo "applied 02-alertmanager-web-timeout.yaml"
# Wait (two minutes at most) for the operator to render the change into the StatefulSet.
arg=
for _ in $(seq 24); do
  arg=$(field '.spec.template.spec.containers[?(@.name=="alertmanager")].args' | tr -d '[]"' | tr , '\n' | grep -- '--web.timeout')
  [[ -n $arg ]] && break
  sleep 5
done
[[ -n $arg ]] || error "two minutes after the change the StatefulSet's alertmanager args hold no --web.timeout"
echo "  the StatefulSet's alertmanager container now has $arg"
# Watch the rolled pod for three minutes: does Alertmanager start?
upready=0
for i in $(seq 36); do
  sleep 5
  read -r ok restarts waiting <<<"$(container)"
  said=$(k logs "$pod" -c alertmanager --previous 2>/dev/null | grep -m1 'error:')
  [[ -n $said ]] || said=$(k logs "$pod" -c alertmanager 2>/dev/null | grep -m1 'error:')
  if [[ $said == *"missing unit in duration"* ]]; then
    echo "REPRODUCED: $arg; Alertmanager exits: $said (restarts: ${restarts:-?}, ${waiting:-running})"
    exit 0
  fi
  if [[ $ok == true && $(field .status.updateRevision) != "$rev" && $(field .status.currentRevision) == $(field .status.updateRevision) ]]; then
    upready=$((upready + 1))
    if (( upready >= 6 )); then
      echo "NOT REPRODUCED: with $arg the rolled pod $pod has been ready for 30 s (restarts: $restarts)"
      exit 1
    fi
  else
    upready=0
  fi
done
echo "NOT REPRODUCED: three minutes after the change pod $pod did not fail with a unitless duration (ready: ${ok:-?}, restarts: ${restarts:-?}, ${waiting:-running}, $arg)"
exit 1
