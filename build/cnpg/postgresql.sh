#!/usr/bin/env bash
# Installs PostgreSQL 15 from Debian's packages (bookworm's postgresql-15), once: the operand
# the cloudnative-pg example target maps ghcr.io/cloudnative-pg/postgresql:15* to
# (/usr/lib/postgresql/15/bin). No cluster is created and no service started: CloudNativePG's
# instance manager runs initdb and postgres itself, inside the pods.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../hack/lib/apt.sh"
bin=/usr/lib/postgresql/15/bin
if apt_executables "$bin/postgres" "$bin/initdb" "$bin/pg_ctl" "$bin/pg_controldata"; then
  echo "postgresql 15: present in $bin" >&2
  exit 0
fi
apt_can_install "postgresql 15" "in $bin" cnpg "install PostgreSQL 15 so that $bin holds postgres, initdb, pg_ctl, pg_controldata, pg_basebackup, pg_rewind"
apt_update "postgresql 15"
# No default cluster, no service: the packages' maintainer scripts would create and start one.
mkdir -p /etc/postgresql-common
conf=/etc/postgresql-common/createcluster.conf
if [[ ! -e $conf ]]; then
  echo "create_main_cluster = false" > "$conf"
fi
apt_install "postgresql 15" postgresql-15
echo "postgresql 15: installed ($("$bin/postgres" --version))" >&2
