#!/usr/bin/env bash
# The TypeScript client's tests, against the oldest and the newest @anthropic-ai/sdk of its
# peer range (>=1.10 <2) that the npm registry serves, each pinned here:
#
#   SDK 1.10.0 (the oldest, = devDependencies, installed by npm ci from package-lock.json),
#   then SDK_NEWEST (npm install --no-save over it), each time: compile src/ with tsc,
#   type-check test/types/consumer.ts and the ```ts blocks of this package's README.md and of
#   the repository's README.md (scripts/typecheck-readme.mjs), and run test/*.test.mjs against
#   the compiled dist/ (pack.test.mjs installs the `npm pack` tarball with that same SDK
#   version into a fresh project).
#
#   MD_TEST_BIN=/path/to/memoryd clients/typescript/scripts/test.sh
#
# MD_TEST_BIN is the memoryd binary the end-to-end tests start (default: build/memoryd at the
# top of the repository). With MD_TEST_PG (ctest's pg/clients/typescript), each memoryd runs
# on a fresh database of that PostgreSQL cluster (tests/lib/server.mjs), and the suite runs
# once, with the oldest SDK and without the pack test: what the engine changes is memoryd's
# storage, not the package. Needs Node.js >= 18 and npm, with access to the npm registry.
#
# SDK_NEWEST: the newest 1.x that `npm view @anthropic-ai/sdk versions --json` listed when it
# was last updated; raise it (an exact version) when a newer 1.x is out (the script says so
# when the registry serves one).
set -euo pipefail

SDK_OLDEST=1.10.0
SDK_NEWEST=1.17.0

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$here"

export MD_TEST_BIN="${MD_TEST_BIN:-$repo/build/memoryd}"
if [ ! -x "$MD_TEST_BIN" ]; then
  echo "test.sh: no memoryd binary at $MD_TEST_BIN; build one and set MD_TEST_BIN" >&2
  exit 2
fi

installed_sdk() { node -p 'require("./node_modules/@anthropic-ai/sdk/package.json").version'; }

# One pass: build, the type checks, the tests (the files given).
suite() {
  local sdk="$1"
  shift
  if [ "$(installed_sdk)" != "$sdk" ]; then
    echo "test.sh: expected @anthropic-ai/sdk $sdk in node_modules, found $(installed_sdk)" >&2
    exit 1
  fi
  echo "== @anthropic-ai/sdk $sdk"
  rm -rf dist
  npm run --silent build
  npm run --silent typecheck:consumer
  npm run --silent typecheck:readme
  node --test "$@"
}

npm ci --no-audit --no-fund
if [ -n "${MD_TEST_PG:-}" ]; then
  files=()
  for f in test/*.test.mjs; do [ "$f" = test/pack.test.mjs ] || files+=("$f"); done
  suite "$SDK_OLDEST" "${files[@]}"
  exit 0
fi
suite "$SDK_OLDEST" test/*.test.mjs
# A note (not a failure) when the registry serves a newer 1.x than the one pinned.
served="$(npm view '@anthropic-ai/sdk@>=1.10 <2' version --json 2>/dev/null |
  node -e 'const v = JSON.parse(require("fs").readFileSync(0, "utf8")); console.log([].concat(v).pop() ?? "")' 2>/dev/null || true)"
if [ -n "$served" ] && [ "$served" != "$SDK_NEWEST" ]; then
  echo "test.sh: note: the npm registry serves @anthropic-ai/sdk $served, newer than SDK_NEWEST=$SDK_NEWEST: raise SDK_NEWEST" >&2
fi
if [ "$SDK_NEWEST" != "$SDK_OLDEST" ]; then
  npm install --no-save --no-audit --no-fund "@anthropic-ai/sdk@$SDK_NEWEST"
  suite "$SDK_NEWEST" test/*.test.mjs
fi
