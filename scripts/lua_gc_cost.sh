#!/usr/bin/env bash
# Instructions executed in Lua's collector (luaC_step and luaC_fullgc, inclusive: with
# objprof, the hooks the collector calls are counted in), under stock Lua and objprof-Lua, for
# bench/lua programs, counted by callgrind: exact and repeatable whatever else the machine does.
#   scripts/lua_gc_cost.sh [BIN_DIR] [PROGRAM:ARG ...]
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build/bin}"
shift || true
programs=("$@")
if ((${#programs[@]} == 0)); then
  programs=(binary_trees:11 richards:300 string_build:20000 json:6 nbody:20000 spectral_norm:100 fannkuch:8)
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Both interpreters run as "$work/X/lua": Lua keeps argv[0] in its `arg` table, so paths of
# different lengths would shift when the collector runs.
bin="$(cd "$bin" && pwd)"
mkdir "$work/s" "$work/o"
ln -s "$bin/lua-stock" "$work/s/lua"
ln -s "$bin/objprof-lua" "$work/o/lua"
gc_ir() {  # inclusive Ir of the collector's entry points in a callgrind profile
  callgrind_annotate --inclusive=yes "$1" 2>/dev/null |
    awk '/luaC_step\(|luaC_fullgc\(/ { gsub(",", "", $1); s += $1 } END { print s + 0 }'
}
total_ir() { grep -m1 -E '^summary:|^totals:' "$1" | awk '{ print $2 }'; }
printf '%-16s %14s %14s %8s   %14s %14s %8s\n' program "stock GC Ir" "objprof GC Ir" ratio "stock all Ir" "objprof all Ir" ratio
for p in "${programs[@]}"; do
  name="${p%%:*}"
  arg="${p#*:}"
  for v in lua-stock objprof-lua; do
    exe="$work/s/lua"
    [[ $v == objprof-lua ]] && exe="$work/o/lua"
    OBJPROF_LUA_REPORT=0 valgrind --tool=callgrind --callgrind-out-file="$work/$v.out" "$exe" "bench/lua/$name.lua" "$arg" \
      >/dev/null 2>"$work/$v.err"
  done
  sg="$(gc_ir "$work/lua-stock.out")"
  og="$(gc_ir "$work/objprof-lua.out")"
  st="$(total_ir "$work/lua-stock.out")"
  ot="$(total_ir "$work/objprof-lua.out")"
  awk -v n="$name" -v sg="$sg" -v og="$og" -v st="$st" -v ot="$ot" \
    'BEGIN { r = sg > 0 ? sprintf("%7.3fx", og / sg) : "      -"  # no collection ran
             printf "%-16s %14d %14d %s   %14d %14d %7.3fx\n", n, sg, og, r, st, ot, ot / st }'
done
