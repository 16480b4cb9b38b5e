#!/bin/sh
# nsexec for Gauntlet's offline Chaos Mesh daemon image: chaos-daemon runs
#   nsexec [-l] [-m PATH] [-n PATH] [-p PATH] [-i PATH] -- COMMAND ARGS...
# to run COMMAND in the namespaces at PATH (/proc/PID/ns/...). Chaos Mesh's own nsexec (a
# Rust program its image downloads) cannot be had offline; util-linux's nsenter does the
# same for the faults Gauntlet injects. -l ("find COMMAND in the daemon's own file system")
# keeps the daemon's mount namespace: COMMAND then comes from this image.
set -eu
local=0 mnt="" rest=""
while [ $# -gt 0 ]; do
	case "$1" in
	-l) local=1; shift ;;
	-m) mnt="$2"; shift 2 ;;
	-n) rest="$rest --net=$2"; shift 2 ;;
	-p) rest="$rest --pid=$2"; shift 2 ;;
	-i) rest="$rest --ipc=$2"; shift 2 ;;
	--) shift; break ;;
	*) echo "nsexec: unknown option $1 (this stand-in knows -l -m -n -p -i)" >&2; exit 2 ;;
	esac
done
if [ -n "$mnt" ] && [ "$local" = 0 ]; then
	rest="$rest --mount=$mnt"
fi
# shellcheck disable=SC2086 # the options are words by construction
exec nsenter $rest -- "$@"
