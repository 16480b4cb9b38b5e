#!/usr/bin/env bash
# Installs what Gauntlet needs on a fresh Debian machine, once; prints what it does.
# - a Valkey server: valkey-server if the distribution has it, else redis-server 7.x
#   (same protocol and commands), installed without starting a system service;
# - nftables (pod network rules), iproute2 and util-linux (nsenter);
# - chromium, for the test that renders report.html headless.
set -euo pipefail
need=()
command -v valkey-server >/dev/null 2>&1 || command -v redis-server >/dev/null 2>&1 || need+=(server)
command -v nft >/dev/null 2>&1 || need+=(nftables)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
# Headless Chromium checks report.html in the tests (not needed to run campaigns).
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [[ ${#need[@]} -eq 0 ]]; then
  echo "setup: system packages present" >&2
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "setup: missing ${need[*]}; run as root (apt-get needs it): sudo make deps" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: missing ${need[*]} and no apt-get here: install valkey-server (or redis-server), nftables, iproute2, util-linux and chromium by hand" >&2
  exit 1
fi
echo "setup: apt-get update (once)..." >&2
apt-get update -qq
pkgs=()
for n in "${need[@]}"; do
  if [[ $n == server ]]; then
    if apt-cache show valkey-server >/dev/null 2>&1; then pkgs+=(valkey-server); else pkgs+=(redis-server); fi
  else
    pkgs+=("$n")
  fi
done
echo "setup: installing ${pkgs[*]}..." >&2
# Keep the packages' system services from starting: clusters run their own servers.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; created_policy=1
fi
trap '[[ $created_policy == 1 ]] && rm -f "$policy"' EXIT
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >&2
echo "setup: installed ${pkgs[*]}" >&2
