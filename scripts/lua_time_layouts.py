#!/usr/bin/env python3
"""objprof-Lua against stock Lua across code layouts (scripts/lua_layouts.sh builds them).

    scripts/lua_time_layouts.py [--objprof-env NAME=VALUE ...] REPS LAYOUT_DIR [LAYOUT_DIR ...]
    scripts/lua_time_layouts.py [--objprof-env NAME=VALUE ...] REPS BUILD=DIR,DIR,... BUILD=...

Each LAYOUT_DIR holds a lua-stock and an objprof-lua built with the same flags. Every run of
every program, layout and interpreter is interleaved in a random order, REPS times; a cell is
the minimum child CPU time over the REPS runs (bench_lua's program sizes, argv[0] "lua",
OBJPROF_LUA_REPORT=0, as scripts/lua_time_ab.py). Per program it prints objprof/stock in each
layout, the ratio of the two interpreters' geomeans across layouts (the layout's luck taken out
of the comparison), and how far stock Lua alone moves between layouts (slowest / fastest).
--objprof-env sets a variable for objprof-lua's runs only (e.g. OBJPROF_LUA_ELIM=1).

The second form compares builds (e.g. the layouts of two commits, each made by lua_layouts.sh
in its own tree): every program, layout, build and interpreter is interleaved in one run, and
per program it prints each build's ratio of geomeans across its layouts.
"""
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lua_time_ab import PROGRAMS, child_cpu  # noqa: E402


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def interleaved_times(reps, layouts, objprof_env):
    """Child CPU times {(program, dir, interpreter): [seconds, ...]} of every program, layout
    directory and interpreter, interleaved in a random order, REPS times. layouts: (label, dir),
    the label naming the directory in the error for a missing interpreter."""
    kinds = ("lua-stock", "objprof-lua")
    for label, d in layouts:
        for k in kinds:
            if not os.access(os.path.join(d, k), os.X_OK):
                sys.exit(f"lua_time_layouts: {label}: no executable {k} (scripts/lua_layouts.sh builds them)")
    lua_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "lua")
    env = dict(os.environ, OBJPROF_LUA_REPORT="0")
    envs = {"lua-stock": env, "objprof-lua": dict(env, **objprof_env)}
    times = {}
    for _ in range(reps):
        runs = [(p, d, k) for p in PROGRAMS for _, d in layouts for k in kinds]
        random.shuffle(runs)
        for (name, arg), d, k in runs:
            t = child_cpu(os.path.join(d, k), os.path.join(lua_dir, name + ".lua"), arg, envs[k])
            times.setdefault((name, d, k), []).append(t)
    return times


def main():
    args = sys.argv[1:]
    objprof_env = {}
    while len(args) >= 2 and args[0] == "--objprof-env" and "=" in args[1]:
        name, value = args[1].split("=", 1)
        objprof_env[name] = value
        args = args[2:]
    if len(args) < 2 or not args[0].isdigit():
        sys.exit(__doc__)
    reps = int(args[0])
    if all("=" in a for a in args[1:]):
        compare_builds(reps, [a.split("=", 1) for a in args[1:]], objprof_env)
        return
    layouts = args[1:]
    times = interleaved_times(reps, [(d, d) for d in layouts], objprof_env)
    names = [os.path.basename(os.path.normpath(d)) for d in layouts]
    print("program".ljust(14) + "".join(n[:11].rjust(12) for n in names) + "  across layouts  stock's spread")
    across = []
    for name, _ in PROGRAMS:
        stock = [min(times[(name, d, "lua-stock")]) for d in layouts]
        prof = [min(times[(name, d, "objprof-lua")]) for d in layouts]
        ratio = geomean(prof) / geomean(stock)
        across.append(ratio)
        cells = "".join(f"{p / s:12.3f}" for p, s in zip(prof, stock))
        print(name.ljust(14) + cells + f"{ratio:17.3f}{max(stock) / min(stock):16.3f}")
    per_layout = [geomean([min(times[(n, d, 'objprof-lua')]) / min(times[(n, d, 'lua-stock')]) for n, _ in PROGRAMS])
                  for d in layouts]
    print("geomean".ljust(14) + "".join(f"{g:12.3f}" for g in per_layout) + f"{geomean(across):17.3f}")


def compare_builds(reps, builds, objprof_env):
    builds = [(name, dirs.split(",")) for name, dirs in builds]
    times = interleaved_times(reps, [(f"{name}: {d}", d) for name, dirs in builds for d in dirs], objprof_env)
    print("program".ljust(14) + "".join(name[:11].rjust(12) for name, _ in builds))
    across = {name: [] for name, _ in builds}
    for prog, _ in PROGRAMS:
        row = prog.ljust(14)
        for name, dirs in builds:
            ratio = geomean([min(times[(prog, d, "objprof-lua")]) for d in dirs]) / \
                geomean([min(times[(prog, d, "lua-stock")]) for d in dirs])
            across[name].append(ratio)
            row += f"{ratio:12.3f}"
        print(row)
    print("geomean".ljust(14) + "".join(f"{geomean(across[name]):12.3f}" for name, _ in builds))


if __name__ == "__main__":
    main()
