# Debian package installs shared by hack/setup.sh, hack/kind-deps.sh and the
# build/<operator> operand scripts; source it (bash, set -euo pipefail). Each
# function takes first the name the caller prints its messages under.

# apt_executables PATH...: true when every PATH is an executable file.
apt_executables() {
  local p
  for p in "$@"; do [[ -x $p ]] || return 1; done
}

# apt_can_install WHO WHAT TARGET HINT: exits, saying why, unless this is root
# on a machine with apt-get. WHAT says what is missing, TARGET is the make
# target to run as root, HINT what to install by hand without apt-get.
apt_can_install() {
  local who=$1 what=$2 target=$3 hint=$4
  if [[ $(id -u) -ne 0 ]]; then
    echo "$who: missing $what; run as root (apt-get needs it): sudo make $target" >&2
    exit 1
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$who: missing $what and no apt-get here: $hint" >&2
    exit 1
  fi
}

# apt_update WHO: refreshes the package lists.
apt_update() {
  echo "$1: apt-get update (once)..." >&2
  apt-get update -qq
}

# apt_install WHO PACKAGE...: installs the packages without starting their
# services (the clusters run their own servers): a temporary policy-rc.d,
# kept if one already exists, refuses every start while they install.
apt_install() {
  local who=$1
  shift
  _apt_policy=/usr/sbin/policy-rc.d
  _apt_created=0
  if [[ ! -e $_apt_policy ]]; then
    printf '#!/bin/sh\nexit 101\n' > "$_apt_policy"; chmod +x "$_apt_policy"; _apt_created=1
  fi
  trap '[[ $_apt_created == 1 ]] && rm -f "$_apt_policy"' EXIT
  echo "$who: installing $*..." >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
  if [[ $_apt_created == 1 ]]; then rm -f "$_apt_policy"; _apt_created=0; fi
  trap - EXIT
}
