#!/usr/bin/env bash
# Installs objprof from BUILD_DIR into a temporary prefix, then builds and runs the
# out-of-tree consumer (tests/package/consumer) twice: with find_package(objprof) and with
# pkg-config. Exits non-zero if any step fails or a consumer reports a wrong result.
#   tests/package/run_consumers.sh BUILD_DIR CXX_COMPILER
set -euo pipefail
build="$1"
cxx="$2"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"

echo "--- find_package(objprof)"
cmake -S "$here/consumer" -B "$work/cmake-consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/cmake-consumer" >"$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/cmake-consumer/consumer" cmake

echo "--- pkg-config objprof"
pc_dir="$(dirname "$(find "$work/prefix" -name objprof.pc -print -quit)")"
flags="$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs objprof)"
echo "pkg-config: $flags"
# shellcheck disable=SC2086  # the flags are words
"$cxx" -std=c++20 -O2 "$here/consumer/main.cc" -o "$work/pkg-consumer" $flags
"$work/pkg-consumer" pkg-config
