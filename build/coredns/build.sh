#!/usr/bin/env bash
# Builds the pinned CoreDNS (the embedded cluster's DNS) into the cache folder
# given as $1, once. Progress goes to stderr.
set -euo pipefail
out="${1:?usage: build.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
version="$(awk '$1=="github.com/coredns/coredns"{print $2} $1=="require" && $2=="github.com/coredns/coredns"{print $3}' "$here/go.mod")"
if [[ -x "$out/coredns" ]]; then
  echo "coredns $version: cached in $out" >&2
  exit 0
fi
mkdir -p "$out.tmp"
cd "$here"
echo "coredns $version: downloading modules (first time only)..." >&2
go mod download
start=$SECONDS
echo "coredns $version: building (a few minutes the first time)..." >&2
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$version" -o "$out.tmp/coredns" .
echo "$version" > "$out.tmp/VERSION"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "coredns $version: ready in $out ($((SECONDS-start))s): $("$out/coredns" -version | head -1)" >&2
