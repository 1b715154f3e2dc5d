#!/usr/bin/env bash
# Installs codecvisor into a prefix, in the layout core/install_layout.cc
# discovers next to an installed CLI:
#
#   PREFIX/bin/codecvisor                          the CLI
#   PREFIX/libexec/codecvisor/codecvisor-backend   the trusted runner
#   PREFIX/libexec/codecvisor/codecvisor-decode-inprocess  the Python
#                                                  bench's in-process baseline
#   PREFIX/lib/libcodecvisor.so.0.1.0              the C++ library, with its
#   PREFIX/lib/libcodecvisor.so.0, libcodecvisor.so  soname and link names
#   PREFIX/lib/pkgconfig/codecvisor.pc             `pkg-config codecvisor`
#   PREFIX/include/codecvisor/*.h                  the C++ API (codecvisor.h)
#   PREFIX/include/codecvisor/codecvisor_backend.h the vendor SDK header
#   PREFIX/lib/python3/site-packages/codecvisor/   the Python package
#   PREFIX/lib/codecvisor/backends/cpu.toml        the built-in backend's manifest
#   PREFIX/lib/codecvisor/backends/libcodecvisor_cpu.so
#   PREFIX/lib/pkgconfig/codecvisor-backend.pc     `pkg-config codecvisor-backend`: the SDK
#   PREFIX/share/codecvisor/README.md              the SDK README, for backend vendors
#   PREFIX/share/codecvisor/skeleton/              a minimal backend to start from
#
# The CLI finds the runner and the backends relative to its own path, and
# manifests name their libraries relative to themselves, so the tree keeps
# working after it is moved. Idempotent: each file is copied to a temporary
# name beside its destination and renamed over it, so re-installing over a
# tree in use never leaves a half-written file.
#
# Usage: bazel run [-c opt] //:install -- --prefix DIR
# (a relative DIR is taken from the folder `bazel run` was started in).
set -euo pipefail

usage() {
  echo "usage: bazel run [-c opt] //:install -- --prefix DIR" >&2
  echo "installs bin/codecvisor, libexec/codecvisor/ (codecvisor-backend, codecvisor-decode-inprocess), lib/libcodecvisor.so," >&2
  echo "lib/pkgconfig/codecvisor.pc, include/codecvisor/ (the C++ API and the SDK header)," >&2
  echo "lib/python3/site-packages/codecvisor/ (the Python package)" >&2
  echo "lib/codecvisor/backends/ (cpu.toml, libcodecvisor_cpu.so)," >&2
  echo "and for backend vendors lib/pkgconfig/codecvisor-backend.pc and share/codecvisor/ (the SDK README, a skeleton plugin)" >&2
}

prefix=""
while (($#)); do
  case $1 in
    --prefix) (($# >= 2)) || { echo "install: --prefix needs a folder" >&2; usage; exit 2; }; prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "install: unknown argument '$1'" >&2; usage; exit 2 ;;
  esac
done
if [[ -z $prefix ]]; then
  echo "install: no --prefix given: say where to install, e.g. --prefix \$HOME/.local" >&2
  usage
  exit 2
fi
# `bazel run` starts us in our runfiles folder; a relative prefix means the
# user's folder.
if [[ $prefix != /* ]]; then prefix="${BUILD_WORKING_DIRECTORY:-$PWD}/$prefix"; fi

# The built files, through runfiles: RUNFILES_DIR (tests, some launchers),
# else the .runfiles folder beside this script (bazel run, direct calls).
runfiles=""
for candidate in "${RUNFILES_DIR:-}" "$0.runfiles" "${TEST_SRCDIR:-}"; do
  if [[ -n $candidate && -e $candidate/codecvisor/tools/codecvisor ]]; then
    runfiles=$candidate
    break
  fi
done
if [[ -z $runfiles ]]; then
  echo "install: cannot find the built files (no runfiles next to $0); run it with 'bazel run //:install -- --prefix DIR'" >&2
  exit 1
fi
src="$runfiles/codecvisor"

# put MODE SOURCE DEST: copies SOURCE (following runfiles symlinks) to DEST.
put() {
  local mode=$1 from=$2 to=$3
  [[ -r $from ]] || { echo "install: missing built file $from" >&2; exit 1; }
  mkdir -p "$(dirname "$to")"
  local tmp
  tmp="$(dirname "$to")/.$(basename "$to").install.$$"
  # cp -L then chmod, not install(1): the runfiles entries are symlinks and
  # Bazel's outputs are read-only.
  cp -L "$from" "$tmp"
  chmod "$mode" "$tmp"
  mv -f "$tmp" "$to"
  echo "installed $to"
}

put 0755 "$src/tools/codecvisor" "$prefix/bin/codecvisor"
put 0755 "$src/backends/sdk/runner/codecvisor-backend" "$prefix/libexec/codecvisor/codecvisor-backend"
put 0755 "$src/tools/bench/codecvisor-decode-inprocess" "$prefix/libexec/codecvisor/codecvisor-decode-inprocess"
put 0644 "$src/backends/sdk/codecvisor_backend.h" "$prefix/include/codecvisor/codecvisor_backend.h"
for header in "$src"/api/include/codecvisor/*.h; do
  put 0644 "$header" "$prefix/include/codecvisor/$(basename "$header")"
done
pc="$src/api/codecvisor.pc"
version=$(sed -n 's/^Version: //p' "$pc")
soname="libcodecvisor.so.${version%%.*}"
put 0755 "$src/api/$soname" "$prefix/lib/libcodecvisor.so.$version"
# link NAME TARGET: PREFIX/lib/NAME -> TARGET, replaced atomically.
link() {
  ln -sfn "$2" "$prefix/lib/.$1.install.$$"
  mv -fT "$prefix/lib/.$1.install.$$" "$prefix/lib/$1"
  echo "installed $prefix/lib/$1"
}
link "$soname" "libcodecvisor.so.$version"
link libcodecvisor.so "$soname"
put 0644 "$pc" "$prefix/lib/pkgconfig/codecvisor.pc"
py="$prefix/lib/python3/site-packages/codecvisor"
for module in "$src"/python/codecvisor/*.py; do
  put 0644 "$module" "$py/$(basename "$module")"
done
put 0644 "$src/python/codecvisor/py.typed" "$py/py.typed"  # its annotations are for type checkers
put 0755 "$src/python/codecvisor/_codecvisor.so" "$py/_codecvisor.so"
put 0644 "$src/backends/cpu/cpu.toml" "$prefix/lib/codecvisor/backends/cpu.toml"
put 0755 "$src/backends/cpu/libcodecvisor_cpu.so" "$prefix/lib/codecvisor/backends/libcodecvisor_cpu.so"
put 0644 "$src/backends/sdk/codecvisor-backend.pc" "$prefix/lib/pkgconfig/codecvisor-backend.pc"
put 0644 "$src/backends/sdk/README.md" "$prefix/share/codecvisor/README.md"
for file in Makefile skeleton.c skeleton.lds skeleton.toml; do
  put 0644 "$src/backends/sdk/skeleton/$file" "$prefix/share/codecvisor/skeleton/$file"
done
echo "codecvisor installed in $prefix: run $prefix/bin/codecvisor backends"
