#!/usr/bin/env bash
# The benchmark's smoke for ctest: bench/run.mjs --quick, then bench/pg.mjs --quick (PostgreSQL:
# a cluster of its own, pgbench, memoryd on it; the round trips per command are asserted, timings
# are not), against the build in $1 (default build/). Needs wrk, the sqlite3 CLI and PostgreSQL 15
# (scripts/setup.sh --test installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
(cd bench/peer && npm ci --no-audit --no-fund --loglevel=error)
node bench/run.mjs --quick --build "$build"
# What history costs (bench/history.mjs), briefly.
node bench/history.mjs --quick --build "$build"
# What full-text search costs (bench/search.mjs), briefly.
node bench/search.mjs --quick --build "$build"
echo
exec node bench/pg.mjs --quick --build "$build"
