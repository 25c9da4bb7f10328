#!/usr/bin/env bash
# Quick start: install dependencies, build, and run memoryd in the
# foreground on 127.0.0.1:8080 with ./memoryd.db (SQLite) as its store.
# Extra arguments go to memoryd (see build/memoryd --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/memoryd "$@"
