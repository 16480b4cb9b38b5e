#!/bin/bash
# ExecStartPre of kubelet.service: the cgroups the kubelet is rooted in (cgroupRoot /kubelet, and
# /kubelet.slice under the systemd driver). On cgroup v1 the entrypoint made them; on cgroup v2
# they are made here, once systemd has moved every process out of the root cgroup, with every
# controller of the root enabled for their children (the kubelet checks for all of them).
set -o errexit -o nounset -o pipefail
cg=/sys/fs/cgroup
if [[ ! -f $cg/cgroup.controllers ]]; then
  mkdir -p $cg/systemd/kubelet $cg/systemd/kubelet.slice
  exit 0
fi
enable() { sed -e 's/^/+/' -e 's/ / +/g' "$1/cgroup.controllers" > "$1/cgroup.subtree_control"; }
enable $cg
for group in kubelet kubelet.slice; do
  mkdir -p "$cg/$group"
  enable "$cg/$group"
done
