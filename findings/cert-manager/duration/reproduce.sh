#!/usr/bin/env bash
# A duration set after an issuance without one is never applied (cert-manager v1.21.2).
#
# Needs kubectl pointed at a cluster where cert-manager runs (its webhook too), plus base64 and GNU date.
# Creates a namespace of its own (NAMESPACE=... to choose it, KEEP=1 to keep it), declares the
# manifests of this folder in order, and checks what cert-manager issued.
# Exit 0: the bug reproduces; 1: it does not (fixed); 2: error (the cluster is not ready for it).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ns=${NAMESPACE:-finding-$(basename "$here")-$$}
error() { echo "error: $*" >&2; exit 2; }
k() { kubectl -n "$ns" "$@"; }
cleanup() { [[ -n ${KEEP:-} ]] || kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true; }
command -v kubectl >/dev/null || error "kubectl is not on the PATH"
kubectl get crd certificates.cert-manager.io >/dev/null 2>&1 || error "no cert-manager on this cluster (CRD certificates.cert-manager.io missing)"
kubectl create namespace "$ns" >/dev/null || error "cannot create namespace $ns"
trap cleanup EXIT
echo "namespace $ns (KEEP=1 keeps it)"
# The webhook may refuse for a while after cert-manager starts: retry the issuer for a minute.
for _ in $(seq 30); do k apply -f "$here/00-issuer.yaml" >/dev/null 2>&1 && break; sleep 2; done
k wait --for=condition=Ready issuer/selfsigned --timeout=2m >/dev/null || error "the self-signed Issuer did not become Ready"

# apply FILE: declares a desired state and waits until cert-manager has seen it and the
# Certificate is Ready (the Ready condition's observedGeneration is the Certificate's generation).
apply() {
  k apply -f "$here/$1" >/dev/null || error "kubectl apply $1 failed"
  local gen
  gen=$(k get certificate example -o jsonpath='{.metadata.generation}')
  for _ in $(seq 60); do
    if [[ $(k get certificate example -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].observedGeneration}') == "True/$gen" ]]; then
      echo "applied $1: Ready, $(k get certificate example -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')"
      return
    fi
    sleep 2
  done
  error "Certificate example not Ready for generation $gen two minutes after $1"
}

# secret KEY: the decoded data key of the issued Secret.
secret() { k get secret example-tls -o "jsonpath={.data.${1//./\\.}}" | base64 -d; }

# validity: the issued certificate's lifetime in hours (status.notAfter - status.notBefore).
validity() {
  local nb na
  nb=$(k get certificate example -o jsonpath='{.status.notBefore}')
  na=$(k get certificate example -o jsonpath='{.status.notAfter}')
  echo $(( ($(date -d "$na" +%s) - $(date -d "$nb" +%s)) / 3600 ))
}
date -d 2026-01-01T00:00:00Z +%s >/dev/null 2>&1 || error "this script needs GNU date (date -d)"

apply 01-certificate-no-duration.yaml
echo "issued for $(validity)h (no duration asked for: cert-manager's default, 2160h), revision $(k get certificate example -o jsonpath='{.status.revision}')"
apply 02-certificate-720h.yaml
for _ in $(seq 30); do
  h=$(validity)
  if [[ $h == 720 ]]; then
    echo "NOT REPRODUCED: re-issued for 720h"
    exit 1
  fi
  sleep 2
done
echo "REPRODUCED: spec.duration is 720h, but a minute later the certificate is still issued for ${h}h," \
  "revision $(k get certificate example -o jsonpath='{.status.revision}'), Ready: $(k get certificate example -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')"
exit 0
