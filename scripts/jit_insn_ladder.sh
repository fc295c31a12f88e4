#!/usr/bin/env bash
# The paper's Fig. 6 ladder on arm64 JIT code as dynamic instruction counts under qemu-user
# (qemu's timing is not meaningful). For every workload (small inputs) and rung (no-barriers,
# none, caching, elim, all, all-pinned; see tools/jit_insn_ladder/jit_insn_ladder.cc):
#   1. jit_insn_ladder runs the rung once and writes where the compiled functions and every
#      emitted barrier sequence lie (JitOptions::code_ranges);
#   2. the same run again under qemu -singlestep (one instruction per translation block) with
#      exec logging limited (-dfilter) to the compiled code's address span; insn_bins counts the
#      logged PCs in JIT code and in barrier code. Addresses are deterministic under qemu-user;
#      the script checks that the logged run placed the code where the first run did;
#   3. `jit_insn_ladder stats` (interpreted) gives the accesses and barriers executed.
# Prints a table per workload and rung, and geomeans over workloads. Not part of the tests.
#   scripts/arm64_insn_ladder.sh [BUILD_DIR (default build/arm64)]
#   QEMU_CPU=cortex-a53 scripts/arm64_insn_ladder.sh      # default: max
set -euo pipefail
cd "$(dirname "$0")/.."

build="${1:-build/arm64}"
tool="$build/bin/jit_insn_ladder"
cpu="${QEMU_CPU:-max}"
[[ -x "$tool" ]] || { echo "arm64_insn_ladder: $tool not found; build it: cmake --build $build --target jit_insn_ladder" >&2; exit 2; }
command -v qemu-aarch64 >/dev/null || { echo "arm64_insn_ladder: qemu-aarch64 not found (apt-get install qemu-user)" >&2; exit 2; }
qemu=(qemu-aarch64 -L / -cpu "$cpu")

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# The counter reads qemu's log on the host, so it is built for the host, not in the arm64 tree.
"${CXX:-c++}" -O2 -std=c++20 -Wall -Wextra -Werror tools/jit_insn_ladder/insn_bins.cc -o "$tmp/insn_bins"

# name size threads: about 1-5 million JIT instructions per rung.
workloads=("listleak 200 1" "swapleak 200 1" "points 100 1" "scimark 16 1" "graph 50 1" "threads 40 2")
rungs=(no-barriers none caching elim all all-pinned)

echo "# $(uname -m), $(qemu-aarch64 --version | head -1), -cpu $cpu, $(date -u)"
printf '%-9s %-11s %10s %10s %9s %9s %8s %8s %9s\n' workload rung jit_insns barr_insns accesses barriers b_ins/acc b_ins/bar jit/nobar
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
      echo "arm64_insn_ladder: $name/$rung: the logged run placed its code elsewhere than the first run" >&2
      exit 1
    fi
    read -r _ jit _ barrier _ other <"$tmp/bins"
    [[ "$other" == 0 ]] || { echo "arm64_insn_ladder: $name/$rung: $other logged instructions outside JIT code" >&2; exit 1; }
    [[ -n "$base" ]] || base=$jit
    awk -v w="$name" -v r="$rung" -v j="$jit" -v b="$barrier" -v a="${acc[$rung]}" -v n="${bar[$rung]}" -v base="$base" 'BEGIN {
      printf "%-9s %-11s %10d %10d %9d %9d %8.2f %8s %9.3f\n", w, r, j, b, a, n, b / a, (n > 0 ? sprintf("%.2f", b / n) : "-"), j / base
    }' | tee -a "$results"
  done
  unset acc bar
done
echo
echo "geomean over workloads: JIT instructions relative to no-barriers; barrier instructions per access"
awk '{ n[$2]++; lr[$2] += log($9); if ($7 > 0) { lb[$2] += log($7); nb[$2]++ } order[$2] = NR }
     END { split("no-barriers none caching elim all all-pinned", rs, " ");
           for (i = 1; i <= 6; i++) { r = rs[i]; if (!(r in n)) continue;
             printf "%-11s jit/nobar %6.3f   b_ins/acc %s\n", r, exp(lr[r] / n[r]), (nb[r] ? sprintf("%.2f", exp(lb[r] / nb[r])) : "0") } }' "$results"
