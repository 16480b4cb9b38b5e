#!/usr/bin/env bash
# Regenerates the operator's deepcopy code, CRDs and RBAC role from the Go markers.
# controller-gen is pinned: v0.20.x is the line built against Kubernetes 0.35.
set -euo pipefail
CONTROLLER_GEN_VERSION=v0.20.1
cd "$(dirname "$0")/../.."   # the repository root
gen=(go run "sigs.k8s.io/controller-tools/cmd/controller-gen@${CONTROLLER_GEN_VERSION}")
"${gen[@]}" object:headerFile=operator/hack/boilerplate.go.txt paths=./operator/api/...
"${gen[@]}" crd:allowDangerousTypes=false rbac:roleName=valkey-operator \
  paths=./operator/api/... paths=./operator/internal/controller/... \
  output:crd:artifacts:config=operator/config/crd/bases \
  output:rbac:artifacts:config=operator/config/rbac
