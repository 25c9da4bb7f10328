#!/usr/bin/env bash
# Static checks of memoryd's C code; each exits non-zero on any finding.
#   scripts/lint.sh format [BUILD_DIR]    clang-format --dry-run on every C file
#   scripts/lint.sh cppcheck [BUILD_DIR]  cppcheck (warning, style, performance, portability)
#   scripts/lint.sh tidy [BUILD_DIR]      clang-tidy with .clang-tidy (needs BUILD_DIR's
#                                         compile_commands.json; default build/)
#   scripts/lint.sh [all] [BUILD_DIR]     all three
#   scripts/lint.sh files                 the C files the format check covers (for tests)
# ctest runs each as lint/<name> in the plain build.
#
# cppcheck and clang-tidy check memoryd's sources (src/, include/) and the test and benchmark
# programs: tests/unit/*.c, tests/fuzz/*.c, bench/*.c and the headers they include
# (src/cmd/internal.h, tests/unit/check.h, tests/fuzz/fuzz_common.h). clang-tidy takes each
# file's compile command from BUILD_DIR: the plain build has memoryd, the unit tests and the
# benchmark programs. The libFuzzer targets exist only in a clang -DMEMORYD_FUZZ=ON build
# (tests/fuzz/CMakeLists.txt), which in turn has no bench/ and instruments memoryd_core; their
# code is ordinary C11 that needs nothing of libFuzzer to compile (LLVMFuzzerTestOneInput is a
# plain function), so when BUILD_DIR has no entry for them they get the unit tests' flags,
# spelled out in fuzz_flags below. Any other file missing from BUILD_DIR is an error.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
build=${2:-build}

# The file lists come from the tree itself (find), not from git: the checks run the same in a
# git checkout, an exported tarball or a copy, and a failure to list is an error (each list
# is read into an array first, so that the lister's exit status is seen).
source_files() { # DIRS... -- NAME-PATTERNS...
    local dirs=() names=()
    while (($#)) && [[ $1 != -- ]]; do dirs+=("$1"); shift; done
    shift
    for n in "$@"; do names+=(-o -name "$n"); done
    find "${dirs[@]}" -name node_modules -prune -o -type f \( "${names[@]:1}" \) -print | LC_ALL=C sort
}
c_files() { source_files src include tests bench -- '*.c' '*.h'; }

run_format() {
    local files
    files=$(c_files)
    [[ -n $files ]] || { echo "lint: no C files found" >&2; exit 1; }
    xargs clang-format --dry-run -Werror <<<"$files"
}

# The C files cppcheck and clang-tidy check (headers come in through them).
checked_c_files() { source_files src tests/unit tests/fuzz bench -- '*.c'; }

run_cppcheck() {
    cppcheck --enable=warning,style,performance,portability --std=c11 --inline-suppr --quiet \
        --error-exitcode=1 -I include -I src -I tests/unit -I tests/fuzz -I "$build/generated" \
        --suppress=missingIncludeSystem src/ tests/unit/ tests/fuzz/ bench/
}

# The flags of a fuzz target without libFuzzer's instrumentation: those of the unit tests
# (CMakeLists.txt's warnings, -D_GNU_SOURCE, C11 with GNU extensions as CMake's C_EXTENSIONS).
fuzz_flags=(-std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes
    -Wmissing-prototypes -Wformat=2 -I include -I src -I tests/fuzz)

run_tidy() {
    if [[ ! -f "$build/compile_commands.json" ]]; then
        echo "lint: $build/compile_commands.json missing; build first (scripts/build.sh)" >&2
        exit 1
    fi
    local in_db=() fuzz=() f files
    files=$(checked_c_files)
    [[ -n $files ]] || { echo "lint: no C files found" >&2; exit 1; }
    while read -r f; do
        if grep -qF "\"file\": \"$PWD/$f\"" "$build/compile_commands.json"; then
            in_db+=("$f")
        elif [[ $f == tests/fuzz/* ]]; then
            fuzz+=("$f")
        else
            echo "lint: $f has no entry in $build/compile_commands.json" >&2
            exit 1
        fi
    done <<<"$files"
    # One clang-tidy process per file: clang-tidy 14's static analyzer carries state from one
    # file to the next (after bench/*.c it reports a false valist.Uninitialized in src/base/buf.c).
    # As many at once as there are CPUs (a file's analysis takes seconds; in turn, the whole
    # check took minutes), the fuzz targets in the same pool, the largest file first: the
    # analysis time grows with the file (tests/unit/test_store.c takes about 40 s, most files a
    # second or two), so the long ones start at once
    # and the short ones fill in beside them, instead of the longest starting last in name
    # order and running alone at the end. Each process's output is written whole when it ends,
    # so reports of files do not interleave. (Its "N warnings generated" lines count suppressed
    # warnings in system headers.)
    local failed=0 jobs kind list
    jobs=$(nproc)
    local order=()
    mapfile -t order < <(
        for kind in db fuzz; do
            if [[ $kind == db ]]; then list=("${in_db[@]}"); else list=("${fuzz[@]}"); fi
            for f in "${list[@]}"; do printf '%s %s %s\n' "$(stat -c %s "$f")" "$kind" "$f"; done
        done | LC_ALL=C sort -k1,1nr -k3,3 | cut -d' ' -f2-
    )
    if ((${#order[@]})); then
        # shellcheck disable=SC2016 # the inner script's variables are its own
        for f in "${order[@]}"; do printf '%s\0%s\0' "${f%% *}" "${f#* }"; done |
            LINT_BUILD=$build LINT_FUZZ_FLAGS="${fuzz_flags[*]}" xargs -0 -n 2 -P "$jobs" sh -c '
                if [ "$1" = fuzz ]; then
                    # (the flags unquoted: one word each)
                    out=$(clang-tidy --quiet "$2" -- $LINT_FUZZ_FLAGS -I "$LINT_BUILD/generated" 2>&1)
                else
                    out=$(clang-tidy -p "$LINT_BUILD" --quiet "$2" 2>&1)
                fi
                rc=$?
                printf "%s\n" "$out" | grep -v " warnings\{0,1\} generated\.$" | grep -v "^$" >&2; exit $rc' \
                sh || failed=1
    fi
    return "$failed"
}

case "$what" in
format) run_format ;;
cppcheck) run_cppcheck ;;
tidy) run_tidy ;;
files) c_files ;;
all)
    run_format
    run_cppcheck
    run_tidy
    ;;
*)
    echo "usage: scripts/lint.sh [format|cppcheck|tidy|all|files] [BUILD_DIR]" >&2
    exit 2
    ;;
esac
