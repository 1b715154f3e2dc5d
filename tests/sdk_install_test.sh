#!/usr/bin/env bash
# The installed SDK, as a new vendor uses it: `bazel run //:install` into a
# prefix, the tree moved, then, with nothing but the installed files and
# `make`: the skeleton plugin (PREFIX/share/codecvisor/skeleton) builds and
# passes `make check` (conformance on a sample it makes), and a YUV4MPEG2
# backend (examples/y4m_backend, a format the suite's generator cannot make)
# builds, installs on CODECVISOR_BACKEND_PATH and passes
# `codecvisor conformance --backend y4m --sample clip.y4m`, with the
# reference from the ffmpeg CLI and with one of its own. A broken reference
# and a declared PSNR under the floor fail, saying why.
set -euo pipefail

installer="$TEST_SRCDIR/codecvisor/install"
examples="$TEST_SRCDIR/codecvisor/examples/y4m_backend"
tmp="$TEST_TMPDIR"
ffmpeg=(/usr/bin/ffmpeg -nostdin -v error -y)
out="$tmp/out"
err="$tmp/err"
source "$TEST_SRCDIR/codecvisor/tests/sh_checks.sh"
# Nothing that would point the installed tree back at Bazel's runfiles.
installed() {
  env -u RUNFILES_DIR -u RUNFILES_MANIFEST_FILE -u TEST_SRCDIR -u JAVA_RUNFILES -u CODECVISOR_RUNNER \
    -u CODECVISOR_BUILTIN_BACKENDS -u CODECVISOR_BACKEND_PATH TMPDIR="$tmp" "$@"
}

expect 0 "install" "$installer" --prefix "$tmp/a"
mv "$tmp/a" "$tmp/b"
prefix="$tmp/b"
for f in share/codecvisor/README.md share/codecvisor/skeleton/Makefile share/codecvisor/skeleton/skeleton.c \
  share/codecvisor/skeleton/skeleton.lds share/codecvisor/skeleton/skeleton.toml \
  lib/pkgconfig/codecvisor-backend.pc include/codecvisor/codecvisor_backend.h; do
  holds "installed $f" [ -f "$prefix/$f" ]
done
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
holds "pkg-config finds the moved SDK header" \
  [ -f "$(pkg-config --variable=includedir codecvisor-backend)/codecvisor/codecvisor_backend.h" ]
holds "pkg-config names the moved CLI" [ -x "$(pkg-config --variable=codecvisor codecvisor-backend)" ]
readme="$prefix/share/codecvisor/README.md"
# The installed README is backends/sdk/README.md byte for byte, read where
# no source tree is: it names no file or folder of the repository (a test,
# an example, a backend's source, a .cc, .bzl or .h file). `backends/` after
# a `/` is the installed PREFIX/lib/codecvisor/backends/, not a source path;
# codecvisor_backend.h is the one header the SDK installs, so the only .h
# name it may give.
holds "the installed README names no file of the source repository" \
  bash -c "! grep -nE '(^|[^A-Za-z])(tests|examples|docs|core|tools|runner)/|(^|[^A-Za-z/])backends/|\.(cc|bzl)\b' '$readme'"
holds "the installed README names no header but the SDK's own" \
  bash -c "! grep -oE '[A-Za-z0-9_]+\.h\b' '$readme' | grep -vx 'codecvisor_backend\.h'"
# Every file the installed README names under share/ is there.
for path in $(grep -o 'share/codecvisor/[A-Za-z0-9_./-]*[A-Za-z0-9_]' "$readme" | sort -u); do
  holds "the README's $path exists" [ -e "$prefix/$path" ]
done

# The skeleton, copied out of the tree as a vendor starts.
# The last conformance run's 17 checks all passed; under AddressSanitizer
# (an instrumented codecvisor), session_leak has nothing to measure and is
# skipped, the others passed.
every_check_passed() {
  grep -qE ': 18 passed, 0 failed, 0 skipped$' "$out" ||
    { grep -qE ': 17 passed, 0 failed, 1 skipped$' "$out" && grep -qE '^SKIP  session_leak .*AddressSanitizer' "$out"; }
}
cp -r "$prefix/share/codecvisor/skeleton" "$tmp/skeleton"
expect 0 "skeleton: make" installed make -C "$tmp/skeleton"
holds "skeleton: exports only the entry symbol" \
  [ "$(nm -D --defined-only "$tmp/skeleton/libcodecvisor_skeleton.so" | awk '{print $3}')" = codecvisor_backend_v1 ]
expect 0 "skeleton: make check (conformance on skeleton_sample.ppm)" installed make -C "$tmp/skeleton" check
holds "skeleton: every check passed" every_check_passed
holds "skeleton: its sample was checked" grep -q "PASS  frames_skeleton_sample_ppm .*bit-exact" "$out"
# Installed, it is checked by name on the sample installed beside it.
expect 0 "skeleton: make install" installed make -C "$tmp/skeleton" install BACKEND_DIR="$tmp/plugins_skeleton"
expect 0 "skeleton: conformance --backend skeleton, installed" \
  installed CODECVISOR_BACKEND_PATH="$tmp/plugins_skeleton" "$prefix/bin/codecvisor" conformance --backend skeleton
holds "skeleton installed: every check passed" every_check_passed
holds "skeleton installed: its installed sample was checked" grep -q "PASS  frames_skeleton_sample_ppm .*bit-exact" "$out"

# The y4m backend, from its own sources and Makefile only.
mkdir -p "$tmp/y4m" "$tmp/plugins"
for f in Makefile y4m_backend.c y4m.lds y4m.toml; do cp -L "$examples/$f" "$tmp/y4m/"; done
expect 0 "y4m: make" installed make -C "$tmp/y4m"
expect 0 "y4m: make install" installed make -C "$tmp/y4m" install BACKEND_DIR="$tmp/plugins"
"${ffmpeg[@]}" -f lavfi -i testsrc2=size=160x90:rate=24 -frames:v 36 -pix_fmt yuv420p "$tmp/clip.y4m"
cd "$tmp"
y4m_conformance() { installed CODECVISOR_BACKEND_PATH="$tmp/plugins" "$prefix/bin/codecvisor" conformance "$@"; }
expect 0 "y4m: conformance --sample clip.y4m" y4m_conformance --backend y4m --sample clip.y4m
holds "y4m: every check passed" every_check_passed
holds "y4m: frames held to its PSNR against ffmpeg" grep -q "PASS  frames_clip_y4m .*against ffmpeg's RGB24" "$out"
expect 0 "y4m: conformance --backend y4m on its installed sample" y4m_conformance --backend y4m
holds "y4m: the installed sample was checked" grep -q "PASS  frames_y4m_sample_y4m " "$out"

# Its own reference: raw RGB24 frames plus a timestamps file.
"${ffmpeg[@]}" -i clip.y4m -f rawvideo -pix_fmt rgb24 "$tmp/clip.rgb24"
{
  printf 'width 160\nheight 90\ntime_base 1/24\ncodec rawvideo\n'
  for i in $(seq 0 35); do echo "$i 1"; done
} >"$tmp/clip.timestamps"
expect 0 "y4m: conformance with its own reference" \
  y4m_conformance --backend y4m --sample clip.y4m --reference clip.rgb24 --reference-timestamps clip.timestamps
holds "y4m: compared with the given reference" grep -q "PASS  frames_clip_y4m .*against the reference clip.rgb24" "$out"

# A broken reference: 20 rows of frame 5 set to white.
cp clip.rgb24 broken.rgb24
chmod u+w broken.rgb24
frame=$((160 * 90 * 3))
head -c 9600 /dev/zero | tr '\0' '\377' | dd of=broken.rgb24 bs=1 seek=$((5 * frame + 4800)) conv=notrunc status=none
expect 1 "y4m: a broken reference fails" \
  y4m_conformance --backend y4m --sample clip.y4m --reference broken.rgb24 --reference-timestamps clip.timestamps
holds "y4m: the failure names the frame, its PSNR and where" \
  grep -q "FAIL  frames_clip_y4m .*frame 5 of clip.y4m: below the required 35.00 dB against the reference broken.rgb24: PSNR [0-9.]* dB (R .*worst 16x16 block at x=" "$out"
head -c $((12 * frame)) clip.rgb24 >short.rgb24
expect 1 "y4m: a reference of the wrong size fails" \
  y4m_conformance --backend y4m --sample clip.y4m --reference short.rgb24 --reference-timestamps clip.timestamps
holds "y4m: the failure says the sizes" grep -q "reference frames short.rgb24: $((12 * frame)) bytes, but clip.timestamps lists 36 frames" "$out"

# A backend that declares 1 dB: refused below the 30 dB floor, accepted
# when the run lowers the floor.
mkdir -p "$tmp/y4m_low" "$tmp/plugins_low"
cp "$tmp/y4m"/{Makefile,y4m_backend.c,y4m.lds,y4m.toml} "$tmp/y4m_low/"
sed -i 's/psnr_threshold_db = 35,/psnr_threshold_db = 1,/' "$tmp/y4m_low/y4m_backend.c"
holds "y4m_low: the claim was lowered" grep -q "psnr_threshold_db = 1," "$tmp/y4m_low/y4m_backend.c"
expect 0 "y4m_low: make install" installed make -C "$tmp/y4m_low" install BACKEND_DIR="$tmp/plugins_low"
low_conformance() { installed CODECVISOR_BACKEND_PATH="$tmp/plugins_low" "$prefix/bin/codecvisor" conformance "$@"; }
expect 1 "y4m_low: a declared 1 dB fails" low_conformance --backend y4m --sample clip.y4m
holds "y4m_low: the handshake says the floor" \
  grep -q "FAIL  handshake .*psnr_threshold_db is 1.00 dB (exact_cpu_output 0), below the floor of 30.00 dB.*--min-psnr-floor" "$out"
holds "y4m_low: frames are held to the floor" grep -q "PASS  frames_clip_y4m .*at least 30.00 dB" "$out"
expect 0 "y4m_low: --min-psnr-floor 1 accepts it" low_conformance --backend y4m --sample clip.y4m --min-psnr-floor 1

# The generator's codecs are refused with a pointer to --sample.
sed 's/^samples = .*/codecs = ["y4m"]/' "$tmp/y4m/y4m.toml" >"$tmp/y4m/bad.toml"
expect 1 "a manifest asking for y4m samples fails" installed "$prefix/bin/codecvisor" conformance \
  --backend-manifest "$tmp/y4m/bad.toml"
holds "it points at samples and --sample" grep -q "cannot make 'y4m'.*samples.*--sample" "$err"

if ((fails)); then
  echo "$fails check(s) failed" >&2
  exit 1
fi
echo "all checks passed"
