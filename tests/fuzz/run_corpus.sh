#!/bin/sh
# Run a libFuzzer target briefly on a committed corpus (used by ctest).
#   run_corpus.sh FUZZER CORPUS_DIR ARTIFACT_PREFIX [libFuzzer flags...]
# New inputs go to a fresh temporary directory that is removed afterwards,
# so CORPUS_DIR is only read. Crash artifacts are written under
# ARTIFACT_PREFIX (a directory, ending in /).
set -eu
fuzzer=$1 corpus=$2 artifacts=$3
shift 3
mkdir -p "$artifacts"
work=$(mktemp -d "${TMPDIR:-/tmp}/memoryd-fuzz-corpus.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
"$fuzzer" -artifact_prefix="$artifacts" -print_final_stats=1 "$@" "$work" "$corpus"
