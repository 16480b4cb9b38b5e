// The pinned CloudNativePG release that build.sh builds (cmd/manager: the operator and, copied
// into every instance pod, the instance manager) and whose CRDs and kustomize configuration
// (config/) the cloudnative-pg example target deploys. Nothing is compiled in this module:
// build.sh builds the release's own command inside a copy of its module.
module github.com/gauntlet-dev/gauntlet/build/cnpg

go 1.26.0

require github.com/cloudnative-pg/cloudnative-pg v1.28.2
