#!/usr/bin/env bash
# Long coverage-guided fuzzing runs of the libFuzzer targets in tests/fuzz/.
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
# SECONDS_PER_TARGET defaults to 600; TARGET is path, request, edit or json (or
# fuzz_path, ...), all three by default, run one after the other.
#
# Builds build-fuzz/ (scripts/build.sh --fuzz), then runs each target with a
# working corpus outside the repository, seeded from the committed corpus
# (which is only read). At the end it prints, per target, the executions
# (libFuzzer's stat::number_of_executed_units), the time and any crash
# artifacts, and the total; the exit status is 1 when a target crashed.
#
# Environment:
#   FUZZ_WORK   working directory; corpora and artifacts stay there between
#               runs (default /tmp/memoryd-fuzz)
#   FUZZ_JOBS   fuzzing processes per target (-jobs=N -workers=N); default 1
#               on a machine with up to 2 cores, else half the cores
#   FUZZ_FLAGS  extra libFuzzer flags, e.g. "-max_len=16384"
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

secs=${1:-600}
[[ $# -gt 0 ]] && shift
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [[ "$secs" -eq 0 ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [path|request|edit|json ...]" >&2
  exit 2
fi
targets=()
for t in "${@:-path request edit json}"; do
  for name in $t; do
    name=${name#fuzz_}
    if [[ ! -f tests/fuzz/fuzz_$name.c ]]; then
      echo "fuzz.sh: no target tests/fuzz/fuzz_$name.c" >&2
      exit 2
    fi
    targets+=("$name")
  done
done

cores=$(nproc)
jobs=${FUZZ_JOBS:-$((cores <= 2 ? 1 : cores / 2))}
work=${FUZZ_WORK:-/tmp/memoryd-fuzz}
read -r -a extra <<<"${FUZZ_FLAGS:-}"

scripts/build.sh --fuzz >/dev/null

declare -A execs elapsed crashes
total=0
status=0
for t in "${targets[@]}"; do
  bin=$root/build-fuzz/tests/fuzz/fuzz_$t
  dir=$work/$t
  mkdir -p "$dir/corpus" "$dir/artifacts"
  rm -f "$dir"/fuzz-*.log "$dir/run.log"
  flags=(-max_total_time="$secs" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1
         -artifact_prefix="$dir/artifacts/")
  [[ -f tests/fuzz/$t.dict ]] && flags+=(-dict="$root/tests/fuzz/$t.dict")
  echo "== fuzz_$t: ${secs}s, $jobs job(s), corpus $dir/corpus" >&2
  start=$(date +%s)
  rc=0
  # New inputs go to the first corpus directory; the committed one seeds it.
  if [[ $jobs -gt 1 ]]; then
    (cd "$dir" && "$bin" -jobs="$jobs" -workers="$jobs" "${flags[@]}" "${extra[@]}" \
      "$dir/corpus" "$root/tests/fuzz/corpus/$t" >"$dir/run.log" 2>&1) || rc=$?
  else
    (cd "$dir" && "$bin" "${flags[@]}" "${extra[@]}" \
      "$dir/corpus" "$root/tests/fuzz/corpus/$t" >"$dir/fuzz-0.log" 2>&1) || rc=$?
  fi
  elapsed[$t]=$(($(date +%s) - start))
  n=$(cat "$dir"/fuzz-*.log 2>/dev/null |
      awk '/stat::number_of_executed_units:/ { s += $2 } END { print s + 0 }')
  execs[$t]=$n
  total=$((total + n))
  # Artifacts (crash-*, leak-*, timeout-*, oom-*) written by this run; a
  # failure without one (e.g. at start-up) is reported with its logs.
  crashes[$t]=$(find "$dir/artifacts" -type f -newermt "@$start" | sort | paste -sd' ')
  if [[ -z "${crashes[$t]}" ]] && { [[ $rc -ne 0 ]] ||
    grep -qs '^SUMMARY: ' "$dir"/fuzz-*.log "$dir/run.log"; }; then
    crashes[$t]="FAILED (exit $rc, no artifact): see $dir/*.log"
  fi
  [[ -n "${crashes[$t]}" ]] && status=1
done

echo
printf '%-14s %15s %9s  %s\n' target executions seconds "crash artifacts"
for t in "${targets[@]}"; do
  c=${crashes[$t]:-}
  printf '%-14s %15s %9s  %s\n' "fuzz_$t" "${execs[$t]}" "${elapsed[$t]}" "${c:-none}"
done
printf '%-14s %15s\n' total "$total"
exit $status
