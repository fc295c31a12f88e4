#!/usr/bin/env bash
# `objprof run --cache=profile --assume=allocation-marks`: the cache chosen per site from a
# training run and the pass under the allocation-marks model (and the root-marks model), interpreted and compiled. The
# leak report must be the one of the default run, the pass must keep fewer sites with the
# assumption, the plan must be printed, and bad values must be refused with exit status 1.
# Usage: run_cache_plan.sh BIN_DIR   (EMULATOR: e.g. qemu-aarch64 for a cross build)
set -euo pipefail
bin="$1"
run() { ${EMULATOR:-} "$bin/objprof" run "$@"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
kept() { sed -n 's/.*the global pass kept \([0-9]*\) of.*/\1/p' "$1"; }

run listleak --quiet --size=300 >"$work/default.out" 2>&1 || fail "default run: exit $?"
for exec in interp jit; do
  out="$work/$exec.out"
  run listleak --quiet --size=300 --exec="$exec" --cache=profile --assume=allocation-marks >"$out" 2>&1 || fail "$exec: exit $?"
  grep -q "pass global (allocations mark)" "$out" || fail "$exec: the header does not name the assumption: $(cat "$out")"
  grep -Eq "cache per site, from a training run at size 150: [0-9]+ compare, [0-9]+ store only, [0-9]+ none of [0-9]+ kept sites" "$out" \
    || fail "$exec: no plan line: $(cat "$out")"
  diff <(sed -n '/^leak report/,$p' "$work/default.out") <(sed -n '/^leak report/,$p' "$out") >/dev/null \
    || fail "$exec: the leak report differs from the default run's"
  [ "$(kept "$out")" -lt "$(kept "$work/default.out")" ] || fail "$exec: allocation marks removed no access site"
  roots="$work/$exec.roots.out"
  run listleak --quiet --size=300 --exec="$exec" --assume=allocation-marks,root-marks >"$roots" 2>&1 || fail "$exec, root marks: exit $?"
  grep -q "pass global (allocations and GCs' roots mark)" "$roots" || fail "$exec: the header does not name root marks: $(cat "$roots")"
  diff <(sed -n '/^leak report/,$p' "$work/default.out" | sed 's/0x[0-9a-f]*//g') \
       <(sed -n '/^leak report/,$p' "$roots" | sed 's/0x[0-9a-f]*//g') >/dev/null \
    || fail "$exec, root marks: the leak report differs from the default run's"
  [ "$(kept "$roots")" -lt "$(kept "$out")" ] || fail "$exec: root marks removed no access site"
done

expect_refused() {
  local what="$1"; shift
  set +e
  run listleak --quiet "$@" >"$work/bad.out" 2>&1
  local rc=$?
  set -e
  [ "$rc" = 1 ] || fail "$what: exit $rc, expected 1"
  grep -q -- "$what" "$work/bad.out" || fail "$what: the message does not name it: $(cat "$work/bad.out")"
}
expect_refused "--cache must be" --cache=sometimes
expect_refused "--cache=profile" --cache=profile --barrier=nocache-racy
expect_refused "--assume takes" --assume=receiver
echo "ok: planned cache and allocation marks, interpreted and compiled; the default run's leak report; bad values refused"
