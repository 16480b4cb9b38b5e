#!/usr/bin/env bash
# Installs PostgreSQL 15 from Debian's packages (bookworm's postgresql-15), once: the operand
# the cloudnative-pg example target maps ghcr.io/cloudnative-pg/postgresql:15* to
# (/usr/lib/postgresql/15/bin). No cluster is created and no service started: CloudNativePG's
# instance manager runs initdb and postgres itself, inside the pods.
set -euo pipefail
bin=/usr/lib/postgresql/15/bin
if [[ -x $bin/postgres && -x $bin/initdb && -x $bin/pg_ctl && -x $bin/pg_controldata ]]; then
  echo "postgresql 15: present in $bin" >&2
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "postgresql 15: missing in $bin; run as root (apt-get needs it): sudo make cnpg" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "postgresql 15: missing in $bin and no apt-get here: install PostgreSQL 15 so that $bin holds postgres, initdb, pg_ctl, pg_controldata, pg_basebackup, pg_rewind" >&2
  exit 1
fi
echo "postgresql 15: apt-get update (once)..." >&2
apt-get update -qq
# No default cluster, no service: the packages' maintainer scripts would create and start one.
mkdir -p /etc/postgresql-common
conf=/etc/postgresql-common/createcluster.conf
if [[ ! -e $conf ]]; then
  echo "create_main_cluster = false" > "$conf"
fi
policy=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; created_policy=1
fi
trap '[[ $created_policy == 1 ]] && rm -f "$policy"' EXIT
echo "postgresql 15: installing postgresql-15..." >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >&2
echo "postgresql 15: installed ($("$bin/postgres" --version))" >&2
