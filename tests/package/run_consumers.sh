#!/usr/bin/env bash
# Installs objprof from BUILD_DIR into a temporary prefix, then builds and runs the
# out-of-tree consumers (tests/package/consumer) with find_package(objprof) and with
# pkg-config: the runtime linked with the umbrella (objprof::objprof, objprof.pc) and with the
# runtime core alone (objprof::core, objprof-core.pc), and, when the install has the emitters,
# a JIT emitting the barrier (objprof::emit, objprof-emit.pc). Exits non-zero if any step
# fails, a consumer reports a wrong result, or the core consumer links anything but the core.
#   tests/package/run_consumers.sh BUILD_DIR CXX_COMPILER
set -euo pipefail
build="$1"
cxx="$2"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"

# The core alone must not pull in another layer, libzip or asmjit.
only_core() {  # WHAT LINK_LINE
  if grep -Eq 'objprof_(ir|jvm|analysis|emit)|libzip|-lzip|asmjit' <<<"$2"; then
    echo "$1 links more than the runtime core: $2" >&2
    exit 1
  fi
}

echo "--- find_package(objprof)"
cmake -S "$here/consumer" -B "$work/cmake-consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/cmake-consumer" >"$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/cmake-consumer/consumer" cmake
only_core "objprof::core" "$(ninja -C "$work/cmake-consumer" -t commands consumer_core | tail -n 1)"
"$work/cmake-consumer/consumer_core" cmake-core
emit=no
if [[ -x "$work/cmake-consumer/consumer_emit" ]]; then
  emit=yes
  "$work/cmake-consumer/consumer_emit" cmake-emit
fi

pc_dir="$(dirname "$(find "$work/prefix" -name objprof.pc -print -quit)")"
pkg() {  # WHAT PACKAGE SOURCE [CHECK]
  echo "--- pkg-config $2"
  local flags
  flags="$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs "$2")"
  echo "pkg-config: $flags"
  [[ "${4:-}" == only-core ]] && only_core "objprof-core.pc" "$flags"
  # shellcheck disable=SC2086  # the flags are words
  "$cxx" -std=c++20 -O2 "$here/consumer/$3" -o "$work/pkg-$1" $flags
  "$work/pkg-$1" "pkg-config-$1"
}
pkg all objprof main.cc
pkg core objprof-core main.cc only-core
if [[ $emit == yes ]]; then
  pkg emit objprof-emit main_emit.cc
fi
