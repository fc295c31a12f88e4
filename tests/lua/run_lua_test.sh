#!/usr/bin/env bash
# The Lua embedding's tests (ctest runs one script per test; tests/CMakeLists.txt).
#   run_lua_test.sh diff    BIN SCRIPT [ARGS...]  stock Lua and objprof-Lua (both collector modes,
#                                                  hook checks on) print the same stdout and exit
#                                                  with the same status; stdin is a fixed text
#   run_lua_test.sh leak    BIN SCRIPT            the online report at exit names the line marked
#                                                  "-- LEAK" first (also with barrier elimination)
#   run_lua_test.sh noleak  BIN SCRIPT            no report at exit
#   run_lua_test.sh offline BIN SCRIPT            `objprof report` on the trace ranks the line
#                                                  marked "-- LEAK" first
#   run_lua_test.sh cli     BIN                   `objprof lua` runs like lua5.4 and refuses bad options
#   run_lua_test.sh fault   BIN SCRIPT FAULT      with barrier elimination, objprof-lua-check finds no
#                                                  violation, and some with OBJPROF_LUA_ELIM_FAULT=FAULT
#   run_lua_test.sh dump    BIN                   string.dump under barrier elimination writes what
#                                                  stock Lua writes (standard opcodes only); a
#                                                  malformed undumped chunk is left as it is
# The diff mode also runs objprof-lua-check with barrier elimination (OBJPROF_LUA_ELIM=1): the
# same output, no access made barrier-free finds its object unmarked, and the static checker
# (check_shape) finds no violation in any prototype's decisions. Where the build has no checker
# (OBJPROF_TEST_LUA_CHECKER=0: the sanitizer and cross builds) it runs objprof-lua with
# elimination on instead: the same output, no protocol error, and the pass's counts printed.
# BIN is the build's bin directory. EMULATOR (e.g. "qemu-aarch64 -L / -cpu max") prefixes every
# program run, for the arm64 build.
set -euo pipefail
mode="$1"
bin="$2"
shift 2
read -r -a emu <<<"${EMULATOR:-}"
checker="${OBJPROF_TEST_LUA_CHECKER:-1}"  # 0: the build has no objprof-lua-check

check_counts() {  # the "objprof: check:" line of stderr file $1 -> "violations unbarriered"
  sed -n 's/^objprof: check: [0-9]* barriers, \([0-9]*\) accesses without one, \([0-9]*\) violations$/\2 \1/p' "$1"
}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OBJPROF_CHECK_HOOKS=1  # every hook placement is checked against a shadow heap
# Debian's lua5.4 finds Debian's Lua libraries (dkjson, penlight) on its default path.
unset LUA_PATH LUA_PATH_5_4 LUA_CPATH LUA_CPATH_5_4 LUA_INIT LUA_INIT_5_4

leak_line() {  # the line marked -- LEAK in $1, as "file.lua:LINE"
  local n
  n="$(grep -n -- '-- LEAK' "$1" | head -1 | cut -d: -f1)"
  [[ -n "$n" ]] || { echo "no '-- LEAK' marker in $1" >&2; exit 1; }
  echo "$(basename "$1"):$n"
}

case "$mode" in
  diff)
    script="$1"
    shift
    printf 'first line\nsecond line\n' >"$work/stdin"
    set +e
    "${emu[@]}" "$bin/lua-stock" "$script" "$@" <"$work/stdin" >"$work/stock.out" 2>"$work/stock.err"
    stock_rc=$?
    set -e
    for gc in generational incremental; do
      set +e
      OBJPROF_LUA_GC=$gc OBJPROF_LUA_REPORT=0 "${emu[@]}" "$bin/objprof-lua" "$script" "$@" <"$work/stdin" \
        >"$work/objprof.out" 2>"$work/objprof.err"
      rc=$?
      set -e
      if [[ $rc -ne $stock_rc ]] || ! cmp -s "$work/stock.out" "$work/objprof.out"; then
        echo "FAIL ($gc): exit $rc vs stock $stock_rc; stdout differs:"
        diff "$work/stock.out" "$work/objprof.out" | head -20
        echo "--- objprof-lua stderr:"
        head -20 "$work/objprof.err"
        exit 1
      fi
      if grep -q "protocol error" "$work/objprof.err"; then cat "$work/objprof.err"; exit 1; fi
      # Barrier elimination: the same output, and with the checker every access that ran
      # without a barrier found its object marked in the current epoch.
      elim_bin=objprof-lua-check
      [[ "$checker" == 1 ]] || elim_bin=objprof-lua
      set +e
      OBJPROF_LUA_GC=$gc OBJPROF_LUA_REPORT=0 OBJPROF_LUA_ELIM=1 OBJPROF_LUA_STATS=1 "${emu[@]}" "$bin/$elim_bin" \
        "$script" "$@" <"$work/stdin" >"$work/elim.out" 2>"$work/elim.err"
      rc=$?
      set -e
      if [[ $rc -ne $stock_rc ]] || ! cmp -s "$work/stock.out" "$work/elim.out"; then
        echo "FAIL ($gc, elimination): exit $rc vs stock $stock_rc; stdout differs:"
        diff "$work/stock.out" "$work/elim.out" | head -20
        head -20 "$work/elim.err"
        exit 1
      fi
      elim_note="$(sed -n 's/^objprof: elim: .* \([0-9]*\) table-access sites, \([0-9]*\) rewritten.*/\2 of \1 sites barrier-free/p' "$work/elim.err")"
      if grep -v '^objprof: stats:' "$work/elim.err" | grep -q "protocol error" || [[ -z "$elim_note" ]]; then
        echo "FAIL ($gc, elimination): a protocol error, or no elimination stats:"; cat "$work/elim.err"; exit 1
      fi
      if [[ "$checker" == 1 ]]; then
        read -r violations unbarriered <<<"$(check_counts "$work/elim.err")"
        if [[ "${violations:-x}" != 0 ]] || ! grep -q '^objprof: static check: .*, 0 with a violation$' "$work/elim.err"; then
          echo "FAIL ($gc, elimination): violations '${violations:-none reported}':"; cat "$work/elim.err"; exit 1
        fi
        elim_note="$elim_note, $unbarriered accesses without a barrier, 0 violations"
      else
        elim_note="$elim_note (objprof-lua: this build has no checker)"
      fi
    done
    # The tracked objects' fates from atomic()'s answers (hook checks off: they want the sweep's
    # frees): the same output, no protocol error, and every collection took the answers.
    set +e
    OBJPROF_CHECK_HOOKS=0 OBJPROF_LUA_FATES=survivors OBJPROF_LUA_REPORT=0 OBJPROF_LUA_STATS=1 "${emu[@]}" "$bin/objprof-lua" \
      "$script" "$@" <"$work/stdin" >"$work/objprof.out" 2>"$work/objprof.err"
    rc=$?
    set -e
    if [[ $rc -ne $stock_rc ]] || ! cmp -s "$work/stock.out" "$work/objprof.out" ||
       grep -v '^objprof: stats:' "$work/objprof.err" | grep -q "protocol error" ||
       ! grep -Eq '^objprof: stats: ([0-9]+) GCs \(\1 with atomic' "$work/objprof.err"; then
      echo "FAIL (survivors): exit $rc vs stock $stock_rc"; diff "$work/stock.out" "$work/objprof.out" | head -20
      head -20 "$work/objprof.err"; exit 1
    fi
    echo "identical output ($(wc -l <"$work/stock.out") lines, exit $stock_rc) under stock Lua and objprof-Lua (generational, incremental, survivors)"
    echo "with barrier elimination: $elim_note"
    ;;
  leak | noleak)
    script="$1"
    # Both collector modes, each without and with barrier elimination (whose root marks must not
    # hide what a suspended coroutine or the heap holds).
    # And each collector mode with the tracked objects' fates from atomic()'s answers
    # (OBJPROF_LUA_FATES=survivors; the hook checks off, which would want the sweep's frees).
    for gc in generational incremental generational+elim incremental+elim generational+survivors incremental+survivors; do
      elim=0 fates=hooks checks=1
      [[ "$gc" == *+elim ]] && elim=1
      [[ "$gc" == *+survivors ]] && fates=survivors checks=0
      OBJPROF_CHECK_HOOKS=$checks OBJPROF_LUA_FATES=$fates OBJPROF_LUA_GC=${gc%+*} OBJPROF_LUA_ELIM=$elim \
        "${emu[@]}" "$bin/objprof-lua" "$script" >"$work/out" 2>"$work/err" || { cat "$work/err"; exit 1; }
      if grep -q "protocol error" "$work/err"; then cat "$work/err"; exit 1; fi
      if [[ "$mode" == noleak ]]; then
        if grep -q "possible leak" "$work/err"; then echo "FAIL ($gc): a leak-free program was reported:"; cat "$work/err"; exit 1; fi
        echo "$gc: no report"
      else
        want="$(leak_line "$script")"
        first="$(grep -m1 '^objprof:   ' "$work/err" || true)"
        if [[ "$first" != "objprof:   $want "* && "$first" != "objprof:   "*"/$want "* ]]; then
          echo "FAIL ($gc): expected $want first; the report was:"; cat "$work/err"; exit 1
        fi
        echo "$gc: $first"
        # Each "-- PATH: text" line of the script: the report's first path from a root says it.
        path="$(grep -m1 '^objprof:     path from a root: ' "$work/err" || true)"
        while IFS= read -r expect; do
          [[ -z "$expect" ]] && continue
          if [[ "$path" != *"$expect"* ]]; then
            echo "FAIL ($gc): expected the path from a root to say \"$expect\"; the report was:"; cat "$work/err"; exit 1
          fi
        done < <(sed -n 's/^.*-- PATH: //p' "$script")
        [[ -n "$path" ]] && echo "$gc: ${path#objprof:     }"
      fi
    done
    ;;
  offline)
    script="$1"
    want="$(leak_line "$script")"
    OBJPROF_LUA_TRACE="$work/t.trace" "${emu[@]}" "$bin/objprof-lua" "$script" >"$work/out" 2>"$work/err" || { cat "$work/err"; exit 1; }
    if grep -q "protocol error" "$work/err"; then cat "$work/err"; exit 1; fi
    "${emu[@]}" "$bin/objprof" report "$work/t.trace" >"$work/report" 2>&1 || { cat "$work/report"; exit 1; }
    first="$(sed -n '/^Possible leaks/,$p' "$work/report" | grep -m1 -E '^ *1 ' || true)"
    if [[ "$first" != *"$want"* ]]; then echo "FAIL: expected $want first:"; sed -n '/^Possible leaks/,/total:/p' "$work/report"; exit 1; fi
    echo "offline: $first"
    echo "trace: $(stat -c %s "$work/t.trace") bytes"
    ;;
  cli)
    printf 'print("hi", ...) os.exit(5)\n' >"$work/s.lua"
    set +e
    out="$("${emu[@]}" "$bin/objprof" lua "$work/s.lua" --x y 2>&1)"
    rc=$?
    set -e
    [[ "$out" == $'hi\t--x\ty' && $rc -eq 5 ]] || { echo "FAIL: objprof lua gave '$out', exit $rc"; exit 1; }
    # --elim: the pass runs on what Lua loads and rewrites what it removes.
    printf 'local t = {} for i = 1, 3 do t.x = i; t.y = t.x end print(t.y)\n' >"$work/e.lua"
    out="$(OBJPROF_LUA_STATS=1 "${emu[@]}" "$bin/objprof" lua --elim "$work/e.lua" 2>&1)"
    [[ "$out" == 3* && "$out" == *"objprof: elim: 1 prototypes"*" 5 table-access sites, 4 rewritten"* ]] ||
      { echo "FAIL: objprof lua --elim gave:"; echo "$out"; exit 1; }
    for bad in "--heap=12Q" "--min-size=-1" "--stale-after=0" "--gc=copying" "--fates=oracle"; do
      if "${emu[@]}" "$bin/objprof" lua "$bad" "$work/s.lua" >"$work/out" 2>&1; then echo "FAIL: $bad accepted"; exit 1; fi
      grep -q -- "${bad%%=*}" "$work/out" || { echo "FAIL: $bad: the error does not name the option:"; cat "$work/out"; exit 1; }
    done
    if OBJPROF_LUA_HEAP=lots "${emu[@]}" "$bin/objprof-lua" "$work/s.lua" >"$work/out" 2>&1; then echo "FAIL: bad OBJPROF_LUA_HEAP accepted"; exit 1; fi
    grep -q "OBJPROF_LUA_HEAP" "$work/out" || { cat "$work/out"; exit 1; }
    if OBJPROF_LUA_FATES=oracle "${emu[@]}" "$bin/objprof-lua" "$work/s.lua" >"$work/out" 2>&1; then echo "FAIL: bad OBJPROF_LUA_FATES accepted"; exit 1; fi
    grep -q "OBJPROF_LUA_FATES" "$work/out" || { cat "$work/out"; exit 1; }
    # An exhausted region is Lua's own memory error, never a crash.
    printf 'local t = {} for i = 1, 1e7 do t[i] = ("x"):rep(100) .. i end\n' >"$work/big.lua"
    set +e
    OBJPROF_LUA_HEAP=4M OBJPROF_LUA_REPORT=0 "${emu[@]}" "$bin/objprof-lua" "$work/big.lua" >"$work/out" 2>&1
    rc=$?
    set -e
    [[ $rc -eq 1 ]] && grep -q "not enough memory" "$work/out" || { echo "FAIL: exhausted heap gave exit $rc:"; cat "$work/out"; exit 1; }
    echo "cli: ok"
    ;;
  fault)
    script="$1"
    fault="$2"
    for gc in generational incremental; do
      OBJPROF_LUA_GC=$gc OBJPROF_LUA_ELIM=1 OBJPROF_LUA_STATS=1 "${emu[@]}" "$bin/objprof-lua-check" "$script" \
        >"$work/good.out" 2>"$work/good.err" || { cat "$work/good.err"; exit 1; }
      read -r good unbarriered <<<"$(check_counts "$work/good.err")"
      [[ "${good:-x}" == 0 && "${unbarriered:-0}" -gt 0 ]] || { echo "FAIL ($gc): expected accesses without a barrier and no violation:"; cat "$work/good.err"; exit 1; }
      OBJPROF_LUA_GC=$gc OBJPROF_LUA_ELIM=1 OBJPROF_LUA_ELIM_FAULT=$fault OBJPROF_LUA_STATS=1 "${emu[@]}" "$bin/objprof-lua-check" \
        "$script" >"$work/bad.out" 2>"$work/bad.err" || { cat "$work/bad.err"; exit 1; }
      read -r bad _ <<<"$(check_counts "$work/bad.err")"
      [[ "${bad:-0}" -gt 0 ]] || { echo "FAIL ($gc): $fault went unnoticed by the checker:"; cat "$work/bad.err"; exit 1; }
      cmp -s "$work/good.out" "$work/bad.out" || { echo "FAIL ($gc): the fault changed the program's output"; exit 1; }
      echo "$gc: $unbarriered accesses without a barrier, 0 violations; with $fault: $bad violations"
    done
    # objprof-lua (not the check build) refuses the fault.
    if OBJPROF_LUA_ELIM=1 OBJPROF_LUA_ELIM_FAULT=$fault "${emu[@]}" "$bin/objprof-lua" "$script" >"$work/out" 2>&1; then
      echo "FAIL: objprof-lua accepted OBJPROF_LUA_ELIM_FAULT"; exit 1
    fi
    grep -q "only objprof-lua-check" "$work/out" || { cat "$work/out"; exit 1; }
    ;;
  dump)
    # A function whose table accesses the pass rewrites, dumped with and without debug info.
    cat >"$work/dump.lua" <<'LUA'
local src = [[
  local t = {x = 1}
  for i = 1, 10 do t.x = t.x + i; t[i] = t.x end
  return t.x, #t, t[10]
]]
local f = assert(load(src, "=dumped"))
local out = assert(io.open(arg[1], "wb"))
out:write(string.dump(f), string.dump(f, true))
out:close()
print(f())
LUA
    "${emu[@]}" "$bin/lua-stock" "$work/dump.lua" "$work/stock.bin" >"$work/stock.out"
    OBJPROF_LUA_ELIM=1 OBJPROF_LUA_STATS=1 OBJPROF_LUA_REPORT=0 "${emu[@]}" "$bin/objprof-lua" "$work/dump.lua" "$work/elim.bin" \
      >"$work/elim.out" 2>"$work/elim.err"
    rewritten="$(sed -n 's/^objprof: elim: .* \([0-9]*\) rewritten.*/\1/p' "$work/elim.err")"
    [[ "${rewritten:-0}" -gt 0 ]] || { echo "FAIL: nothing was rewritten:"; cat "$work/elim.err"; exit 1; }
    cmp "$work/stock.bin" "$work/elim.bin" || { echo "FAIL: string.dump differs from stock Lua's"; exit 1; }
    cmp -s "$work/stock.out" "$work/elim.out" || { echo "FAIL: the results differ"; exit 1; }
    echo "dump: $rewritten accesses rewritten; string.dump is byte-identical to stock Lua's ($(stat -c %s "$work/stock.bin") bytes)"
    # Lua does not verify undumped code: a chunk whose first opcode is past Lua's table loads,
    # and the pass leaves it as it is (no crash, no rewrite). It is never run.
    cat >"$work/bad.lua" <<'LUA'
local s = string.dump(assert(load("local t = {} t.x = 1 return t.x")), true)
-- a 31-byte header, the upvalue count, the stripped source, two line numbers, three bytes,
-- and the code size (one byte with its high bit set): the first instruction is byte 40
assert(s:byte(32) == 1 and s:byte(33) == 0x80 and s:byte(39) & 0x80 ~= 0, "unexpected dump layout")
local bad = s:sub(1, 39) .. string.char(0x7f | (s:byte(40) & 0x80)) .. s:sub(41)
print(type(load(bad, "=bad", "b")))
LUA
    OBJPROF_LUA_ELIM=1 OBJPROF_LUA_STATS=1 OBJPROF_LUA_REPORT=0 "${emu[@]}" "$bin/objprof-lua" "$work/bad.lua" >"$work/bad.out" 2>"$work/bad.err" ||
      { echo "FAIL: loading a malformed chunk:"; cat "$work/bad.err"; exit 1; }
    grep -q '^function$' "$work/bad.out" && grep -q ' 1 prototypes left as they were$' "$work/bad.err" ||
      { echo "FAIL: the malformed chunk was not left as it was:"; cat "$work/bad.out" "$work/bad.err"; exit 1; }
    echo "dump: a chunk with an opcode past Lua's table is left as it is"
    ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
