#!/usr/bin/env bash
# Builds the Prometheus operator (cmd/operator) and its config reloader
# (cmd/prometheus-config-reloader, the sidecar and init container of every Alertmanager and
# Prometheus pod) from the pinned module (go.mod beside this script) into the cache folder given
# as $1, once, with the release's own install manifest beside them (OUT/bundle.yaml: the CRDs,
# RBAC and the operator Deployment, what `kubectl create -f bundle.yaml` installs) and the CRDs
# alone (OUT/crds). Progress goes to stderr.
#
# The commands are compiled inside a temporary copy of the module, whose go.mod and go.sum pin
# every dependency, with the release Makefile's version ldflags. The module replaces its two
# nested modules (pkg/apis/monitoring, pkg/client) by local folders the module's zip does not
# hold, so the copy drops those replacements and takes the nested modules at the same version
# from the Go module proxy.
set -euo pipefail
out="${1:?usage: build.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
module=github.com/prometheus-operator/prometheus-operator
version="$(awk -v m="$module" '$1=="require" && $2==m {print $3} $1==m {print $2}' "$here/go.mod")"
cmds=(operator prometheus-config-reloader)
# The build is cached under the hash of its inputs (this script and the pins).
inputs="$(cd "$here" && cat build.sh go.mod go.sum | sha256sum | cut -c1-16)"
cached=1
for c in "${cmds[@]}"; do [[ -x "$out/$c" ]] || cached=0; done
[[ -f "$out/bundle.yaml" && -d "$out/crds" ]] || cached=0
[[ "$(cat "$out/INPUTS" 2>/dev/null)" == "$inputs" ]] || cached=0
if [[ $cached == 1 ]]; then
  echo "prometheus-operator $version: cached in $out (inputs $inputs)" >&2
  exit 0
fi
[[ -d "$out" ]] && echo "prometheus-operator $version: the build in $out is of other inputs: rebuilding" >&2
echo "prometheus-operator $version: downloading the module (first time only)..." >&2
dir="$(cd "$here" && go mod download -json "$module@$version" | awk -F'"' '$2=="Dir"{print $4}')"
[[ -d "$dir" ]] || { echo "prometheus-operator $version: the module was not downloaded" >&2; exit 1; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp/crds"
src="$out.tmp/src"
cp -r "$dir" "$src"
chmod -R u+w "$src"
cd "$src"
go mod edit -dropreplace "$module/pkg/apis/monitoring" -dropreplace "$module/pkg/client"
echo "prometheus-operator $version: dependencies come from the Go module proxy on first use" >&2
start=$SECONDS
common=github.com/prometheus/common/version
ldflags="-s -w -X $common.Version=${version#v} -X $common.Revision=$version -X $common.Branch=module -X $common.BuildUser=gauntlet -X $common.BuildDate=module"
for c in "${cmds[@]}"; do
  echo "prometheus-operator $version: building cmd/$c (a few minutes the first time)..." >&2
  CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$out.tmp/$c" "./cmd/$c"
done
cp example/prometheus-operator-crd/*.yaml "$out.tmp/crds/"
cp bundle.yaml "$out.tmp/bundle.yaml"
cd /
rm -rf "$src"
echo "$version" > "$out.tmp/VERSION"
echo "$inputs" > "$out.tmp/INPUTS"
chmod -R a+rX "$out.tmp"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "prometheus-operator $version: ready in $out ($((SECONDS-start))s)" >&2
