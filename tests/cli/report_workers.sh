#!/usr/bin/env bash
# `objprof report --workers N`: the analysis and the report's pass run on N threads, and the
# report is the same whatever N (text and JSON), but for the analyzer's own peak memory (more
# workers, more batches in flight); a worker count of 0 or a word is refused with a message
# naming the option and a nonzero exit status (the command-line parser's).
# Usage: report_workers.sh BIN_DIR   (EMULATOR: e.g. qemu-aarch64 for a cross build)
set -euo pipefail
bin="$1"
cli() { ${EMULATOR:-} "$bin/objprof" "$@"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cli run listleak --gc=marksweep --quiet --trace="$work/t.trace" >/dev/null 2>&1 || fail "objprof run: exit $?"
for n in 1 2 5; do
  cli report "$work/t.trace" --no-progress --workers "$n" >"$work/r$n.txt" 2>"$work/e$n.txt" || fail "--workers $n: exit $?"
  cli report "$work/t.trace" --no-progress -j "$n" --format=json >"$work/r$n.json" 2>>"$work/e$n.txt" || fail "-j $n json: exit $?"
done
grep -q "ListLeak" "$work/r1.txt" || fail "the report names no ListLeak: $(head -20 "$work/r1.txt")"
same() { grep -v -e "analyzer memory:" -e '"analyzer_peak_bytes"' "$1"; }
grep -q '"analyzer_peak_bytes"' "$work/r1.json" || fail "the JSON has no analyzer_peak_bytes to leave out"
for n in 2 5; do
  for f in txt json; do
    diff <(same "$work/r1.$f") <(same "$work/r$n.$f") >"$work/diff" || fail "$f report with $n workers differs from 1: $(head "$work/diff")"
  done
done
for bad in 0 many; do
  set +e
  cli report "$work/t.trace" --no-progress --workers "$bad" >"$work/bad.out" 2>&1
  rc=$?
  set -e
  [ "$rc" != 0 ] || fail "--workers $bad: exit 0, expected a refusal"
  grep -q -- "--workers" "$work/bad.out" || fail "--workers $bad: no message naming the option: $(cat "$work/bad.out")"
done
echo "ok: the same text and JSON report with 1, 2 and 5 workers; --workers 0 and a word refused"
