#!/usr/bin/env bash
# The paper's Fig. 6 ladder on JIT code as dynamic instruction counts under qemu-user, for arm64
# (the cross build; qemu's timing is not meaningful there) and for x86_64 (the native build run
# by qemu-x86_64: exact counts where wall-clock ratios on a VM scatter by 10-25 %). For every
# workload (small inputs) and rung (no-barriers, none, caching, elim, all-everywhere, all, all-pinned, all-trace, all-roots; see
# tools/jit_insn_ladder/jit_insn_ladder.cc):
#   1. jit_insn_ladder runs the rung once and writes where the compiled functions and every
#      emitted barrier sequence lie (JitOptions::code_ranges);
#   2. the same run again under qemu -singlestep (one instruction per translation block) with
#      exec logging limited (-dfilter) to the compiled code's address span; insn_bins counts the
#      logged PCs in JIT code and in barrier code. Addresses are deterministic under qemu-user;
#      the script checks that the logged run placed the code where the first run did;
#   3. `jit_insn_ladder stats` (interpreted) gives the accesses and barriers executed;
#   4. x86_64 only, when valgrind is installed: the whole run of `main` (compiled code, runtime
#      calls, allocation, GCs and the profiler's hooks) counted natively by callgrind
#      (--toggle-collect on the tool's measured_main, not a training run), the instruction-count
#      analogue of the timed ladder.
# Prints a table per workload and rung, and geomeans over workloads. Not part of the tests.
#   scripts/jit_insn_ladder.sh [arm64|x86_64 [BUILD_DIR]]   # default arm64, build/arm64 (x86_64: build)
#   QEMU_CPU=cortex-a53 scripts/jit_insn_ladder.sh arm64     # default: max
set -euo pipefail
cd "$(dirname "$0")/.."

arch="${1:-arm64}"
case "$arch" in
  arm64) qemu_bin=qemu-aarch64 default_build=build/arm64 ;;
  x86_64) qemu_bin=qemu-x86_64 default_build=build ;;
  *) echo "jit_insn_ladder: unknown arch '$arch' (arm64 or x86_64)" >&2; exit 2 ;;
esac
build="${2:-$default_build}"
tool="$build/bin/jit_insn_ladder"
cpu="${QEMU_CPU:-max}"
[[ -x "$tool" ]] || { echo "jit_insn_ladder: $tool not found; build it: cmake --build $build --target jit_insn_ladder" >&2; exit 2; }
command -v "$qemu_bin" >/dev/null || { echo "jit_insn_ladder: $qemu_bin not found (apt-get install qemu-user)" >&2; exit 2; }
qemu=("$qemu_bin" -L / -cpu "$cpu")

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# The counter reads qemu's log on the host, so it is built for the host, not in the arm64 tree.
"${CXX:-c++}" -O2 -std=c++20 -Wall -Wextra -Werror tools/jit_insn_ladder/insn_bins.cc -o "$tmp/insn_bins"

# name size threads: about 1-5 million JIT instructions per rung.
workloads=("listleak 200 1" "swapleak 200 1" "points 100 1" "scimark 16 1" "graph 50 1" "threads 40 2")
rungs=(no-barriers none caching elim all-everywhere all all-pinned all-trace all-roots)

echo "# $arch JIT code on $(uname -m), $($qemu_bin --version | head -1), -cpu $cpu, $(date -u)"
whole_run=0
[[ "$arch" == x86_64 ]] && command -v valgrind >/dev/null && whole_run=1
printf '%-9s %-14s %10s %10s %9s %9s %8s %8s %9s %11s %9s\n' workload rung jit_insns barr_insns accesses barriers \
  b_ins/acc b_ins/bar jit/nobar run_insns run/nobar
results="$tmp/results"
: >"$results"
for w in "${workloads[@]}"; do
  read -r name size threads <<<"$w"
  declare -A acc=() bar=()
  while read -r rung a b; do acc[$rung]=$a; bar[$rung]=$b; done < <("${qemu[@]}" "$tool" stats "$name" --size "$size" --threads "$threads")
  base=""
  for rung in "${rungs[@]}"; do
    "${qemu[@]}" "$tool" run "$name" "$rung" --size "$size" --threads "$threads" --ranges "$tmp/dry" >/dev/null
    lo="$(awk '$1 == "function" { print $2 }' "$tmp/dry" | sort | head -1)"
    hi="$(awk '$1 == "function" { print $3 }' "$tmp/dry" | sort | tail -1)"
    rm -f "$tmp/log"
    mkfifo "$tmp/log"
    "$tmp/insn_bins" "$tmp/ranges" <"$tmp/log" >"$tmp/bins" &
    counter=$!
    "${qemu[@]}" -singlestep -d exec,nochain -dfilter "0x$lo..0x$hi" -D "$tmp/log" \
      "$tool" run "$name" "$rung" --size "$size" --threads "$threads" --ranges "$tmp/ranges" >/dev/null
    wait "$counter"
    if ! cmp -s <(grep '^function' "$tmp/dry") <(grep '^function' "$tmp/ranges"); then
      echo "jit_insn_ladder: $name/$rung: the logged run placed its code elsewhere than the first run" >&2
      exit 1
    fi
    read -r _ jit _ barrier _ other <"$tmp/bins"
    [[ "$other" == 0 ]] || { echo "jit_insn_ladder: $name/$rung: $other logged instructions outside JIT code" >&2; exit 1; }
    [[ -n "$base" ]] || base=$jit
    run=0
    if ((whole_run)); then
      run="$(valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='*measured_main*' \
        "$tool" run "$name" "$rung" --size "$size" --threads "$threads" --ranges "$tmp/cg" 2>&1 >/dev/null |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p')"
      [[ -n "$run" ]] || { echo "jit_insn_ladder: $name/$rung: callgrind gave no count" >&2; exit 1; }
    fi
    [[ -n "${run_base:-}" ]] || run_base=$run
    awk -v w="$name" -v r="$rung" -v j="$jit" -v b="$barrier" -v a="${acc[$rung]}" -v n="${bar[$rung]}" -v base="$base" \
      -v run="$run" -v run_base="$run_base" 'BEGIN {
      printf "%-9s %-14s %10d %10d %9d %9d %8.2f %8s %9.3f %11s %9s\n", w, r, j, b, a, n, b / a, (n > 0 ? sprintf("%.2f", b / n) : "-"),
        j / base, (run > 0 ? run : "-"), (run > 0 ? sprintf("%.3f", run / run_base) : "-")
    }' | tee -a "$results"
  done
  unset acc bar run_base
done
echo
echo "geomean over workloads: JIT instructions relative to no-barriers; barrier instructions per access; whole runs"
awk '{ n[$2]++; lr[$2] += log($9); if ($7 > 0) { lb[$2] += log($7); nb[$2]++ } if ($11 != "-") { lw[$2] += log($11); nw[$2]++ } }
     END { split("no-barriers none caching elim all-everywhere all all-pinned all-trace all-roots", rs, " ");
           for (i = 1; i <= 9; i++) { r = rs[i]; if (!(r in n)) continue;
             printf "%-14s jit/nobar %6.3f   b_ins/acc %5s   run/nobar %s\n", r, exp(lr[r] / n[r]),
               (nb[r] ? sprintf("%.2f", exp(lb[r] / nb[r])) : "0"), (nw[r] ? sprintf("%.3f", exp(lw[r] / nw[r])) : "-") } }' "$results"
