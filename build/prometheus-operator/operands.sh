#!/usr/bin/env bash
# Installs the Prometheus operator's operands from Debian's packages, once: bookworm's
# prometheus (2.42) and prometheus-alertmanager (0.25), the programs the prometheus-operator
# example target maps quay.io/prometheus/prometheus:* and quay.io/prometheus/alertmanager:* to.
# No service is started: the packages' own start is refused (a temporary policy-rc.d); the
# operator runs the servers itself, inside the pods.
set -euo pipefail
progs=(/usr/bin/prometheus /usr/bin/prometheus-alertmanager)
missing=0
for p in "${progs[@]}"; do [[ -x $p ]] || missing=1; done
if [[ $missing == 0 ]]; then
  echo "prometheus operands: present ($(/usr/bin/prometheus --version 2>&1 | head -1 | awk '{print $3}'), alertmanager $(/usr/bin/prometheus-alertmanager --version 2>&1 | head -1 | awk '{print $3}'))" >&2
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "prometheus operands: missing (${progs[*]}); run as root (apt-get needs it): sudo make prometheus-operator" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "prometheus operands: missing and no apt-get here: install Prometheus 2.42 and Alertmanager 0.25 so that ${progs[*]} exist" >&2
  exit 1
fi
policy=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; created_policy=1
fi
trap '[[ $created_policy == 1 ]] && rm -f "$policy"' EXIT
echo "prometheus operands: apt-get update (once)..." >&2
apt-get update -qq
echo "prometheus operands: installing prometheus and prometheus-alertmanager..." >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus prometheus-alertmanager >&2
echo "prometheus operands: installed ($(/usr/bin/prometheus --version 2>&1 | head -1); $(/usr/bin/prometheus-alertmanager --version 2>&1 | head -1))" >&2
