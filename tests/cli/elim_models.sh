#!/usr/bin/env bash
# `objprof elim`'s safepoint models from the command line: the assumptions (root marks most)
# remove more on a generated corpus and the checker agrees; root marks keep availability across
# a call that may GC; --safepoints=summaries on an IR file leaves its calls
# as written; bad option values and --context inputs that are not classes are refused.
# Usage: elim_models.sh BIN_DIR   (EMULATOR: e.g. qemu-aarch64 for a cross build)
set -euo pipefail
bin="$1"
run() { ${EMULATOR:-} "$bin/objprof" elim "$@"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
removed() { sed -n 's/.* \([0-9]*\) removed (.*/\1/p' "$1" | tail -1; }

run --generate=3:60:30 --check 40 >"$work/plain.out" || fail "plain: exit $?"
run --generate=3:60:30 --check 40 --assume=allocation-marks,receiver >"$work/assumed.out" || fail "assumed: exit $?"
grep -q ", 0 violations$" "$work/assumed.out" || fail "assumed: $(tail -1 "$work/assumed.out")"
[ "$(removed "$work/assumed.out")" -ge "$(removed "$work/plain.out")" ] || fail "the assumptions removed less"
run --generate=3:60:30 --check 40 --assume=allocation-marks,receiver,root-marks >"$work/roots.out" || fail "root marks: exit $?"
grep -q ", 0 violations$" "$work/roots.out" || fail "root marks: $(tail -1 "$work/roots.out")"
[ "$(removed "$work/roots.out")" -gt "$(removed "$work/assumed.out")" ] || fail "root marks removed no more"

cat >"$work/calls.ir" <<'IR'
type T { x: int }
func f(this v0) regs 2 {
entry:
  v1 = getfield v0, T.x #1
  call g()
  v1 = getfield v0, T.x #2
  ret v1
}
IR
run "$work/calls.ir" --safepoints=summaries --assume=receiver --check 50 >"$work/calls.out" || fail "calls: exit $?"
grep -q "func f: 2 accesses, 1 kept, 1 removed" "$work/calls.out" || fail "calls: $(cat "$work/calls.out")"
# The call may GC (g is not in the program), yet v0 is live across it: with root marks the GC
# marks it again, so only the first access keeps its barrier, and the checker agrees.
run "$work/calls.ir" --assume=root-marks --check 50 >"$work/calls_roots.out" || fail "calls, root marks: exit $?"
grep -q "func f: 2 accesses, 1 kept, 1 removed" "$work/calls_roots.out" || fail "calls, root marks: $(cat "$work/calls_roots.out")"
run "$work/calls.ir" --check 50 >"$work/calls_exact.out" || fail "calls, exact: exit $?"
grep -q "func f: 2 accesses, 2 kept, 0 removed" "$work/calls_exact.out" || fail "calls, exact: $(cat "$work/calls_exact.out")"

set +e
run --generate=1:5:5 --assume=everything >"$work/bad.out" 2>&1
[ $? -ne 0 ] || fail "--assume=everything was accepted"
grep -q "everything" "$work/bad.out" || fail "no message names the bad value: $(cat "$work/bad.out")"
run "$work/calls.ir" --safepoints=summaries --context="$work/calls.ir" >"$work/ctx.out" 2>&1
[ $? -eq 2 ] || fail "--context with an IR file: expected exit 2"
grep -q "context takes .class, .jar or .jmod" "$work/ctx.out" || fail "context: $(cat "$work/ctx.out")"
echo ok
