#!/usr/bin/env bash
# `objprof run`'s online leak report on the ListLeak workload: under each collector it finds
# the one leaking site as one grouped entry with its path from a root (the list's static), writes the same group as JSON (--leaks-json), shows
# the per-object view on request, finds the same leak whichever way the tracked objects' fates
# reach the detector (--fates), and refuses bad options with a message and exit status 1.
# Usage: run_leak_report.sh BIN_DIR   (EMULATOR: e.g. qemu-aarch64 for a cross build)
set -euo pipefail
bin="$1"
run() { ${EMULATOR:-} "$bin/objprof" run "$@"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for gc in semispace marksweep lazysweep; do
  run listleak --gc="$gc" --quiet --leaks-json="$work/$gc.json" >"$work/$gc.out" 2>&1 || fail "$gc: exit $?"
  grep -q "^leak report (1 site, 1 object" "$work/$gc.out" || fail "$gc: expected one grouped entry: $(cat "$work/$gc.out")"
  grep -q "#1 ListLeak allocated at main bci 4" "$work/$gc.out" || fail "$gc: expected the leaking site first"
  [ "$(grep -c '"site_id"' "$work/$gc.json")" = 1 ] || fail "$gc: expected one group in the JSON"
  grep -q '"method": "main"' "$work/$gc.json" || fail "$gc: JSON names no method main"
  grep -q '"objects": 1,' "$work/$gc.json" || fail "$gc: JSON group is not one object"
  grep -q '"stale_after_bytes": "auto"' "$work/$gc.json" || fail "$gc: JSON lacks the clock's setting"
  grep -q "path from a root: static 0 -> (ListLeak\[\] 0x[0-9a-f]*)\[0\] -> (ListLeak 0x" "$work/$gc.out" \
    || fail "$gc: expected the path from the list's static through element 0"
  grep -q '"root_kind": "static"' "$work/$gc.json" || fail "$gc: JSON group has no path from a static"
done

# The hook checks would make every GC take the hooks: off, so that --fates decides.
for fates in survivors cheaper; do
  for gc in semispace marksweep lazysweep; do
    OBJPROF_CHECK_HOOKS=0 run listleak --gc="$gc" --fates="$fates" --quiet >"$work/f.out" 2>&1 || fail "--fates=$fates $gc: exit $?"
    grep -q "^leak report (1 site, 1 object" "$work/f.out" || fail "--fates=$fates $gc: $(cat "$work/f.out")"
    grep -q "#1 ListLeak allocated at main bci 4" "$work/f.out" || fail "--fates=$fates $gc: expected the leaking site first"
    if [ "$fates" = survivors ]; then  # every GC took the answers
      grep -Eq "fates: ([0-9]+) of \1 GCs told" "$work/f.out" || fail "--fates=survivors $gc: $(grep fates: "$work/f.out")"
    fi
  done
done

run listleak --quiet --leak-view=objects >"$work/objects.out" 2>&1 || fail "objects view: exit $?"
grep -q "^possible leaks, one per object (1;" "$work/objects.out" || fail "objects view: $(cat "$work/objects.out")"

set +e
run listleak --stale-bytes=lots >"$work/bad.out" 2>&1
rc=$?
set -e
[ "$rc" = 1 ] || fail "--stale-bytes=lots: exit $rc, expected 1"
grep -q "stale-bytes" "$work/bad.out" || fail "--stale-bytes=lots: no message naming the option"
set +e
run listleak --leak-view=table >"$work/bad2.out" 2>&1
rc=$?
set -e
[ "$rc" = 1 ] && grep -q "leak-view" "$work/bad2.out" || fail "--leak-view=table: exit $rc, $(cat "$work/bad2.out")"
set +e
run listleak --fates=oracle >"$work/bad3.out" 2>&1
rc=$?
set -e
[ "$rc" = 1 ] && grep -q "fates" "$work/bad3.out" || fail "--fates=oracle: exit $rc, $(cat "$work/bad3.out")"
echo "ok: one grouped leak entry under semispace, marksweep and lazysweep, with every --fates; JSON; per-object view; bad options refused"
