#!/usr/bin/env bash
# Builds stock Lua and objprof-Lua from one patched tree in several code layouts: the same
# compiler and -O3, plus one alignment option per layout, the same for both interpreters.
# An interpreter's speed depends on where its dispatch loop's handlers land (this VM: stock Lua's
# fannkuch takes 1.02x or 1.21x the default build's time with -falign-labels=16 or
# -falign-jumps=32 -falign-loops=32), so one build of each compares two layouts as much as
# two interpreters; scripts/lua_time_layouts.py times every layout's pair and reports the
# ratio of their geomeans across layouts.
#   scripts/lua_layouts.sh [OUT_DIR]        # default build/lua-layouts; needs a configured build/
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-build/lua-layouts}"
stage="$PWD/build/stage"
lua_src="$(ls -d "$PWD"/build/deps/lua5.4/lua5.4-*/ 2>/dev/null | head -1)"
if [[ ! -f "$stage/lib/cmake/objprof/objprofConfig.cmake" || -z "$lua_src" ]]; then
  echo "lua_layouts: build the release preset first (cmake --preset release && cmake --build --preset release)" >&2
  exit 1
fi
declare -A layouts=(
  [default]=""
  [functions64]="-falign-functions=64"
  [labels16]="-falign-labels=16"
  [jumps32]="-falign-jumps=32 -falign-loops=32"
  [labels32]="-falign-labels=32"
  [functions32]="-falign-functions=32"
  [loops64]="-falign-loops=64"
  [packed]="-fno-align-functions -fno-align-jumps -fno-align-loops -fno-align-labels"
)
mkdir -p "$out"
for name in "${!layouts[@]}"; do
  dir="$out/$name"
  cmake -S embed/lua -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_CXX_FLAGS_RELEASE=-O3 -DNDEBUG ${layouts[$name]}" -DCMAKE_PREFIX_PATH="$stage" \
    -DLUA_SOURCE_DIR="$lua_src" >"$dir.log" 2>&1 || { cat "$dir.log" >&2; exit 1; }
  cmake --build "$dir" --target lua-stock objprof-lua >>"$dir.log" 2>&1 || { tail -30 "$dir.log" >&2; exit 1; }
  echo "$dir: ${layouts[$name]:-(default)}"
done
