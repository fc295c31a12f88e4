#!/usr/bin/env bash
# Sets up every dependency (idempotent), builds the release configuration and runs the demo:
# the simulated runtime runs the ListLeak workload under the profiler and ends with the online
# leak report, naming the leaking allocation site. Extra arguments go to `objprof run`
# (see `build/bin/objprof run --help`), e.g. `scripts/demo.sh --gc=marksweep`.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target objprof_cli
exec build/bin/objprof run listleak "$@"
