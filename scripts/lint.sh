#!/usr/bin/env bash
# Static checks of memoryd's C code; each exits non-zero on any finding.
#   scripts/lint.sh format [BUILD_DIR]    clang-format --dry-run on every C file
#   scripts/lint.sh cppcheck [BUILD_DIR]  cppcheck (warning, style, performance, portability)
#   scripts/lint.sh tidy [BUILD_DIR]      clang-tidy with .clang-tidy (needs BUILD_DIR's
#                                         compile_commands.json; default build/)
#   scripts/lint.sh [all] [BUILD_DIR]     all three
# ctest runs each as lint/<name> in the plain build.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
build=${2:-build}

c_files() { git ls-files -co --exclude-standard -- 'src/*.c' 'src/*.h' 'include/*.h' 'tests/*.c' 'tests/*.h' 'bench/*.c'; }

run_format() {
    c_files | xargs clang-format --dry-run -Werror
}

run_cppcheck() {
    cppcheck --enable=warning,style,performance,portability --std=c11 --inline-suppr --quiet \
        --error-exitcode=1 -I include -I "$build/generated" --suppress=missingIncludeSystem src/
}

run_tidy() {
    if [[ ! -f "$build/compile_commands.json" ]]; then
        echo "lint: $build/compile_commands.json missing; build first (scripts/build.sh)" >&2
        exit 1
    fi
    # Only files with an entry in the compilation database.
    # (Its "N warnings generated" lines count suppressed warnings in system headers.)
    clang-tidy -p "$build" --quiet src/*.c 2> >(grep -v ' warnings\? generated\.$' >&2)
}

case "$what" in
format) run_format ;;
cppcheck) run_cppcheck ;;
tidy) run_tidy ;;
all)
    run_format
    run_cppcheck
    run_tidy
    ;;
*)
    echo "usage: scripts/lint.sh [format|cppcheck|tidy|all] [BUILD_DIR]" >&2
    exit 2
    ;;
esac
