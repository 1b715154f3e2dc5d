#!/usr/bin/env bash
# Installs every Debian package that codecvisor's build, tests and tools need.
# Idempotent, and silent when nothing is missing. Used by the README's
# commands and by .ci/run.
set -euo pipefail

packages=(
  bazel-bootstrap bazel-rules-cc bazel-rules-java bazel-skylib bazel-platforms
  default-jdk-headless
  clang libclang-rt-14-dev lld pkg-config
  capnproto libcapnp-dev
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev ffmpeg
  libdav1d-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libabsl-dev libseccomp-dev libtomlplusplus-dev libcli11-dev
  python3-dev pybind11-dev python3-numpy python3-torch python3-pytest python3-av python3-pip
  python3-setuptools python3-wheel python3-dask python3-distributed
  jq gdb
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "bootstrap: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
