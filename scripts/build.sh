#!/usr/bin/env bash
# Configure and build memoryd.
#   scripts/build.sh                 -> build/        (RelWithDebInfo)
#   scripts/build.sh --sanitize      -> build-asan/   (AddressSanitizer + UBSan)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
if [[ "${1:-}" == "--sanitize" ]]; then
  dir=build-asan
  flags=(-DCMAKE_BUILD_TYPE=Debug -DMEMORYD_SANITIZE=ON)
fi
cmake -S . -B "$dir" "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
