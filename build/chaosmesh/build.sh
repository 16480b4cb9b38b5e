#!/usr/bin/env bash
# Builds Chaos Mesh for the kind lane from the pinned module (go.mod beside this script) into
# the cache folder given as $1, once:
#   OUT/chaos-controller-manager  static (CGO_ENABLED=0)
#   OUT/chaos-daemon              cgo (its kernel-chaos client needs it), linked against this
#                                 machine's C library, which its image then carries
#   OUT/chaos-mesh.yaml           the module's own Helm chart (helm/chaos-mesh), its CRDs generated
#                                 again from the api module the binaries are built with (as Chaos
#                                 Mesh's `make config` does: controller-gen v0.18.0) — the chart's
#                                 own are those of the main module's commit, whose api is not
#                                 served, and a field they lack (NetworkChaos partitionBehavior)
#                                 is pruned, after which the webhook refuses every update of the
#                                 object ("Cannot update chaos spec") — rendered by the pinned Helm
#                                 (helm template, CRDs included) with the values
#                                 below: gauntlet.dev images loaded offline (never pulled),
#                                 containerd's socket, one controller replica, no dashboard, DNS
#                                 server, Prometheus or debugger. The chart generates the webhook
#                                 and mTLS certificates as it renders; they are kept with the build.
# Progress goes to stderr. ipset, which chaos-daemon runs for partitions, comes from Debian.
set -euo pipefail
out="${1:?usage: build.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
module=github.com/chaos-mesh/chaos-mesh
helm_version=v3.19.0
controller_gen_version=v0.18.0
api_module=github.com/chaos-mesh/chaos-mesh/api
version="$(awk -v m="$module" '$1=="require" && $2==m {print $3} $1==m {print $2}' "$here/go.mod")"
tag="${version##*-}"
if ! command -v ipset >/dev/null; then
  echo "chaos-mesh: installing Debian's ipset (chaos-daemon's partitions use it)..." >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q ipset >&2 || {
    apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ipset >&2; }
fi
if [[ -x "$out/chaos-controller-manager" && -x "$out/chaos-daemon" && -f "$out/chaos-mesh.yaml" && -f "$out/API_VERSION" ]]; then
  echo "chaos-mesh $version: cached in $out" >&2
  exit 0
fi
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
start=$SECONDS
cd "$here"
for b in chaos-controller-manager chaos-daemon; do
  if [[ -x "$out/$b" && "$(cat "$out/VERSION" 2>/dev/null)" == "$version" ]]; then
    cp "$out/$b" "$out.tmp/$b" # an earlier build of the same version: only the chart is new
    continue
  fi
  cgo=0
  [[ $b == chaos-daemon ]] && cgo=1 # its kernel-chaos client needs cgo
  echo "chaos-mesh $version: building $b (dependencies come from the Go module proxy the first time; several minutes)..." >&2
  CGO_ENABLED=$cgo nice -n 10 go build -trimpath -ldflags "-s -w" -o "$out.tmp/$b" "$module/cmd/$b"
done
echo "chaos-mesh $version: building helm $helm_version to render the chart..." >&2
GOBIN="$out.tmp/helm-bin" nice -n 10 go install "helm.sh/helm/v3/cmd/helm@$helm_version"
GOBIN="$out.tmp/helm-bin" nice -n 10 go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$controller_gen_version"
dir="$(go mod download -json "$module@$version" | awk -F'"' '$2=="Dir"{print $4}')"
[[ -d "$dir/helm/chaos-mesh" ]] || { echo "chaos-mesh $version: the module has no helm/chaos-mesh chart" >&2; exit 1; }
api_version="$(go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' "$api_module")"
api_dir="$(go mod download -json "$api_module@$api_version" | awk -F'"' '$2=="Dir"{print $4}')"
[[ -d "$api_dir/v1alpha1" ]] || { echo "chaos-mesh $version: $api_module $api_version has no v1alpha1" >&2; exit 1; }
echo "chaos-mesh $version: generating its CRDs from $api_module $api_version (controller-gen $controller_gen_version)..." >&2
cp -r "$dir/helm/chaos-mesh" "$out.tmp/chart"
cp -r "$api_dir" "$out.tmp/api"
chmod -R u+w "$out.tmp/chart" "$out.tmp/api"
rm -f "$out.tmp/chart/crds/"*
(cd "$out.tmp/api" && "$out.tmp/helm-bin/controller-gen" crd:ignoreUnexportedFields=true,crdVersions=v1 paths=./... output:crd:artifacts:config="$out.tmp/chart/crds")
echo "chaos-mesh $version: rendering its chart..." >&2
HELM_CACHE_HOME="$out.tmp/helm" HELM_CONFIG_HOME="$out.tmp/helm" HELM_DATA_HOME="$out.tmp/helm" \
"$out.tmp/helm-bin/helm" template chaos-mesh "$out.tmp/chart" --namespace chaos-mesh --include-crds \
  --set images.registry=gauntlet.dev --set images.tag="$tag" \
  --set controllerManager.replicaCount=1 --set controllerManager.imagePullPolicy=Never \
  --set chaosDaemon.imagePullPolicy=Never \
  --set chaosDaemon.runtime=containerd --set chaosDaemon.socketPath=/run/containerd/containerd.sock \
  --set dashboard.create=false --set dnsServer.create=false --set prometheus.create=false \
  --set bpfki.create=false --set chaosDlv.enable=false --set enableProfiling=false \
  > "$out.tmp/chaos-mesh.yaml"
rm -rf "$out.tmp/helm-bin" "$out.tmp/helm" "$out.tmp/chart" "$out.tmp/api"
echo "$api_version" > "$out.tmp/API_VERSION"
echo "$version" > "$out.tmp/VERSION"
chmod -R a+rX "$out.tmp"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "chaos-mesh $version: ready in $out ($((SECONDS-start))s)" >&2
