#!/usr/bin/env bash
# Sets up every dependency (idempotent), builds the release configuration and runs the demo:
# a profiled ListLeak scenario that ends with objprof's leak report. Extra arguments go to
# `objprof demo` (see `build/bin/objprof demo --help`).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target objprof_cli
exec build/bin/objprof demo "$@"
