#!/usr/bin/env bash
# Barrier elimination on Lua bytecode, counted exactly (docs/results.md, issue 12 part 5): for
# each program of bench/lua (bench_lua's sizes, or smaller ones with --small), the static
# table-access sites the pass made barrier-free, and the barriers objprof-lua-check executes
# without and with elimination, the accesses that ran without one, the dynamic checker's
# violations, and the static checker's (check_shape on every prototype's decisions). Exits 1 if the checker found any
# (a test runs it with --small). EMULATOR (e.g. "qemu-aarch64 -L / -cpu max") prefixes each run.
#   scripts/lua_elim_stats.sh BIN_DIR [--small]
set -euo pipefail
bin="${1:?usage: lua_elim_stats.sh BIN_DIR [--small]}"
read -r -a emu <<<"${EMULATOR:-}"
unset LUA_PATH LUA_PATH_5_4 LUA_CPATH LUA_CPATH_5_4 LUA_INIT LUA_INIT_5_4
repo="$(cd "$(dirname "$0")/.." && pwd)"
if [[ "${2:-}" == --small ]]; then
  programs=(binary_trees:10 nbody:10000 spectral_norm:60 fannkuch:7 richards:200 string_build:5000 json:2)
else
  programs=(binary_trees:13 nbody:150000 spectral_norm:220 fannkuch:9 richards:3000 string_build:80000 json:25)
fi
counts() {  # stderr file -> "barriers unbarriered violations"
  sed -n 's/^objprof: check: \([0-9]*\) barriers, \([0-9]*\) accesses without one, \([0-9]*\) violations$/\1 \2 \3/p' "$1"
}
work="$(mktemp -d)"
status=0
trap 'rm -rf "$work"' EXIT
echo "| program | sites | barrier-free (static) | without root marks | barriers, off | barriers, on | accesses without one | barriers removed (dynamic) | violations | static check: prototypes with a violation |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for pa in "${programs[@]}"; do
  p="${pa%%:*}"; arg="${pa##*:}"
  OBJPROF_LUA_REPORT=0 OBJPROF_LUA_STATS=1 "${emu[@]}" "$bin/objprof-lua-check" "$repo/bench/lua/$p.lua" "$arg" >/dev/null 2>"$work/off"
  OBJPROF_LUA_REPORT=0 OBJPROF_LUA_STATS=1 OBJPROF_LUA_ELIM=1 "${emu[@]}" "$bin/objprof-lua-check" "$repo/bench/lua/$p.lua" "$arg" \
    >/dev/null 2>"$work/on"
  read -r off _ _ <<<"$(counts "$work/off")"
  read -r on unb viol <<<"$(counts "$work/on")"
  if [[ -z "${viol:-}" || -z "${off:-}" ]]; then echo "$p: no counts from objprof-lua-check:"; cat "$work/on"; exit 1; fi
  read -r checked static_viol <<<"$(sed -n 's/^objprof: static check: \([0-9]*\) prototypes, [0-9]* accesses on random paths, \([0-9]*\) with a violation$/\1 \2/p' "$work/on")"
  if [[ -z "${static_viol:-}" ]]; then echo "$p: no static check from objprof-lua-check:"; cat "$work/on"; exit 1; fi
  ((viol == 0 && static_viol == 0)) || status=1
  read -r sites rew exact <<<"$(sed -n 's/^objprof: elim: .* \([0-9]*\) table-access sites, \([0-9]*\) rewritten .* without root marks \([0-9]*\) .*/\1 \2 \3/p' "$work/on")"
  awk -v p="$p" -v s="$sites" -v r="$rew" -v e="$exact" -v off="$off" -v on="$on" -v u="$unb" -v v="$viol" \
      -v c="$checked" -v sv="$static_viol" 'BEGIN {
    printf "| %s | %d | %d (%.1f%%) | %d (%.1f%%) | %d | %d | %d | %.1f%% | %d | %d of %d |\n",
           p, s, r, 100*r/s, e, 100*e/s, off, on, u, 100*(off-on)/off, v, sv, c }'
done
exit $status
