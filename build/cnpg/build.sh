#!/usr/bin/env bash
# Builds CloudNativePG's manager (cmd/manager: the operator, and the instance manager the
# operator copies into each PostgreSQL pod) from the pinned module (go.mod beside this script)
# into the cache folder given as $1, once, with the release's own manifest beside it
# (OUT/cnpg.yaml: the module's releases/cnpg-VERSION.yaml, what `kubectl apply --server-side -f`
# installs: CRDs, RBAC, the operator Deployment, its webhooks), the CRDs alone (OUT/crds) and the
# kustomize sources they were rendered from (OUT/config). Progress goes to stderr.
#
# The command is compiled inside a temporary copy of the module, whose own go.mod and go.sum
# pin every dependency, as the release's Makefile does (same version ldflags).
set -euo pipefail
out="${1:?usage: build.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
module=github.com/cloudnative-pg/cloudnative-pg
version="$(awk -v m="$module" '$1=="require" && $2==m {print $3} $1==m {print $2}' "$here/go.mod")"
if [[ -x "$out/manager" && -f "$out/cnpg.yaml" && -d "$out/crds" ]]; then
  echo "cloudnative-pg $version: cached in $out" >&2
  exit 0
fi
echo "cloudnative-pg $version: downloading the module (first time only)..." >&2
dir="$(cd "$here" && go mod download -json "$module@$version" | awk -F'"' '$2=="Dir"{print $4}')"
[[ -d "$dir" ]] || { echo "cloudnative-pg $version: the module was not downloaded" >&2; exit 1; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp/crds"
src="$out.tmp/src"
cp -r "$dir" "$src"
chmod -R u+w "$src"
cd "$src"
echo "cloudnative-pg $version: dependencies come from the Go module proxy on first use" >&2
start=$SECONDS
echo "cloudnative-pg $version: building cmd/manager (several minutes the first time)..." >&2
CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X $module/pkg/versions.buildVersion=${version#v} -X $module/pkg/versions.buildCommit=$version -X $module/pkg/versions.buildDate=module" \
  -o "$out.tmp/manager" ./cmd/manager
cp -r config "$out.tmp/config"
cp config/crd/bases/*.yaml "$out.tmp/crds/"
release="releases/cnpg-${version#v}.yaml"
[[ -f "$release" ]] || { echo "cloudnative-pg $version: the module has no $release" >&2; exit 1; }
cp "$release" "$out.tmp/cnpg.yaml"
cd /
rm -rf "$src"
echo "$version" > "$out.tmp/VERSION"
chmod -R a+rX "$out.tmp"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "cloudnative-pg $version: ready in $out ($((SECONDS-start))s)" >&2
