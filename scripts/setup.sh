#!/usr/bin/env bash
# Installs everything objprof needs to build and test, natively and for arm64 under qemu-user.
# Idempotent: when every package is already present it installs nothing and returns at once.
set -euo pipefail

native_arch="$(dpkg --print-architecture)"
native_packages=(
  build-essential cmake ninja-build pkg-config catch2 libcli11-dev nlohmann-json3-dev
  qemu-user g++-aarch64-linux-gnu
  # javac, jar and jmod: the JVM importer's tests compile and pack a probe class.
  default-jdk-headless
  # clang with libFuzzer: the fuzz preset (tests/fuzz, docs/fuzzing.md). Its runtimes are in
  # libclang-rt-14-dev, listed with the Multi-Arch packages below.
  clang
  # Headless browser for the HTML report test (tests/analysis/test_html_chromium.cc).
  chromium
  # Lua 5.4's source package is unpacked with dpkg-source and patched (embed/lua); Debian's
  # pure-Lua libraries are real programs the Lua tests run under objprof.
  dpkg-dev patch xz-utils lua-dkjson lua-penlight
  # Multi-Arch: same libraries are named with their architecture, or dpkg-query would also
  # answer for the arm64 copy.
  "libasmjit-dev:$native_arch" "libtbb-dev:$native_arch" "libboost-dev:$native_arch"
  "libbenchmark-dev:$native_arch" "libfmt-dev:$native_arch" "libzip-dev:$native_arch"
  "libclang-rt-14-dev:$native_arch"
)
# Multiarch arm64 -dev packages: the arm64 cross build links against these.
arm64_packages=(
  libasmjit-dev:arm64 libtbb-dev:arm64 libboost-dev:arm64 libbenchmark-dev:arm64
  libfmt-dev:arm64 libzip-dev:arm64 libstdc++-12-dev:arm64
)

missing=()
for pkg in "${native_packages[@]}" "${arm64_packages[@]}"; do
  # dpkg-query prints "install ok installed" only for fully installed packages.
  if [[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

fetch_lua() {
  # Debian's lua5.4 source with objprof's hook patch (idempotent: no network once present).
  "$(dirname "$0")/../embed/lua/fetch-lua-source.sh" >/dev/null
}

if ((${#missing[@]} == 0)); then
  echo "setup: all dependencies present"
  fetch_lua
  exit 0
fi

sudo_cmd=()
if ((EUID != 0)); then sudo_cmd=(sudo); fi

echo "setup: installing ${missing[*]}"
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  "${sudo_cmd[@]}" dpkg --add-architecture arm64
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fetch_lua
echo "setup: done"
