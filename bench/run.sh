#!/usr/bin/env bash
# memoryd's benchmark, one command: install what it needs (wrk, Node.js, the sqlite3 CLI,
# PostgreSQL 15 with pgbench), build memoryd and the two reference programs (bench/ceiling.c,
# bench/floor.c), install the pinned SDK for the Node peer (bench/peer), then run bench/run.mjs,
# which prints one table and the targets of the benchmark issue with PASS/FAIL.
#   bench/run.sh                     the full run (5 s per figure, 1/16/64 connections, reads and
#                                    creates the median of 3 runs, about 20 min)
#   bench/run.sh --seconds 10        longer runs
#   bench/run.sh --quick             the smoke (1 s per figure, 1/16 connections, small scale set)
#   bench/run.sh --json out.json     also write every figure as JSON
#   bench/run.sh --postgres [...]    the PostgreSQL run instead (bench/pg.mjs: a cluster of its
#                                    own, memoryd beside pgbench, round trips per command, the
#                                    scale figures; about 10 min; the same options, and --stats)
# Exits nonzero when memoryd failed requests (it does not fail on a missed timing target: those
# are read off the table, not asserted), and on PostgreSQL when a command exceeds its round trips.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --bench
scripts/build.sh
if [[ "${1:-}" == "--postgres" ]]; then
  shift
  exec node bench/pg.mjs "$@"
fi
(cd bench/peer && npm ci --no-audit --no-fund --loglevel=error)
exec node bench/run.mjs "$@"
