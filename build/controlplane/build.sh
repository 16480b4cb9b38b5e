#!/usr/bin/env bash
# Builds the pinned control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler) into the cache folder given as $1, once. Progress goes to stderr.
#
# With --node, builds instead the node binaries a kind node image needs (kubelet, kubeadm,
# kube-proxy, kubectl) from the same pinned k8s.io/kubernetes, into the folder given after
# it: the kind lane's step (make kind-binaries), which the embedded cluster never pays for.
# Every binary is static (CGO_ENABLED=0), as the control plane's: in these four cgo would
# only bring the C resolver and user lookups of the standard library.
set -euo pipefail
what="control plane"
bins=(etcd kube-apiserver kube-controller-manager kube-scheduler)
if [[ ${1:-} == --node ]]; then
  shift
  what="node binaries"
  bins=(kubelet kubeadm kube-proxy kubectl)
fi
out="${1:?usage: build.sh [--node] OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
k8s_version="$(awk '$1=="k8s.io/kubernetes"{print $2}' "$here/go.mod")"
major="${k8s_version#v}"; major="${major%%.*}"
minor="$(echo "$k8s_version" | cut -d. -f2)"
what="$what $k8s_version"
missing=0
for b in "${bins[@]}"; do [[ -x "$out/$b" ]] || missing=1; done
if [[ $missing == 0 ]]; then
  echo "$what: cached in $out" >&2
  exit 0
fi
mkdir -p "$out.tmp"
ld="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
cd "$here"
echo "$what: downloading modules (first time only)..." >&2
go mod download
start=$SECONDS
i=0
for b in "${bins[@]}"; do
  i=$((i+1))
  pkg="k8s.io/kubernetes/cmd/$b"
  [[ $b == etcd ]] && pkg=./etcd
  echo "$what: [$i/${#bins[@]}] building $b (the first build takes several minutes)..." >&2
  CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$out.tmp/$b" "$pkg"
  echo "$what: [$i/${#bins[@]}] $b built ($(du -h "$out.tmp/$b" | cut -f1), $((SECONDS-start))s so far)" >&2
done
echo "$k8s_version" > "$out.tmp/VERSION"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$what: ready in $out ($((SECONDS-start))s)" >&2
