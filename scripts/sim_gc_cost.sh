#!/usr/bin/env bash
# Instructions executed in the simulated runtime's collections per run of a workload, without
# the profiler (off), with it (on: stale tracking, no trace), with the trace (trace) and with
# the fates from the hooks or the collector's answers, whichever is cheaper per GC (cheaper:
# FateReports::kCheaper, no trace), as
# bench_sim_gc's gc/ benchmarks time them, counted by callgrind: exact and repeatable whatever
# else the machine does. Counted: everything inside Heap::do_collect, the lazy sweep's steps
# and the sweeps finished outside a collection (gc_end included), for one warm-up run plus one
# run (OBJPROF_BENCH_GC_RUNS=1), halved.
#   scripts/sim_gc_cost.sh [BIN_DIR] [PAIR ...]      # PAIR: listleak-semispace, scimark-lazysweep, ...
# glibc's memset and memcpy switch to `rep stosb` / `rep movsb` above ~2 KiB, and callgrind
# counts those once per byte: a 64 KiB clear weighed 65 K instructions for ~2 K cycles of
# work. The counts are taken with glibc's vector loops at every size instead (its tunables;
# ~6 instructions per 128 bytes), so a large clear or copy weighs what it costs in time, in the
# off runs and in the on runs alike. OBJPROF_COUNT_REP_STRINGS=1 counts with glibc's defaults,
# as docs/results.md did before 2026-11-29's night.
# LD_BIND_NOW: symbols are bound at start-up, so the warm-up run's collections do not count the
# dynamic linker binding each library function on its first call (~2.4 K instructions in a run
# of scimark-lazysweep), which the timed benchmark's own warm-up also leaves out.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${OBJPROF_COUNT_REP_STRINGS:-0}" == 0 ]]; then
  export GLIBC_TUNABLES="glibc.cpu.x86_rep_stosb_threshold=0xffffffffffff:glibc.cpu.x86_rep_movsb_threshold=0xffffffffffff${GLIBC_TUNABLES:+:$GLIBC_TUNABLES}"
fi
bin="${1:-build/bin}"
shift || true
pairs=("$@")
if ((${#pairs[@]} == 0)); then
  for w in listleak points graph scimark; do
    for g in semispace marksweep lazysweep; do pairs+=("$w-$g"); done
  done
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
count() {  # count PAIR MODE: instructions of one run's collections
  LD_BIND_NOW=1 OBJPROF_BENCH_GC_RUNS=1 OBJPROF_BENCH_NO_PERF=1 valgrind --tool=callgrind --collect-atstart=no \
    --toggle-collect='objprof::sim::Heap::do_collect*' --toggle-collect='objprof::sim::Heap::sweep_step_locked*' \
    --toggle-collect='objprof::sim::Heap::detach_mutator*' --toggle-collect='objprof::sim::Heap::finish_sweep(*' \
    --callgrind-out-file="$work/cg.out" "$bin/bench_sim_gc" --benchmark_filter="^gc/$1/$2/" \
    --benchmark_repetitions=1 >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  grep -m1 -E '^summary:|^totals:' "$work/cg.out" | awk '{ printf "%d", $2 / 2 }'
}
printf '%-20s %12s %12s %12s %12s %8s %8s %8s\n' pair "off Ir" "on Ir" "trace Ir" "cheaper Ir" on/off trace/off cheaper/off
logs=0
logt=0
logc=0
for p in "${pairs[@]}"; do
  off="$(count "$p" off)"
  on="$(count "$p" on)"
  tr="$(count "$p" trace)"
  ch="$(count "$p" cheaper)"
  awk -v p="$p" -v a="$off" -v b="$on" -v c="$tr" -v d="$ch" \
    'BEGIN { printf "%-20s %12d %12d %12d %12d %7.3fx %7.3fx %7.3fx\n", p, a, b, c, d, b / a, c / a, d / a }'
  logs="$(awk -v s="$logs" -v a="$off" -v b="$on" 'BEGIN { print s + log(b / a) }')"
  logt="$(awk -v s="$logt" -v a="$off" -v c="$tr" 'BEGIN { print s + log(c / a) }')"
  logc="$(awk -v s="$logc" -v a="$off" -v d="$ch" 'BEGIN { print s + log(d / a) }')"
done
awk -v s="$logs" -v t="$logt" -v c="$logc" -v n="${#pairs[@]}" \
  'BEGIN { printf "%-20s %12s %12s %12s %12s %7.3fx %7.3fx %7.3fx\n", "geomean", "", "", "", "", exp(s / n), exp(t / n), exp(c / n) }'
