#!/usr/bin/env bash
# The kind lane's container engine, installed and started once; prints what it does.
# - Debian's Docker engine (docker.io 20.10: dockerd, containerd, runc, and iptables), installed
#   with the packages' own service start prevented (no init system runs services here);
# - two host firewall rules, added before dockerd first starts: Docker sets the iptables FORWARD
#   policy to DROP, and with bridge-nf-call-iptables=1 that policy also judges frames bridged
#   between the embedded cluster's pods (bridges "gt<hash>", cluster/local/internal/podnet).
#   The rules accept only frames bridged between two ports of one such bridge:
#     iptables  -I FORWARD -i gt+ -o gt+ -m physdev --physdev-is-bridged -j ACCEPT
#     ip6tables (the same; a no-op unless Docker is configured to manage ip6tables)
# - dockerd, started in the background when no daemon answers and no init system can start it,
#   logging to $GAUNTLET_CACHE_DIR/docker/dockerd.log;
# - where this host's capability bounding set lacks a capability the kernel knows (here
#   CAP_SYS_RESOURCE), privileged containers (kind's nodes) fail in runc: dockerd then runs
#   them through hack/runccaps, which keeps a container's capabilities inside that set.
# Nothing is pulled from any registry. Idempotent: a second run checks and exits.
set -euo pipefail
cache="${GAUNTLET_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gauntlet}"
logdir="$cache/docker"
log="$logdir/dockerd.log"
timeout="${KIND_DEPS_DOCKER_TIMEOUT:-60}"
comment="gauntlet: embedded cluster pod bridges (gt*)"
rule=(FORWARD -i gt+ -o gt+ -m physdev --physdev-is-bridged -m comment --comment "$comment" -j ACCEPT)

here="$(cd "$(dirname "$0")/.." && pwd)"
runccaps="$logdir/runccaps"

source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"
say() { echo "kind-deps: $*" >&2; }
die() { say "$*"; exit 1; }

if [[ $(id -u) -ne 0 ]]; then
  die "run as root (apt-get, iptables and dockerd need it): sudo make kind-deps"
fi

# 1. Packages. Installed at most once; a present engine is never reinstalled.
need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
if [[ ${#need[@]} -gt 0 ]]; then
  command -v apt-get >/dev/null 2>&1 ||
    die "missing ${need[*]} and no apt-get here: install Docker (dockerd, containerd, runc) and iptables by hand"
  if ! apt-cache show docker.io >/dev/null 2>&1; then
    apt_update kind-deps
  fi
  # The packages' maintainer scripts would start dockerd and containerd: apt_install
  # refuses that, so the firewall rules go in first (Debian's Docker engine).
  apt_install kind-deps "${need[@]}"
  say "installed ${need[*]}"
else
  say "docker engine and iptables present"
fi

# 2. Firewall. Docker drives the "iptables" binary on PATH; so do we, so both land in the same
# back end (nf_tables with Debian's default alternative, the legacy tables otherwise).
backend="$(iptables -V 2>/dev/null)"
case "$backend" in
  *nf_tables*) say "iptables back end: nf_tables ($backend), the one dockerd will use" ;;
  *legacy*)    say "iptables back end: legacy ($backend), the one dockerd will use" ;;
  *)           die "cannot tell iptables' back end from 'iptables -V' ($backend)" ;;
esac
add_rule() { # $1: iptables or ip6tables
  local ipt=$1
  command -v "$ipt" >/dev/null 2>&1 || return 0
  if "$ipt" -C "${rule[@]}" 2>/dev/null; then
    say "$ipt: the FORWARD rule for the embedded cluster's bridges is in place"
  else
    "$ipt" -I "${rule[@]}"
    say "$ipt: added '-I ${rule[*]}'"
  fi
}
add_rule iptables
add_rule ip6tables

# 3. Capabilities. Docker 20.10 gives a privileged container every capability the kernel knows;
# runc cannot grant one outside its bounding set ("unable to apply caps: operation not permitted").
last_cap="$(cat /proc/sys/kernel/cap_last_cap)"
bnd="$(awk '/^CapBnd:/{print $2}' /proc/self/status)"
dockerd_args=()
if (( (0x$bnd & ((1 << (last_cap + 1)) - 1)) != ((1 << (last_cap + 1)) - 1) )); then
  mkdir -p "$logdir"
  if [[ ! -x $runccaps || $here/hack/runccaps/main.go -nt $runccaps ]]; then
    say "the bounding set ($bnd) lacks capabilities the kernel knows (up to $last_cap): building hack/runccaps for privileged containers..."
    (cd "$here" && CGO_ENABLED=0 "${GO:-go}" build -trimpath -o "$runccaps" ./hack/runccaps)
  fi
  say "privileged containers run through $runccaps (capabilities kept inside the bounding set $bnd)"
  dockerd_args=(--add-runtime "runccaps=$runccaps" --default-runtime runccaps)
fi

# 4. The daemon.
docker_answers() { timeout 10 docker info >/dev/null 2>&1; }
start_dockerd() {
  mkdir -p "$logdir"
  say "starting dockerd ${dockerd_args[*]} in the background (no init system here; log: $log)..."
  # setsid: the daemon outlives this script and the make that ran it.
  setsid dockerd "${dockerd_args[@]}" >>"$log" 2>&1 < /dev/null &
  say "dockerd started (pid $!)"
}
if docker_answers; then
  say "dockerd already running"
  runtime="$(docker info --format '{{.DefaultRuntime}}' 2>/dev/null)"
  if [[ ${#dockerd_args[@]} -gt 0 && $runtime != runccaps ]]; then
    pid="$(cat /var/run/docker.pid 2>/dev/null || true)"
    # Restart it only if it is the one this script starts (a bare "dockerd", logging here).
    if [[ -n $pid && "$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)" == "dockerd " && -e $log ]] &&
       [[ -z "$(docker ps -q 2>/dev/null)" ]]; then
      say "restarting dockerd (pid $pid, no container running) so that privileged containers work..."
      kill -TERM "$pid"
      for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -0 "$pid" 2>/dev/null && die "dockerd (pid $pid) did not stop within 30 s; see $log"
      start_dockerd
    else
      say "warning: dockerd's default runtime is '$runtime': privileged containers (kind's nodes) will fail here;" \
          "start dockerd with ${dockerd_args[*]} (or the same in /etc/docker/daemon.json: runtimes, default-runtime)"
    fi
  fi
elif [[ "$(ps -p 1 -o comm= 2>/dev/null)" == systemd ]]; then
  say "starting docker.service (systemd)..."
  if [[ ${#dockerd_args[@]} -gt 0 ]]; then
    say "warning: privileged containers (kind's nodes) need dockerd ${dockerd_args[*]} here (or the same in /etc/docker/daemon.json)"
  fi
  systemctl start docker.service
else
  pidfile=/var/run/docker.pid
  if [[ -s $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    say "dockerd (pid $(cat "$pidfile")) is running but not answering yet; waiting"
  else
    start_dockerd
  fi
fi
waited=0
until docker_answers; do
  if [[ $waited -ge $timeout ]]; then
    die "dockerd did not answer 'docker info' within ${timeout}s; see $log (last lines: $(tail -n 5 "$log" 2>/dev/null | tr '\n' ' '))"
  fi
  sleep 1; waited=$((waited+1))
done
say "docker $(docker version --format '{{.Server.Version}}' 2>/dev/null) answers (server, default runtime $(docker info --format '{{.DefaultRuntime}}' 2>/dev/null); client $(docker version --format '{{.Client.Version}}' 2>/dev/null) at $(command -v docker))"

# 5. Docker inserted its own chains at the top of FORWARD: check that ours is still there and
# that nothing above it stops a frame of a gt bridge before it is reached.
for ipt in iptables ip6tables; do
  command -v "$ipt" >/dev/null 2>&1 || continue
  "$ipt" -C "${rule[@]}" 2>/dev/null ||
    die "$ipt: the FORWARD rule for the embedded cluster's bridges is gone after dockerd started (see '$ipt -S FORWARD')"
  while IFS= read -r line; do
    [[ $line == *"$comment"* ]] && break
    case "$line" in
      "-P FORWARD "*) ;;
      "-A FORWARD -j DOCKER-USER"|"-A FORWARD -j DOCKER-ISOLATION-STAGE-1") ;; # return for other bridges
      *"-o docker0 "*|*"-i docker0 "*|*"-o br-"*|*"-i br-"*) ;; # Docker's own bridges only
      *) die "$ipt: '$line' comes before the rule for the embedded cluster's bridges and may stop their frames" ;;
    esac
  done < <("$ipt" -S FORWARD)
  if "$ipt" -S DOCKER-USER >/dev/null 2>&1 &&
     "$ipt" -S DOCKER-USER | grep -v -e '^-N DOCKER-USER$' -e '^-A DOCKER-USER -j RETURN$' | grep -q .; then
    say "$ipt: note: DOCKER-USER has rules of its own, which run before the embedded cluster's rule"
  fi
done
say "FORWARD (iptables -S FORWARD):"
iptables -S FORWARD | sed 's/^/  /' >&2
say "ready: docker answers and the embedded cluster's bridges keep forwarding"
