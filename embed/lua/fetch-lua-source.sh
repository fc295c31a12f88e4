#!/usr/bin/env bash
# Fetches Debian's lua5.4 source package, unpacks it with Debian's own patches (security fixes
# included) and applies objprof's hook patch (embed/lua/objprof-hooks.patch) on top. No Lua
# source is kept in this repository.
#
#   embed/lua/fetch-lua-source.sh [DEST]     (default: build/deps/lua5.4)
#
# apt downloads the .dsc and its tarballs from a private deb-src list derived from this
# machine's own apt sources, and checks them against the signed Sources index (hashes in the
# .dsc). Idempotent: when DEST already holds the pinned version with the current patch, it does
# nothing (no network). Prints the patched source directory on its last line.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dest="${1:-$repo/build/deps/lua5.4}"
# The pinned version: Debian 12's lua5.4 with its security updates.
version="${OBJPROF_LUA_DEB_VERSION:-5.4.4-3+deb12u1}"
patch_file="$here/objprof-hooks.patch"
patch_sum="$(sha256sum "$patch_file" | cut -d' ' -f1)"
upstream="${version%%-*}"
tree="$dest/lua5.4-$upstream"
stamp="$tree/.objprof-stamp"
want_stamp="$version $patch_sum"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want_stamp" ]]; then
  echo "$tree"
  exit 0
fi
mkdir -p "$dest"
dsc="$dest/lua5.4_${version}.dsc"
if [[ ! -f "$dsc" ]]; then
  # A private apt configuration: deb-src entries for the suites this machine already uses.
  apt_dir="$dest/apt"
  rm -rf "$apt_dir"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/sources.list.d" "$apt_dir/cache/archives/partial"
  shopt -s nullglob
  for f in /etc/apt/sources.list.d/*.sources; do
    sed -E 's/^Types:.*/Types: deb-src/' "$f" >"$apt_dir/sources.list.d/$(basename "$f")"
  done
  : >"$apt_dir/sources.list"
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "$f" ]] || continue
    sed -nE 's/^deb[[:space:]]+/deb-src /p' "$f" >>"$apt_dir/sources.list"
  done
  shopt -u nullglob
  apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
            -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o "APT::Sandbox::User=root" -q)
  echo "fetch-lua-source: apt-get update (deb-src lists in $apt_dir)" >&2
  apt-get "${apt_opts[@]}" update >&2
  (cd "$dest" && apt-get "${apt_opts[@]}" source --download-only "lua5.4=$version" >&2)
fi
[[ -f "$dsc" ]] || { echo "fetch-lua-source: apt did not produce $dsc" >&2; exit 1; }

# Unpack afresh: Debian's patches (debian/patches/series) are applied by dpkg-source. The .dsc
# was verified by apt against the signed index, so dpkg-source does not need the uploader's key.
rm -rf "$tree"
(cd "$dest" && dpkg-source --no-check -x "$(basename "$dsc")" "$(basename "$tree")" >&2)
patch -d "$tree" -p1 --forward --quiet <"$patch_file"
echo "$want_stamp" >"$stamp"
echo "$tree"
