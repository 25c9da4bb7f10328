#!/usr/bin/env bash
# Configure and build memoryd.
#   scripts/build.sh                 -> build/        (RelWithDebInfo)
#   scripts/build.sh --sanitize      -> build-asan/   (AddressSanitizer + UBSan)
#   scripts/build.sh --fuzz          -> build-fuzz/   (clang, libFuzzer targets in tests/fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
if [[ "${1:-}" == "--sanitize" ]]; then
  dir=build-asan
  flags=(-DCMAKE_BUILD_TYPE=Debug -DMEMORYD_SANITIZE=ON)
elif [[ "${1:-}" == "--fuzz" ]]; then
  dir=build-fuzz
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DMEMORYD_FUZZ=ON)
fi
cmake -S . -B "$dir" "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
