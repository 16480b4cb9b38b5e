#!/usr/bin/env bash
# Builds the Spotahome Redis operator (cmd/redisoperator, the image's
# /usr/local/bin/redis-operator) from the pinned module (go.mod beside this script) into the
# cache folder given as $1, once, with redis-server.sh beside it as OUT/redis-server (Debian's
# redis-server with the official images' protected-mode default), with the release's CRD (OUT/crds) and its install manifest
# (OUT/bundle.yaml: the operator Deployment, its ServiceAccount, ClusterRole and binding in the
# default namespace, and its metrics Service, from example/operator/all-redis-operator-resources.yaml
# without the ServiceMonitor and PodMonitor, which need the Prometheus operator's CRDs).
# Progress goes to stderr.
#
# The command is compiled inside a temporary copy of the module, whose go.mod and go.sum pin
# every dependency, as the release's scripts/build.sh does (static, version in main.Version).
set -euo pipefail
out="${1:?usage: build.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
module=github.com/spotahome/redis-operator
version="$(awk -v m="$module" '$1=="require" && $2==m {print $3} $1==m {print $2}' "$here/go.mod")"
# The build is cached under the hash of its inputs (this script and the pins).
inputs="$(cd "$here" && cat build.sh go.mod go.sum redis-server.sh | sha256sum | cut -c1-16)"
if [[ -x "$out/redis-operator" && -x "$out/redis-server" && -f "$out/bundle.yaml" && -d "$out/crds" && "$(cat "$out/INPUTS" 2>/dev/null)" == "$inputs" ]]; then
  echo "redis-operator $version: cached in $out (inputs $inputs)" >&2
  exit 0
fi
[[ -d "$out" ]] && echo "redis-operator $version: the build in $out is of other inputs: rebuilding" >&2
echo "redis-operator $version: downloading the module (first time only)..." >&2
dir="$(cd "$here" && go mod download -json "$module@$version" | awk -F'"' '$2=="Dir"{print $4}')"
[[ -d "$dir" ]] || { echo "redis-operator $version: the module was not downloaded" >&2; exit 1; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp/crds"
src="$out.tmp/src"
cp -r "$dir" "$src"
chmod -R u+w "$src"
cd "$src"
echo "redis-operator $version: building cmd/redisoperator (a few minutes the first time; dependencies come from the Go module proxy on first use)..." >&2
start=$SECONDS
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w -X main.Version=$version" -o "$out.tmp/redis-operator" ./cmd/redisoperator
install -m 755 "$here/redis-server.sh" "$out.tmp/redis-server"
cp manifests/databases.spotahome.com_redisfailovers.yaml "$out.tmp/crds/"
# The install manifest, one document per "---", without the two monitoring.coreos.com objects.
awk 'BEGIN{RS="\n---[ \t]*\n"; ORS="\n---\n"} $0 !~ /apiVersion: monitoring\.coreos\.com\// && $0 ~ /kind:/' \
  example/operator/all-redis-operator-resources.yaml > "$out.tmp/bundle.yaml"
grep -q 'kind: Deployment' "$out.tmp/bundle.yaml" || { echo "redis-operator $version: no Deployment in the install manifest" >&2; exit 1; }
cd /
rm -rf "$src"
echo "$version" > "$out.tmp/VERSION"
echo "$inputs" > "$out.tmp/INPUTS"
chmod -R a+rX "$out.tmp"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "redis-operator $version: ready in $out ($((SECONDS-start))s)" >&2
