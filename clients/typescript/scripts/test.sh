#!/usr/bin/env bash
# Install the pinned dependencies (npm ci), compile src/ with tsc, type-check
# test/types/consumer.ts and the ```ts blocks of this package's README.md and of the
# repository's README.md (scripts/typecheck-readme.mjs), and run test/*.test.mjs against
# the compiled dist/.
#
#   MD_TEST_BIN=/path/to/memoryd clients/typescript/scripts/test.sh
#
# MD_TEST_BIN is the memoryd binary the end-to-end tests start (default:
# build/memoryd at the top of the repository). Needs Node.js >= 18 and npm,
# with access to the npm registry.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$here"

export MD_TEST_BIN="${MD_TEST_BIN:-$repo/build/memoryd}"
if [ ! -x "$MD_TEST_BIN" ]; then
  echo "test.sh: no memoryd binary at $MD_TEST_BIN; build one and set MD_TEST_BIN" >&2
  exit 2
fi

npm ci --no-audit --no-fund
rm -rf dist
npm test   # tsc build, compile-only checks of the public types and the README snippets, node --test test/*.test.mjs
