#!/usr/bin/env bash
# Installs the Spotahome Redis operator's operand from Debian's packages, once: bookworm's
# redis-server and redis-tools (7.0), the programs the redis-operator example target maps
# redis:* to (redis-server runs both the Redis pods and, with --sentinel, the Sentinel pods;
# redis-cli is what the operator's probes and pod scripts call). No service is started: the
# package's own start is refused (a temporary policy-rc.d); the operator runs the servers
# itself, inside the pods.
set -euo pipefail
progs=(/usr/bin/redis-server /usr/bin/redis-cli)
missing=0
for p in "${progs[@]}"; do [[ -x $p ]] || missing=1; done
if [[ $missing == 0 ]]; then
  echo "redis operands: present ($(/usr/bin/redis-server --version | awk '{print $3}'))" >&2
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "redis operands: missing (${progs[*]}); run as root (apt-get needs it): sudo make redis-operator" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "redis operands: missing and no apt-get here: install Redis 7.0 so that ${progs[*]} exist" >&2
  exit 1
fi
policy=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; created_policy=1
fi
trap '[[ $created_policy == 1 ]] && rm -f "$policy"' EXIT
echo "redis operands: apt-get update (once)..." >&2
apt-get update -qq
echo "redis operands: installing redis-server and redis-tools..." >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server redis-tools >&2
echo "redis operands: installed ($(/usr/bin/redis-server --version))" >&2
