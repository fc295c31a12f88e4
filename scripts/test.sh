#!/usr/bin/env bash
# Sets up every dependency (idempotent), then builds and runs the whole objprof test suite in
# every configuration: native release, native ASan+UBSan, native TSan, the arm64 cross build
# whose tests run under qemu-aarch64, and the fuzz build (clang, libFuzzer + ASan + UBSan) whose
# tests are short deterministic runs of each fuzz target. Exits non-zero if any build or test fails.
#   OBJPROF_PRESETS="release asan"  scripts/test.sh   # a subset
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh

read -r -a presets <<<"${OBJPROF_PRESETS:-release asan tsan arm64 fuzz}"
jobs="$(nproc)"
total_pass=0
total_fail=0
summary=()
for preset in "${presets[@]}"; do
  echo "=== [$preset] configure + build"
  start=$SECONDS
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  echo "=== [$preset] test"
  log="$(mktemp)"
  set +e
  ctest --preset "$preset" -j "$jobs" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  line="$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -1 || true)"
  rm -f "$log"
  if [[ -z "$line" ]]; then
    echo "=== [$preset] no ctest summary (rc=$rc)"
    total_fail=$((total_fail + 1))
    summary+=("$preset: no tests ran")
    continue
  fi
  failed="$(sed -E 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$line")"
  count="$(sed -E 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\2/' <<<"$line")"
  total_pass=$((total_pass + count - failed))
  total_fail=$((total_fail + failed))
  if ((rc != 0 && failed == 0)); then total_fail=$((total_fail + 1)); fi
  summary+=("$preset: $((count - failed)) passed, $failed failed ($((SECONDS - start)) s)")
done

echo "=== summary"
printf '  %s\n' "${summary[@]}"
echo "${total_pass} passed, ${total_fail} failed"
((total_fail == 0))
