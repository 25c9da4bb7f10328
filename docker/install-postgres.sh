#!/usr/bin/env bash
# The database server of compose.yaml's postgres profile on Debian 12: Debian's
# postgresql-15 (with Debian's security fixes; the major version the tests run), without the
# cluster ("main") Debian's package would make and start: docker/postgres-entrypoint.sh
# makes its own, in the data directory. Then the data directory /var/lib/postgresql/data
# (mode 0700) and the socket directory /run/postgresql, both the user postgres's (which the
# package creates). docker/postgres.Dockerfile runs it; so does
# tests/deploy/container.test.mjs, outside any container.
#
#   docker/install-postgres.sh [--clean-apt]
#
#   --clean-apt  remove apt's package lists and downloaded archives afterwards
#
# Run as root. Idempotent.
set -euo pipefail

clean_apt=0
for a in "$@"; do
  case "$a" in
    --clean-apt) clean_apt=1 ;;
    *) echo "install-postgres: unknown argument: $a" >&2; exit 2 ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "install-postgres: run as root" >&2; exit 1; }

if ! dpkg-query -W -f='${Status}' postgresql-15 2>/dev/null | grep -q "install ok installed"; then
  echo "install-postgres: installing postgresql-15" >&2
  mkdir -p /etc/postgresql-common/createcluster.d
  echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/memoryd.conf
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null
fi
if ((clean_apt)); then
  apt-get clean
  rm -rf /var/lib/apt/lists/*
fi
install -d -o postgres -g postgres -m 0700 /var/lib/postgresql/data
install -d -o postgres -g postgres -m 2775 /run/postgresql
