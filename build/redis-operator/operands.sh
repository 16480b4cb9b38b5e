#!/usr/bin/env bash
# Installs the Spotahome Redis operator's operand from Debian's packages, once: bookworm's
# redis-server and redis-tools (7.0), the programs the redis-operator example target maps
# redis:* to (redis-server runs both the Redis pods and, with --sentinel, the Sentinel pods;
# redis-cli is what the operator's probes and pod scripts call). No service is started: the
# package's own start is refused (a temporary policy-rc.d); the operator runs the servers
# itself, inside the pods.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../hack/lib/apt.sh"
progs=(/usr/bin/redis-server /usr/bin/redis-cli)
if apt_executables "${progs[@]}"; then
  echo "redis operands: present ($(/usr/bin/redis-server --version | awk '{print $3}'))" >&2
  exit 0
fi
apt_can_install "redis operands" "(${progs[*]})" redis-operator "install Redis 7.0 so that ${progs[*]} exist"
apt_update "redis operands"
apt_install "redis operands" redis-server redis-tools
echo "redis operands: installed ($(/usr/bin/redis-server --version))" >&2
