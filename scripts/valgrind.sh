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
# --part K/N: the K-th of N shares of the default files, so that ctest runs the pass as N tests,
# each with its own timeout, side by side. The shares are balanced by what each file costs under
# valgrind (COST below: seconds, measured alone with this script on a 2-core machine; a file not
# listed counts DEFAULT_COST): the files from the costliest down (then in name order), each to
# the share with the least cost so far (the first such share). Every-N-th file in name order
# made one share take three times another's time.
DEFAULT_COST=15
declare -A COST=(
    [tests/integration/backup.test.mjs]=24
    [tests/integration/changes.test.mjs]=17
    [tests/integration/concurrency.test.mjs]=12
    [tests/integration/contract.test.mjs]=8
    [tests/integration/export.test.mjs]=21
    [tests/integration/forms.test.mjs]=3
    [tests/integration/history.test.mjs]=18
    [tests/integration/idempotency.test.mjs]=10
    [tests/integration/keys.test.mjs]=23
    [tests/integration/limits.test.mjs]=14
    [tests/integration/mcp.test.mjs]=19
    [tests/integration/metrics.test.mjs]=22
    [tests/integration/ops.test.mjs]=19
    [tests/integration/preconditions.test.mjs]=8
    [tests/integration/quickstart.test.mjs]=4
    [tests/integration/quota.test.mjs]=18
    [tests/integration/readme.test.mjs]=9
    [tests/integration/redaction.test.mjs]=3
    [tests/integration/search.test.mjs]=15
    [tests/integration/shutdown.test.mjs]=11
    [tests/integration/tenancy.test.mjs]=20
    [tests/integration/tenants-admin.test.mjs]=13
    [tests/robustness/fairness.test.mjs]=20
    [tests/robustness/hostile.test.mjs]=18
    [tests/robustness/isolation.test.mjs]=9
    [tests/robustness/storage-faults.test.mjs]=28
)
part=""
if [[ ${1:-} == --part ]]; then
    part=$2
    shift 2
fi
files=("$@")
if ((${#files[@]} == 0)); then
    for f in tests/integration/*.test.mjs tests/robustness/*.test.mjs; do
        [[ $f =~ /(soak|sigkill|export-large)\.test\.mjs$ ]] || files+=("$f")
    done
    if [[ -n $part ]]; then
        k=${part%/*} n=${part#*/}
        [[ $k =~ ^[0-9]+$ && $n =~ ^[0-9]+$ && $k -ge 1 && $k -le $n ]] || { echo "valgrind: bad --part $part (K/N, 1 <= K <= N)" >&2; exit 2; }
        load=()
        for ((i = 0; i < n; i++)); do load[i]=0; done
        share=()
        while read -r c f; do
            least=0
            for ((i = 1; i < n; i++)); do ((load[i] < load[least])) && least=$i; done
            load[least]=$((load[least] + c))
            ((least == k - 1)) && share+=("$f")
        done < <(for f in "${files[@]}"; do echo "${COST[$f]:-$DEFAULT_COST} $f"; done | LC_ALL=C sort -k1,1nr -k2,2)
        files=("${share[@]}")
        echo "valgrind: share $part: ${files[*]} (cost ${load[k - 1]} s)" >&2
    fi
fi
command -v valgrind >/dev/null || { echo "valgrind: not installed (scripts/setup.sh --test)" >&2; exit 1; }

logs=$(mktemp -d /tmp/memoryd-valgrind.XXXXXX)
template=$(mktemp -d /tmp/memoryd-valgrind-db.XXXXXX)
trap 'rm -rf "$logs" "$template"' EXIT
chmod 1777 "$logs" # some tests run memoryd as another user
[[ "$build" = /* ]] || build="$PWD/$build"
export MD_TEST_BIN="$build/memoryd"
# A database as memoryd makes a fresh one, made once without valgrind (`memoryd keys list` on a
# new file writes the same bytes as a server's first start: every migration, no row). A server
# that a test starts without a database of its own starts on a copy (tests/lib/server.mjs), so
# that valgrind does not run the same migrations again for each of over a hundred servers (a
# quarter of a second apiece under it: a start took 1.55 s, now 1.32 s); it still checks them
# wherever a test starts memoryd on a new file of its own (quickstart's bare starts, backup's
# databases; the quota test of migration 003 runs 3 to 5 again).
"$MD_TEST_BIN" keys list --db "$template/memoryd.db" >/dev/null 2>&1 ||
    { echo "valgrind: $MD_TEST_BIN keys list could not make a database" >&2; exit 1; }
export MD_TEST_TEMPLATE_DB="$template/memoryd.db"
export MD_TEST_WRAPPER="valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --log-file=$logs/vg.%p.log"
status=0
node --test "${files[@]}" || status=1

runs=$(find "$logs" -type f | wc -l)
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
