#!/usr/bin/env python3
"""Collections' time of bench_sim_gc under two or more settings, processes alternating.

    scripts/sim_gc_time_ab.py ROUNDS PAIRS NAME=BIN_DIR[:VAR=VALUE,...] [NAME=...]

PAIRS is a regular expression over the workload-collector pairs (e.g.
'listleak-(marksweep|lazysweep)'). Each setting is a bench_sim_gc binary (its directory) and
environment variables for it: the same binary with a path forced (OBJPROF_BITMAP_SCAN=popcnt),
or two builds. Per round every setting runs once, in turn, as its own process, timing the pairs'
`off` and `cheaper` collections (11 repetitions, randomly interleaved, medians). Each cell is the
median across rounds of the process's cheaper/off, with its range.

Only ratios within one process are comparable on a VM whose speed drifts: this is how
docs/results.md timed the AVX2 gathers against the scalar loops (2026-12-08). One binary under
two settings keeps the code layout the same; two builds do not (a rebuild moved `off` alone by
up to 10 %). Run it on an idle machine.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile


def parse_setting(arg):
    name, spec = arg.split("=", 1)
    bin_dir, _, env_list = spec.partition(":")
    env = {}
    for item in filter(None, env_list.split(",")):
        if "=" not in item:
            sys.exit(f"sim_gc_time_ab: {name}: '{item}' is not VAR=VALUE")
        key, value = item.split("=", 1)
        env[key] = value
    binary = os.path.join(bin_dir, "bench_sim_gc")
    if not os.access(binary, os.X_OK):
        sys.exit(f"sim_gc_time_ab: {name}: {binary} is not an executable")
    return name, binary, env


def one_process(binary, env, pairs, out):
    if os.path.exists(out):
        os.remove(out)  # a run that writes nothing must not read the one before
    subprocess.run([binary, f"--benchmark_filter=^gc/({pairs})/(off|cheaper)/", "--benchmark_repetitions=11",
                    "--benchmark_enable_random_interleaving=true", "--benchmark_report_aggregates_only=true",
                    f"--benchmark_out={out}", "--benchmark_out_format=json"],
                   env=dict(os.environ, **env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    try:
        with open(out) as f:
            runs = json.load(f)["benchmarks"]
    except (OSError, ValueError, KeyError):  # no benchmark matched: bench_sim_gc writes no results
        sys.exit(f"sim_gc_time_ab: no pair matches '{pairs}'")
    # The collecting thread's CPU time is the benchmark's manual time (real_time).
    medians = {r["run_name"]: r["real_time"] for r in runs if r.get("aggregate_name") == "median"}
    ratios = {}
    for name, t in medians.items():
        m = re.match(r"gc/([a-z]+-[a-z]+)/cheaper/", name)
        if not m:
            continue
        off = [v for n, v in medians.items() if n.startswith(f"gc/{m.group(1)}/off/")]
        if not off or off[0] <= 0:
            sys.exit(f"sim_gc_time_ab: no off run for {m.group(1)}")
        ratios[m.group(1)] = t / off[0]
    if not ratios:
        sys.exit(f"sim_gc_time_ab: no pair matches '{pairs}'")
    return ratios


def main():
    if len(sys.argv) < 4 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1 or any("=" not in a for a in sys.argv[3:]):
        sys.exit(__doc__)
    rounds, pairs = int(sys.argv[1]), sys.argv[2]
    try:
        re.compile(pairs)
    except re.error as e:
        sys.exit(f"sim_gc_time_ab: PAIRS is not a regular expression: {e}")
    settings = [parse_setting(a) for a in sys.argv[3:]]
    results = {}  # (setting, pair) -> ratios, one per round
    with tempfile.TemporaryDirectory() as work:
        for r in range(rounds):
            for name, binary, env in settings:
                for pair, ratio in one_process(binary, env, pairs, os.path.join(work, "out.json")).items():
                    results.setdefault((name, pair), []).append(ratio)
            print(f"round {r + 1} of {rounds} done", file=sys.stderr)
    names = [s[0] for s in settings]
    print("| pair | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for pair in sorted({p for _, p in results}):
        cells = []
        for name in names:
            v = sorted(results.get((name, pair), []))
            cells.append(f"{statistics.median(v):.3f}x ({v[0]:.3f}-{v[-1]:.3f})" if v else "-")
        print(f"| {pair} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
