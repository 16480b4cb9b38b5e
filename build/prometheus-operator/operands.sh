#!/usr/bin/env bash
# Installs the Prometheus operator's operands from Debian's packages, once: bookworm's
# prometheus (2.42) and prometheus-alertmanager (0.25), the programs the prometheus-operator
# example target maps quay.io/prometheus/prometheus:* and quay.io/prometheus/alertmanager:* to.
# No service is started: the packages' own start is refused (a temporary policy-rc.d); the
# operator runs the servers itself, inside the pods.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../hack/lib/apt.sh"
progs=(/usr/bin/prometheus /usr/bin/prometheus-alertmanager)
if apt_executables "${progs[@]}"; then
  echo "prometheus operands: present ($(/usr/bin/prometheus --version 2>&1 | head -1 | awk '{print $3}'), alertmanager $(/usr/bin/prometheus-alertmanager --version 2>&1 | head -1 | awk '{print $3}'))" >&2
  exit 0
fi
apt_can_install "prometheus operands" "(${progs[*]})" prometheus-operator "install Prometheus 2.42 and Alertmanager 0.25 so that ${progs[*]} exist"
apt_update "prometheus operands"
apt_install "prometheus operands" prometheus prometheus-alertmanager
echo "prometheus operands: installed ($(/usr/bin/prometheus --version 2>&1 | head -1); $(/usr/bin/prometheus-alertmanager --version 2>&1 | head -1))" >&2
