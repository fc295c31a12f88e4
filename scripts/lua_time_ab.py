#!/usr/bin/env python3
"""Child CPU time of Lua interpreters side by side on bench/lua's programs (bench_lua's sizes).

    scripts/lua_time_ab.py REPS NAME=PATH [NAME=PATH ...]

The first interpreter is the reference (stock Lua); every run of every program and interpreter
is interleaved in a random order, REPS times, and each cell is the minimum over the REPS runs,
as a ratio to the reference's minimum. Every interpreter runs with argv[0] "lua" (Lua keeps
argv[0] in its `arg` table, so names of other lengths would collect at other moments) and with
OBJPROF_LUA_REPORT=0. For A/B of two builds of objprof-Lua beside one stock Lua; bench_lua
compares one build's variants.
"""
import math
import os
import random
import resource
import subprocess
import sys

PROGRAMS = [("binary_trees", "13"), ("nbody", "150000"), ("spectral_norm", "220"), ("fannkuch", "9"),
            ("richards", "3000"), ("string_build", "80000"), ("json", "25")]


def child_cpu(path, script, arg, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["lua", script, arg], executable=path, env=env, stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    if len(sys.argv) < 3 or not sys.argv[1].isdigit() or any("=" not in a for a in sys.argv[2:]):
        sys.exit(__doc__)
    reps = int(sys.argv[1])
    interpreters = [a.split("=", 1) for a in sys.argv[2:]]
    for name, path in interpreters:
        if not os.access(path, os.X_OK):
            sys.exit(f"lua_time_ab: {name}: {path} is not an executable")
    lua_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "lua")
    env = dict(os.environ, OBJPROF_LUA_REPORT="0")
    times = {}
    for _ in range(reps):
        runs = [(p, i) for p in PROGRAMS for i in range(len(interpreters))]
        random.shuffle(runs)
        for (name, arg), i in runs:
            t = child_cpu(interpreters[i][1], os.path.join(lua_dir, name + ".lua"), arg, env)
            times.setdefault((name, i), []).append(t)
    print("program".ljust(14) + "".join(n.rjust(12) for n, _ in interpreters) + "   reference")
    logs = [0.0] * len(interpreters)
    for name, _ in PROGRAMS:
        ref = min(times[(name, 0)])
        cells = []
        for i in range(len(interpreters)):
            ratio = min(times[(name, i)]) / ref
            logs[i] += math.log(ratio)
            cells.append(f"{ratio:12.3f}")
        print(name.ljust(14) + "".join(cells) + f"   {ref * 1000:.0f} ms")
    print("geomean".ljust(14) + "".join(f"{math.exp(l / len(PROGRAMS)):12.3f}" for l in logs))


if __name__ == "__main__":
    main()
