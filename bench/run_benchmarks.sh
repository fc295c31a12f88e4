#!/usr/bin/env bash
# Builds the release preset's benchmarks, runs bench_barrier, bench_trace and bench_bitmap
# (3 repetitions each, aggregates only) and prints the issue-2 target table from the medians.
#
#   bench/run_benchmarks.sh            configure + build (-j2) + run + table
#   SKIP_BUILD=1 bench/run_benchmarks.sh   run + table with the binaries already built
#   SKIP_RUN=1 bench/run_benchmarks.sh     table only, from build/bench-results/*.json
#   JOBS=N     build parallelism (default 2: the machine is shared)
#   REPS=N     repetitions (default 3)
#   BIN_DIR=D  where the bench_* binaries are (default build/bin)
#
# Results: build/bench-results/<bench>.json (Google Benchmark JSON), <bench>.txt (console
# output) and summary.md (the table printed at the end).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/build/bench-results"
benches=(bench_barrier bench_trace bench_bitmap)
bin="${BIN_DIR:-$root/build/bin}"
cd "$root"

if [[ "${SKIP_BUILD:-0}" != 1 && "${SKIP_RUN:-0}" != 1 ]]; then
  cmake --preset release
  # Only the benchmark targets (and the library they link): the rest of the tree is not needed
  # here and other engineers may be mid-change in it.
  cmake --build --preset release -j "${JOBS:-2}" --target "${benches[@]}"
fi

mkdir -p "$out"
if [[ "${SKIP_RUN:-0}" != 1 ]]; then
  for b in "${benches[@]}"; do
    echo "== $b ($(date -u +%FT%TZ))"
    "$bin/$b" \
      --benchmark_repetitions="${REPS:-3}" \
      --benchmark_report_aggregates_only=true \
      --benchmark_format=console \
      --benchmark_out="$out/$b.json" --benchmark_out_format=json | tee "$out/$b.txt"
  done
fi

python3 - "$out" <<'PY'
import json, sys, os, re

out = sys.argv[1]
med = {}
for b in ("bench_barrier", "bench_trace", "bench_bitmap"):
    path = os.path.join(out, b + ".json")
    if not os.path.exists(path):
        sys.exit(f"missing {path}")
    for r in json.load(open(path))["benchmarks"]:
        if r.get("run_type") == "aggregate" and r.get("aggregate_name") != "median":
            continue
        name = re.sub(r"/(min_time:[0-9.]+|iterations:\d+|manual_time|real_time|repeats:\d+)", "", r["run_name"])
        med[name] = r

def get(name, counter):
    if name not in med:
        sys.exit(f"benchmark {name} missing from the results")
    return med[name][counter]

lines = []
def emit(s=""):
    print(s)
    lines.append(s)

# ---- barrier table: ns/access per pattern x variant ----
variants = ["none", "range", "cache_racy", "cache_atomic", "cache_atomic_tf",
            "nocache_racy", "nocache_atomic", "nocache_atomic_tf", "ref_hitlikely_racy"]
short = ["none", "range", "c+racy", "c+atom", "c+atomTF", "nc+racy", "nc+atom", "nc+atomTF", "ref:c+racy+likely"]
rows = sorted({n.rsplit("/", 1)[0] for n in med if n.startswith("barrier/")},
              key=lambda n: (["one", "seq", "seq_fresh", "rand", "hit0", "hit75", "hit98"].index(n.split("/")[1]),
                             int(re.match(r"\d+", n.split("/")[2]).group()) * (1024 if "MiB" in n else 1)))
emit("### Barrier: ns per access (median of repetitions)")
emit()
emit("| pattern / heap | hit rate | " + " | ".join(short) + " |")
emit("|---|---|" + "---|" * len(short))
for r in rows:
    cells = [f"{get(r + '/' + v, 'ns_per_access') * 1e9:.2f}" for v in variants]
    emit(f"| {r.removeprefix('barrier/')} | {get(r + '/none', 'hit_rate'):.2f} | " + " | ".join(cells) + " |")
emit()

# ---- trace ----
emit("### Trace writer (one thread)")
emit()
emit("| benchmark | Mevents/s | ns/event | GB/s (10^9 B/s) |")
emit("|---|---|---|---|")
for n in sorted(k for k in med if k.startswith("trace/") and "crc32c" not in k):
    emit(f"| {n} | {get(n, 'events_per_s') / 1e6:.1f} | {get(n, 'ns_per_event') * 1e9:.2f} | {get(n, 'bytes_per_s') / 1e9:.2f} |")
for n in ("trace/crc32c_64KiB", "trace/ref_crc32c_3way_64KiB"):
    if n in med:
        emit(f"| {n} | | | {get(n, 'bytes_per_s') / 1e9:.2f} |")
emit()

# ---- bitmap ----
emit("### Bitmap snapshot_and_clear")
emit()
clock = get("bitmap/clock_overhead", "real_time")  # ns per pair of clock reads
emit(f"clock overhead (two steady_clock reads, subtracted below): {clock:.1f} ns")
emit()
emit("| benchmark | time | GB/s of bitmap (10^9 B/s) |")
emit("|---|---|---|")
for n in sorted(k for k in med if k.startswith("bitmap/") and k != "bitmap/clock_overhead"):
    t = med[n]["real_time"]
    unit = med[n]["time_unit"]
    extra = ""
    if "bytes_per_s" in med[n]:
        extra = f"{med[n]['bytes_per_s'] / 1e9:.2f}"
    if "ns_per_page" in med[n]:
        extra = f"({med[n]['ns_per_page'] * 1e9:.0f} ns per first-touched bitmap page)"
    if n.startswith("bitmap/swap/"):
        emit(f"| {n} | {t:.1f} {unit} (minus clock: {t - clock:.1f} ns) | |")
    else:
        emit(f"| {n} | {t:.1f} {unit} | {extra} |")
emit()

# ---- targets ----
emit("### Targets")
emit()
emit("| target | measured | met? |")
emit("|---|---|---|")
def target(desc, value, ok):
    emit(f"| {desc} | {value} | {'met' if ok else '**not met**'} |")

r = get("barrier/one/32KiB/cache_racy", "ns_per_access") / get("barrier/one/32KiB/none", "ns_per_access")
target("cache-hit barrier (cache_racy) <= 1.10x no barrier, one object", f"{r:.2f}x", r <= 1.10)
for v in ("cache_atomic", "cache_atomic_tf"):
    r = get(f"barrier/one/32KiB/{v}", "ns_per_access") / get("barrier/one/32KiB/none", "ns_per_access")
    target(f"  same, {v}", f"{r:.2f}x", r <= 1.10)
r = get("barrier/one/32KiB/ref_hitlikely_racy", "ns_per_access") / get("barrier/one/32KiB/none", "ns_per_access")
target("  reference: hit branch marked likely (proposed change)", f"{r:.2f}x", r <= 1.10)
for pat in ("seq", "seq_fresh"):
    for heap in ("32KiB", "1MiB", "16MiB", "64MiB"):
        r = get(f"barrier/{pat}/{heap}/cache_atomic_tf", "ns_per_access") / get(f"barrier/{pat}/{heap}/cache_racy", "ns_per_access")
        label = "steady epoch (bits already set)" if pat == "seq" else "fresh epoch (first touch)"
        target(f"atomic test-first <= 1.25x racy, sequential sweep {heap}, {label}", f"{r:.2f}x", r <= 1.25)
for n in ("trace/memreuse/alloc", "trace/memreuse/mix", "trace/counting/alloc", "trace/counting/mix"):
    e = get(n, "events_per_s")
    target(f"trace writer >= 200 M events/s into memory ({n})", f"{e / 1e6:.0f} M/s", e >= 200e6)
for n in ("trace/file/alloc", "trace/file/mix", "trace/file_sync/alloc"):
    b = get(n, "bytes_per_s")
    target(f"trace writer >= 1 GB/s into a file ({n})", f"{b / 1e9:.2f} GB/s", b >= 1e9)
s16 = get("bitmap/swap/16MiB", "real_time") - clock
s1g = get("bitmap/swap/1GiB", "real_time") - clock
flat = s1g <= max(1.25 * s16, s16 + 20)
target("snapshot pause flat 16 MiB -> 1 GiB (swap call, clock-corrected)", f"{s16:.0f} ns -> {s1g:.0f} ns", flat)
for heap in ("16MiB", "1GiB"):
    g = get(f"bitmap/scan_release/{heap}", "bytes_per_s")
    target(f"copy/clear (scan + release) >= 5 GB/s, {heap} heap", f"{g / 1e9:.2f} GB/s", g >= 5e9)
emit()
open(os.path.join(out, "summary.md"), "w").write("\n".join(lines) + "\n")
print(f"(table written to {os.path.join(out, 'summary.md')})")
PY
