// The pinned Prometheus operator release that build.sh builds (cmd/operator and
// cmd/prometheus-config-reloader) and whose CRDs and bundle (bundle.yaml: CRDs, RBAC, the
// operator Deployment) the prometheus-operator example target deploys. Nothing is compiled in
// this module: build.sh builds the release's own commands inside a copy of its module.
module github.com/gauntlet-dev/gauntlet/build/prometheus-operator

go 1.26.0

require github.com/prometheus-operator/prometheus-operator v0.85.0
