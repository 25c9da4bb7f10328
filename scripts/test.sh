#!/usr/bin/env bash
# The whole test suite, as CI runs it: install dependencies, build memoryd
# twice (plain, and with AddressSanitizer + UBSan) and run every ctest test
# against both builds (the plain build also runs the static checks, the
# valgrind pass and the TypeScript client's tests); then build the libFuzzer
# targets with clang and run each briefly.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
(cd tests && npm ci --no-audit --no-fund --loglevel=error)

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
for variant in "" --sanitize; do
  scripts/build.sh $variant
  dir=build; [[ -n "$variant" ]] && dir=build-asan
  echo "== ctest in $dir" >&2
  ctest --test-dir "$dir" --output-on-failure -j2 || status=1
done
# The libFuzzer targets (clang), each briefly on its committed corpus.
scripts/build.sh --fuzz
echo "== ctest in build-fuzz" >&2
ctest --test-dir build-fuzz -L fuzz --output-on-failure -j2 || status=1
exit $status
