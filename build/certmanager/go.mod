// The pinned cert-manager release that build.sh builds (controller, webhook and
// cainjector) and whose CRDs the cert-manager example target uses. The commands
// in this folder are compiled inside a copy of that module (they use its
// internal packages), never in this module: see build.sh.
module github.com/gauntlet-dev/gauntlet/build/certmanager

go 1.26.0

require github.com/cert-manager/cert-manager v1.21.2
