#!/usr/bin/env bash
# Installs what Gauntlet needs on a fresh Debian machine, once; prints what it does.
# - Valkey 8 (valkey-server, valkey-tools): from the distribution, or on Debian bookworm from
#   its bookworm-backports suite, which this script enables at apt's default low priority
#   for backports (100: nothing else is upgraded from it); redis-server 7.x only where no
#   Valkey package exists (same protocol and commands); no system service is started;
# - nftables (pod network rules), iproute2 and util-linux (nsenter);
# - chromium, for the test that renders report.html headless.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"
need=()
command -v valkey-server >/dev/null 2>&1 || need+=(server)
command -v nft >/dev/null 2>&1 || need+=(nftables)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
# Headless Chromium checks report.html in the tests (not needed to run campaigns).
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [[ ${#need[@]} -eq 0 ]]; then
  echo "setup: system packages present" >&2
  exit 0
fi
apt_can_install setup "${need[*]}" deps "install valkey-server (or redis-server), nftables, iproute2, util-linux and chromium by hand"
# bookworm ships Valkey only in bookworm-backports; enable that suite (backports keep
# apt's priority 100, so only packages asked for by name come from it).
codename="$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")"
backports=/etc/apt/sources.list.d/gauntlet-backports.sources
if [[ " ${need[*]} " == *" server "* && $codename == bookworm && ! -e $backports ]] &&
   ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  echo "setup: enabling bookworm-backports for valkey-server 8 ($backports)" >&2
  printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > "$backports"
fi
apt_update setup
pkgs=()
for n in "${need[@]}"; do
  if [[ $n == server ]]; then
    if apt-cache show valkey-server >/dev/null 2>&1; then
      pkgs+=(valkey-server valkey-tools)
    elif command -v redis-server >/dev/null 2>&1; then
      echo "setup: no valkey-server package here; keeping the installed redis-server as the fallback" >&2
    else
      echo "setup: no valkey-server package here; falling back to redis-server 7" >&2
      pkgs+=(redis-server)
    fi
  else
    pkgs+=("$n")
  fi
done
if [[ ${#pkgs[@]} -eq 0 ]]; then exit 0; fi
apt_install setup "${pkgs[@]}"
echo "setup: installed ${pkgs[*]}" >&2
