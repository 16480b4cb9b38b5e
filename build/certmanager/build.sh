#!/usr/bin/env bash
# Builds cert-manager's controller, webhook and cainjector from the pinned
# cert-manager module (go.mod beside this script) into the cache folder given as
# $1, once, with the module's CRDs beside them (OUT/crds). Progress goes to stderr.
#
# cert-manager ships its commands as modules of their own that the Go module
# proxy does not serve, so the commands here (controller/, webhook/,
# cainjector/: written for Gauntlet) are compiled inside a temporary copy of the
# main module, whose packages (internal ones included) they use. The module's
# own go.mod and go.sum pin every dependency.
set -euo pipefail
out="${1:?usage: build.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
module=github.com/cert-manager/cert-manager
version="$(awk -v m="$module" '$1=="require" && $2==m {print $3} $1==m {print $2}' "$here/go.mod")"
cmds=(controller webhook cainjector)
# The build is cached under the hash of its inputs: this script, the pins and the commands'
# sources (a fix to a command rebuilds it on the next make).
inputs="$(cd "$here" && cat build.sh go.mod go.sum */main.go | sha256sum | cut -c1-16)"
cached=1
for c in "${cmds[@]}"; do [[ -x "$out/$c" ]] || cached=0; done
[[ -d "$out/crds" ]] || cached=0
[[ "$(cat "$out/INPUTS" 2>/dev/null)" == "$inputs" ]] || cached=0
if [[ $cached == 1 ]]; then
  echo "cert-manager $version: cached in $out (inputs $inputs)" >&2
  exit 0
fi
[[ -d "$out" ]] && echo "cert-manager $version: the build in $out is of other inputs: rebuilding" >&2
echo "cert-manager $version: downloading the module (first time only)..." >&2
dir="$(cd "$here" && go mod download -json "$module@$version" | awk -F'"' '$2=="Dir"{print $4}')"
[[ -d "$dir" ]] || { echo "cert-manager $version: the module was not downloaded" >&2; exit 1; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp/crds"
src="$out.tmp/src"
cp -r "$dir" "$src"
chmod -R u+w "$src"
for c in "${cmds[@]}"; do
  mkdir -p "$src/gauntlet/$c"
  cp "$here/$c/main.go" "$src/gauntlet/$c/main.go"
done
cd "$src"
echo "cert-manager $version: dependencies come from the Go module proxy on first use" >&2
start=$SECONDS
for c in "${cmds[@]}"; do
  echo "cert-manager $version: building $c (a few minutes the first time)..." >&2
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X $module/pkg/util.AppVersion=$version" -o "$out.tmp/$c" "./gauntlet/$c"
done
cp deploy/crds/*.yaml "$out.tmp/crds/"
rm -f "$out.tmp/crds/README.md"
cd /
rm -rf "$src"
echo "$version" > "$out.tmp/VERSION"
echo "$inputs" > "$out.tmp/INPUTS"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "cert-manager $version: ready in $out ($((SECONDS-start))s)" >&2
