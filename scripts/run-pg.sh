#!/usr/bin/env bash
# Quick start on PostgreSQL: install dependencies (scripts/setup.sh, and PostgreSQL 15),
# build, start a PostgreSQL of its own in ./memoryd-pg/ of the checkout, and run memoryd in
# the foreground on 127.0.0.1:8080 with that database. Extra arguments go to memoryd (see
# build/memoryd --help), as with scripts/run.sh:
#
#   scripts/run-pg.sh [--port 9000 ...]
#
# The first run makes the cluster (initdb: data in memoryd-pg/data, log in
# memoryd-pg/server.log) with a database `memoryd` owned by a role `memoryd` that is not a
# superuser; later runs reuse it, and start it again if it was stopped. It listens on a
# Unix socket in memoryd-pg/ only, no TCP, and trusts local connections: the directory is
# private (mode 0700) to the cluster's owner — you, or, when run as root, the user
# `postgres` (PostgreSQL refuses to run as root). memoryd connects with
#   --db 'postgresql:///memoryd?host=<absolute path of memoryd-pg>&user=memoryd'
# The cluster keeps running after memoryd exits. Stop it with
#   /usr/lib/postgresql/15/bin/pg_ctl -D memoryd-pg/data stop
# (as root: runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D memoryd-pg/data stop),
# and delete memoryd-pg/ to start from nothing. Tested by tests/deploy/run-pg.test.mjs.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "run-pg: $*" >&2; }
die() {
  say "$*"
  exit 1
}

scripts/setup.sh
# PostgreSQL 15, as scripts/setup.sh --test installs it: without the cluster ("main") that
# Debian's package would make and start, which nothing here uses.
if ! dpkg-query -W -f='${Status}' postgresql-15 2>/dev/null | grep -q "install ok installed"; then
  say "installing postgresql-15"
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  if [[ ! -e /etc/postgresql-common/createcluster.d/memoryd.conf ]]; then
    $SUDO mkdir -p /etc/postgresql-common/createcluster.d
    echo "create_main_cluster = false" | $SUDO tee /etc/postgresql-common/createcluster.d/memoryd.conf >/dev/null
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null
fi
scripts/build.sh

bin=/usr/lib/postgresql/15/bin
dir="$PWD/memoryd-pg"
# PostgreSQL's socket path (<dir>/.s.PGSQL.5432) must fit in 107 bytes, and the directory
# goes to the server inside single quotes.
(($(printf '%s' "$dir" | wc -c) <= 90)) || die "the path $dir is too long for a Unix socket in it (90 characters at most)"
[[ "$dir" != *"'"* ]] || die "the path $dir contains a single quote"

# Run a command as the cluster's owner.
owner=$(id -un)
as_owner() { "$@"; }
run_as=""
if [[ $(id -u) -eq 0 ]]; then
  owner=postgres
  as_owner() { runuser -u postgres -- "$@"; }
  run_as="runuser -u postgres -- "
fi

if [[ ! -e "$dir/data/PG_VERSION" ]]; then
  say "making a PostgreSQL cluster in $dir (owner: $owner)"
  install -d -m 0700 "$dir"
  [[ $owner == "$(id -un)" ]] || chown "$owner:" "$dir"
  as_owner test -w "$dir" ||
    die "the user $owner cannot write to $dir: every directory above it must be searchable by others (chmod o+x)"
  as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" ||
    die "initdb failed: see $dir/initdb.log"
  {
    echo "# scripts/run-pg.sh: a Unix socket only (its directory is given at start: -k)"
    echo "listen_addresses = ''"
    echo "unix_socket_permissions = 0700"
  } | as_owner tee -a "$dir/data/postgresql.conf" >/dev/null
fi

status=0
as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null || status=$?
if ((status == 3)); then
  say "starting PostgreSQL (log: $dir/server.log)"
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "-k '$dir'" -w -t 60 start >/dev/null ||
    die "PostgreSQL did not start; the end of $dir/server.log:
$(tail -n 20 "$dir/server.log")"
elif ((status != 0)); then
  die "pg_ctl status says $status for $dir/data"
fi

sql() { "$bin/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$dir" -U postgres -d postgres -c "$1"; }
if [[ -z "$(sql "SELECT 1 FROM pg_roles WHERE rolname = 'memoryd'")" ]]; then
  sql "CREATE ROLE memoryd LOGIN"
fi
if [[ -z "$(sql "SELECT 1 FROM pg_database WHERE datname = 'memoryd'")" ]]; then
  say "creating the database memoryd"
  sql "CREATE DATABASE memoryd OWNER memoryd ENCODING 'UTF8'"
fi

# The socket directory in the URI, percent-encoded byte by byte (a space, '&', '#', '?'...).
urlencode() {
  local LC_ALL=C s=$1 out="" c i
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    case "$c" in
      [A-Za-z0-9/._~-]) out+=$c ;;
      *) out+=$(printf '%%%02X' "'$c") ;;
    esac
  done
  printf '%s' "$out"
}
host=$(urlencode "$dir")
say "PostgreSQL runs in $dir; stop it with: $run_as$bin/pg_ctl -D $dir/data stop"
exec build/memoryd --db "postgresql:///memoryd?host=$host&user=memoryd" "$@"
