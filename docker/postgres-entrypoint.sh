#!/usr/bin/env bash
# The database server of compose.yaml's postgres profile (docker/postgres.Dockerfile), run as
# the user postgres. On the first start, with an empty data directory (PGDATA, the volume):
#   - initdb (UTF-8, locale C.UTF-8; memoryd's columns compare bytes whatever the locale);
#   - a role `memoryd` that may log in with the password MEMORYD_PG_PASSWORD (SCRAM), not a
#     superuser, and its database `memoryd`, where memoryd makes its own tables;
#   - pg_hba.conf: over the network only that role, only to that database, only with the
#     password; on the socket only the user postgres as the role postgres (for maintenance:
#     docker compose exec postgres psql);
# all of it on a server that listens on the socket only, so that the health check (TCP)
# passes only once it is done. Then, and on every later start, PostgreSQL itself, as the
# container's first process: SIGINT (STOPSIGNAL) is its fast shutdown.
#
# MEMORYD_PG_PASSWORD is read on the first start only: to change the password later, run
# ALTER ROLE memoryd PASSWORD '...' in psql, then change it where memoryd gets it.
set -euo pipefail

bin=/usr/lib/postgresql/15/bin
data=${PGDATA:?PGDATA is not set}
say() { echo "postgres-entrypoint: $*" >&2; }

if [[ ! -s "$data/PG_VERSION" ]]; then
  if [[ -z "${MEMORYD_PG_PASSWORD:-}" ]]; then
    say "MEMORYD_PG_PASSWORD is empty: the first start sets the password of the role memoryd from it (docker/README.md, the postgres profile)"
    exit 1
  fi
  say "first start: initdb in $data"
  "$bin/initdb" -D "$data" -U postgres --encoding=UTF8 --locale=C.UTF-8 \
    --auth-local=peer --auth-host=scram-sha-256 >/dev/null
  cat >"$data/pg_hba.conf" <<'HBA'
# docker/postgres-entrypoint.sh: the role memoryd with its password, from anywhere on the
# container's networks (compose.yaml: the internal network backend only), to its database;
# the user postgres on the socket. Nothing else.
# TYPE  DATABASE  USER      ADDRESS  METHOD
local   all       postgres           peer
host    memoryd   memoryd   all      scram-sha-256
HBA
  cat >>"$data/postgresql.conf" <<'CONF'

# docker/postgres-entrypoint.sh
listen_addresses = '*'
unix_socket_directories = '/run/postgresql'
password_encryption = 'scram-sha-256'
CONF
  "$bin/pg_ctl" -D "$data" -o "-c listen_addresses=''" -w -t 60 start >/dev/null
  "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h /run/postgresql -U postgres -d postgres <<'SQL'
\getenv password MEMORYD_PG_PASSWORD
CREATE ROLE memoryd LOGIN PASSWORD :'password';
CREATE DATABASE memoryd OWNER memoryd ENCODING 'UTF8';
SQL
  "$bin/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null
  say "the role memoryd and its database are made"
fi
unset MEMORYD_PG_PASSWORD
exec "$bin/postgres" -D "$data"
