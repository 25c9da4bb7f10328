#!/usr/bin/env bash
# Run memoryd's HTTP test suites with every memoryd process under valgrind memcheck.
#   scripts/valgrind.sh [BUILD_DIR] [--part K/N] [TEST_FILE...]
# Defaults: build/ (a plain build; scripts/build.sh) and every file of tests/integration and
# tests/robustness but the SIGKILL loop (3 minutes under valgrind; pass it by name to include it),
# the 1 GiB export (its memory bound is measured in the plain build)
# and the soak. Fails when a test fails or when valgrind reports anything for
# any memoryd process: an invalid access, use of uninitialised memory, or a definite/indirect
# leak (leaks are checked at a clean exit; killed processes still report invalid accesses).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
# --part K/N: the K-th of N shares of the default files (every N-th file from the K-th, in
# name order), so that ctest runs the pass as N tests, each with its own timeout, side by side.
part=""
if [[ ${1:-} == --part ]]; then
    part=$2
    shift 2
fi
files=("$@")
if ((${#files[@]} == 0)); then
    mapfile -t files < <(ls tests/integration/*.test.mjs tests/robustness/*.test.mjs | grep -vE '/(soak|sigkill|export-large)\.test\.mjs$')
    if [[ -n $part ]]; then
        k=${part%/*} n=${part#*/}
        [[ $k =~ ^[0-9]+$ && $n =~ ^[0-9]+$ && $k -ge 1 && $k -le $n ]] || { echo "valgrind: bad --part $part (K/N, 1 <= K <= N)" >&2; exit 2; }
        share=()
        for i in "${!files[@]}"; do
            if ((i % n == k - 1)); then share+=("${files[$i]}"); fi
        done
        files=("${share[@]}")
    fi
fi
command -v valgrind >/dev/null || { echo "valgrind: not installed (scripts/setup.sh --test)" >&2; exit 1; }

logs=$(mktemp -d /tmp/memoryd-valgrind.XXXXXX)
trap 'rm -rf "$logs"' EXIT
chmod 1777 "$logs" # some tests run memoryd as another user
[[ "$build" = /* ]] || build="$PWD/$build"
export MD_TEST_BIN="$build/memoryd"
export MD_TEST_WRAPPER="valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --log-file=$logs/vg.%p.log"
status=0
node --test "${files[@]}" || status=1

runs=$(ls "$logs" | wc -l)
bad=$(find "$logs" -type f -size +0)
if [[ -n "$bad" ]]; then
    for f in $bad; do
        echo "== valgrind report ($f)" >&2
        cat "$f" >&2
    done
    status=1
fi
echo "valgrind: $runs memoryd processes checked, $(echo -n "$bad" | grep -c . || true) with reports" >&2
exit $status
