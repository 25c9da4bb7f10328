#!/usr/bin/env bash
# The benchmark's smoke for ctest: bench/run.mjs --quick against the build in $1 (default
# build/). Needs wrk and the sqlite3 CLI (scripts/setup.sh --test installs both).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
(cd bench/peer && npm ci --no-audit --no-fund --loglevel=error)
node bench/run.mjs --quick --build "$build"
# What history costs (bench/history.mjs), briefly.
node bench/history.mjs --quick --build "$build"
