#!/usr/bin/env bash
# A longer fuzzing campaign with the fuzz preset's targets (docs/fuzzing.md):
#   scripts/fuzz_campaign.sh TARGET... [SECONDS]
# TARGET is ir_text, jvm_import, trace, trace_resealed or trace_workers (or "all"); SECONDS per
# target, default 600. Each target starts from a scratch copy of its seed corpus (tests/fuzz/
# corpus/TARGET, never modified), runs one job on one worker for SECONDS with -timeout=10 so
# hangs are reported, and prints libFuzzer's final statistics. Crashes, hangs and sanitizer reports are
# written to $OBJPROF_FUZZ_OUT/TARGET/ (default build/fuzz/campaign/TARGET/); the grown corpus
# stays in build/fuzz/campaign/TARGET/corpus. Exits non-zero if any target found a fault.
set -euo pipefail
cd "$(dirname "$0")/.."

all=(ir_text jvm_import trace trace_resealed trace_workers)
targets=()
seconds=600
for arg in "$@"; do
  if [[ "$arg" =~ ^[0-9]+$ ]]; then
    seconds="$arg"
  elif [[ "$arg" == all ]]; then
    targets+=("${all[@]}")
  else
    targets+=("$arg")
  fi
done
if ((${#targets[@]} == 0)); then
  echo "usage: $0 TARGET... [SECONDS]   (TARGET: ${all[*]} or all)" >&2
  exit 2
fi

build=build/fuzz
if [[ ! -x "$build/bin/fuzz_${targets[0]}" ]]; then
  cmake --preset fuzz >/dev/null
fi
cmake --build --preset fuzz -j "${OBJPROF_JOBS:-2}" --target "${targets[@]/#/fuzz_}"

out_root="${OBJPROF_FUZZ_OUT:-$build/campaign}"
failed=0
for t in "${targets[@]}"; do
  bin="$build/bin/fuzz_$t"
  seeds="tests/fuzz/corpus/$t"
  [[ -x "$bin" && -d "$seeds" ]] || { echo "unknown fuzz target '$t'" >&2; exit 2; }
  work="$build/campaign/$t"
  out="$out_root/$t"
  rm -rf "$work/corpus"
  mkdir -p "$work/corpus" "$out"
  cp "$seeds"/* "$work/corpus/"
  log="$work/fuzz.log"
  echo "=== $t: ${seconds}s from $(ls "$seeds" | wc -l) seed inputs; log $log, faults to $out/"
  set +e
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -jobs=1 -workers=1 \
    -print_final_stats=1 -artifact_prefix="$out/" "$work/corpus" >"$log" 2>&1
  rc=$?
  set -e
  # With -jobs the job's output goes to fuzz-0.log in the current directory; libFuzzer copies
  # it into its own output when the job ends.
  rm -f fuzz-0.log
  grep -E '^#[0-9]+[[:space:]]+DONE|^stat::' "$log" | awk '!seen[$0]++' || tail -5 "$log"
  faults=$(find "$out" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
  echo "=== $t: exit $rc, $faults fault input(s) in $out/, corpus grew to $(ls "$work/corpus" | wc -l) inputs"
  if ((rc != 0 || faults != 0)); then failed=1; fi
done
exit "$failed"
