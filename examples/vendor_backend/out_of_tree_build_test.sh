#!/usr/bin/env bash
# The vendor's build of the dav1d plugin, out of tree: an SDK prefix holding
# only codecvisor_backend.h, `make SDK_PREFIX=...` in a copy of this folder,
# `make install PREFIX=...`, then checks of what was installed: the library
# exports codecvisor_backend_v1 and nothing else, and the installed manifest
# names a relative library that exists beside it.
set -euo pipefail

fail() { echo "FAIL: $*" >&2; exit 1; }

# Runfiles: this package's files and the SDK header, wherever Bazel put them.
here="$(cd "$(dirname "$0")" && pwd)"
src="${TEST_SRCDIR:-}/${TEST_WORKSPACE:-codecvisor}/examples/vendor_backend"
[ -f "$src/Makefile" ] || src="$here"
header="$src/../../backends/sdk/codecvisor_backend.h"
[ -f "$header" ] || fail "SDK header not found at $header"

work="$(mktemp -d "${TEST_TMPDIR:-/tmp}/dav1d_oot.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/sdk/include/codecvisor" "$work/plugin" "$work/install"
cp "$header" "$work/sdk/include/codecvisor/"
# Only the plugin's own files: no other codecvisor source is reachable.
for f in Makefile dav1d.toml libcodecvisor_dav1d.lds "$src"/*.cc "$src"/*.h; do
  cp -L "$src/$(basename "$f")" "$work/plugin/"
done
rm -f "$work/plugin"/*_test.cc "$work/plugin"/test_support.*

make -C "$work/plugin" SDK_PREFIX="$work/sdk" CXX="${CXX:-c++}" -j2 >"$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; fail "make failed"; }
make -C "$work/plugin" install PREFIX="$work/install" >>"$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; fail "make install failed"; }
grep -q -- "-DDAV1D_PLUGIN_INSTALLED_SDK" "$work/build.log" || fail "not built against the installed SDK"

dir="$work/install/lib/codecvisor/backends"
manifest="$dir/dav1d.toml"
[ -f "$manifest" ] || fail "no manifest at $manifest"
library="$(sed -n 's/^library *= *"\([^"]*\)".*/\1/p' "$manifest")"
[ -n "$library" ] || fail "the manifest names no library"
case "$library" in /*) fail "the manifest's library '$library' is absolute" ;; esac
[ -f "$dir/$library" ] || fail "the manifest's library $dir/$library does not exist"
grep -q '^name = "dav1d"' "$manifest" || fail "manifest name is not dav1d"
grep -q '^devices = \["dav1d"\]' "$manifest" || fail "manifest devices are not [\"dav1d\"]"

exports="$(nm -D --defined-only "$dir/$library" | awk '{print $3}' | sort -u)"
[ "$exports" = "codecvisor_backend_v1" ] || fail "exports are not just codecvisor_backend_v1: $exports"
# Every dependency resolves (no codecvisor library needed at run time).
if ldd "$dir/$library" | grep -q "not found"; then
  ldd "$dir/$library" >&2
  fail "unresolved shared libraries"
fi
echo "PASS: out-of-tree build exports only codecvisor_backend_v1; manifest -> $library"
