#!/usr/bin/env bash
# `bazel run //:install`, end to end: installs into a prefix, moves the
# tree, and uses it from its new place with no Bazel runfiles in sight: the
# CLI must find its runner and the built-in cpu backend by its own path
# (core/install_layout.cc), decode through the sandboxed child, and pick up a
# plugin from CODECVISOR_BACKEND_PATH. If examples/vendor_backend exists, it
# is built against the installed SDK header only, installed, and used.
set -euo pipefail

# Under a sanitizer (--sanitizer=NAME from the BUILD file) the installed
# library is instrumented: programs built here against it are too, and
# Python preloads the sanitizer's runtime (base/sanitizer_env.sh).
sanitizer=""
if [[ ${1:-} == --sanitizer=* ]]; then sanitizer=${1#--sanitizer=}; fi
source "$TEST_SRCDIR/codecvisor/base/sanitizer_env.sh"
sanitizer_env "$sanitizer"
cxx=(c++)
if [[ -n $sanitizer ]]; then cxx=(clang++ "${SANITIZER_CFLAGS[@]}"); fi
python_preload=()
if [[ -n $SANITIZER_PRELOAD ]]; then
  python_preload=(LD_PRELOAD="$SANITIZER_PRELOAD" ASAN_OPTIONS="$(python_asan_options)")
fi

installer="$TEST_SRCDIR/codecvisor/install"
tmp="$TEST_TMPDIR"
a="$tmp/a"
b="$tmp/b"
ffmpeg=(/usr/bin/ffmpeg -nostdin -v error)
out="$tmp/out"
err="$tmp/err"
source "$TEST_SRCDIR/codecvisor/tests/sh_checks.sh"
# The installed CLI with none of the variables that would point it back at
# Bazel's runfiles or at another install.
installed() {
  env -u RUNFILES_DIR -u RUNFILES_MANIFEST_FILE -u TEST_SRCDIR -u JAVA_RUNFILES -u CODECVISOR_RUNNER \
    -u CODECVISOR_BUILTIN_BACKENDS -u CODECVISOR_BACKEND_PATH "$@"
}

# The installer's own contract.
expect 2 "no --prefix fails" "$installer"
holds "no --prefix says why" grep -q "no --prefix given" "$err"
expect 2 "unknown argument fails" "$installer" --prefix "$a" --bogus
expect 0 "install" "$installer" --prefix "$a"
cp "$out" "$tmp/install.log"
installed_files=(bin/codecvisor libexec/codecvisor/codecvisor-backend libexec/codecvisor/codecvisor-decode-inprocess
  include/codecvisor/codecvisor_backend.h
  lib/codecvisor/backends/cpu.toml lib/codecvisor/backends/libcodecvisor_cpu.so
  lib/libcodecvisor.so.0.1.0 lib/pkgconfig/codecvisor.pc)
for h in "$TEST_SRCDIR"/codecvisor/api/include/codecvisor/*.h; do
  installed_files+=("include/codecvisor/$(basename "$h")")
done
for m in "$TEST_SRCDIR"/codecvisor/python/codecvisor/*.py; do
  installed_files+=("lib/python3/site-packages/codecvisor/$(basename "$m")")
done
installed_files+=(lib/python3/site-packages/codecvisor/_codecvisor.so lib/python3/site-packages/codecvisor/py.typed)
installed_files+=(lib/pkgconfig/codecvisor-backend.pc share/codecvisor/README.md
  share/codecvisor/skeleton/{Makefile,skeleton.c,skeleton.lds,skeleton.toml})
for f in "${installed_files[@]}" lib/libcodecvisor.so.0 lib/libcodecvisor.so; do
  holds "installed $f" [ -f "$a/$f" ]
  holds "log names $f" grep -qx "installed $a/$f" "$tmp/install.log"
done
holds "soname link" [ "$(readlink "$a/lib/libcodecvisor.so.0")" = libcodecvisor.so.0.1.0 ]
holds "development link" [ "$(readlink "$a/lib/libcodecvisor.so")" = libcodecvisor.so.0 ]
holds "the library's soname" grep -q "SONAME.*libcodecvisor.so.0" <(readelf -d "$a/lib/libcodecvisor.so.0.1.0")
# What each shared object defines for others: its interface, nothing of
# the standard library's or its internals' that could interpose on another's.
exports() { nm -D --defined-only "$1" | awk '{print $3}' | c++filt | sort -u; }
holds "the library exports only codecvisor:: names" \
  [ -z "$(exports "$a/lib/libcodecvisor.so.0.1.0" | grep -v -e '^codecvisor::' -e '^CODECVISOR_0$')" ]
holds "the library exports the API" grep -q '^codecvisor::Host::Create' <(exports "$a/lib/libcodecvisor.so.0.1.0")
holds "... and none of its classes' Impl" [ -z "$(exports "$a/lib/libcodecvisor.so.0.1.0" | grep '::Impl::')" ]
# (A fastbuild link strips it; the sanitizer configurations and -c opt keep it.)
holds "its debug information is DWARF 4 (Debian 12's valgrind reads no 5)" \
  [ -z "$(readelf --debug-dump=info "$a/lib/libcodecvisor.so.0.1.0" | sed -n 's/^ *Version: *//p' | grep -vx 4)" ]
holds "the cpu backend exports only its entry" \
  [ "$(exports "$a/lib/codecvisor/backends/libcodecvisor_cpu.so")" = codecvisor_backend_v1 ]
holds "the extension exports only its init" \
  [ "$(exports "$a/lib/python3/site-packages/codecvisor/_codecvisor.so")" = PyInit__codecvisor ]
holds "CLI executable" [ -x "$a/bin/codecvisor" ]
holds "runner executable" [ -x "$a/libexec/codecvisor/codecvisor-backend" ]
expect 0 "install again (idempotent)" "$installer" --prefix="$a"
holds "no stray files" [ "$(find "$a" -type f | wc -l)" = "${#installed_files[@]}" ]
# A relative prefix is the caller's folder (BUILD_WORKING_DIRECTORY under bazel run).
mkdir -p "$tmp/wd"
expect 0 "relative prefix" env BUILD_WORKING_DIRECTORY="$tmp/wd" "$installer" --prefix rel
holds "relative prefix lands in the working folder" [ -f "$tmp/wd/rel/bin/codecvisor" ]

mv "$a" "$b"
cv="$b/bin/codecvisor"

expect 0 "backends --json" installed "$cv" backends --json
holds "backends lists cpu" grep -qF '"name":"cpu","devices":["cpu"]' "$out"
holds "cpu manifest from the moved tree" grep -qF "$b/lib/codecvisor/backends/cpu.toml" "$out"

video="$tmp/clip.mp4"
"${ffmpeg[@]}" -y -f lavfi -i testsrc=size=96x64:rate=25 -t 1 -c:v libx264 -pix_fmt yuv420p "$video"
# same_as_ffmpeg PPM VIDEO INDEX: the PPM is ffmpeg's rgb24 decode of frame INDEX of VIDEO.
same_as_ffmpeg() {
  cmp "$1" <(printf 'P6\n96 64\n255\n'
    "${ffmpeg[@]}" -i "$2" -vf "select=eq(n\,$3)" -frames:v 1 -f rawvideo -pix_fmt rgb24 -)
}

expect 0 "info" installed "$cv" info "$video" --json
holds "info is the cpu backend's" grep -qF '"backend":"cpu"' "$out"
holds "info has the size" grep -qF '"width":96' "$out"
expect 0 "decode ppm" installed "$cv" decode "$video" --format ppm --indices 0,7 --out "$tmp/ppm"
holds "ppm frame 7 equals ffmpeg" same_as_ffmpeg "$tmp/ppm/frame_000007.ppm" "$video" 7
# Under a debugger: gdb stops the host's other threads while a start's
# child would be in a vfork, and the start hung for good. gdb's own status
# is the program's through $_exitcode; the timeout bounds a hang. (An
# AddressSanitizer build's leak check cannot run under ptrace, and fails
# the program at its exit if left on.)
expect 0 "decode under gdb" installed ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  timeout -s KILL 120 gdb -q -batch -ex run -ex 'quit $_exitcode' \
  --args "$cv" decode "$video" --format ppm --indices 7 --out "$tmp/gdb"
holds "under gdb, frame 7 equals ffmpeg" same_as_ffmpeg "$tmp/gdb/frame_000007.ppm" "$video" 7

# The C++ API from the moved tree, outside Bazel: the README's quick start,
# compiled with `c++ -std=c++20 $(pkg-config --cflags --libs codecvisor)`.
cp "$TEST_SRCDIR/codecvisor/examples/cpp_quickstart/quickstart.cc" "$tmp/quickstart.cc"
expect 0 "pkg-config finds codecvisor in the moved tree" env PKG_CONFIG_PATH="$b/lib/pkgconfig" \
  pkg-config --cflags --libs codecvisor
include_dir=$(sed -n 's/.*-I\([^ ]*\).*/\1/p' "$out")
holds "pkg-config points into the moved tree" [ "$(realpath "$include_dir")" = "$(realpath "$b/include")" ]
expect 0 "quick start compiles against the installed tree" \
  "${cxx[@]}" -std=c++20 "$tmp/quickstart.cc" $(PKG_CONFIG_PATH="$b/lib/pkgconfig" pkg-config --cflags --libs codecvisor) \
  -o "$tmp/quickstart"
# The standard is the caller's: C++20 at least, a later one kept.
printf '#include "codecvisor/codecvisor.h"\n#include <cstdio>\nint main() { std::printf("%%ld", __cplusplus); }\n' \
  >"$tmp/standard.cc"
expect 0 "a later standard compiles" \
  "${cxx[@]}" -std=c++2b "$tmp/standard.cc" $(PKG_CONFIG_PATH="$b/lib/pkgconfig" pkg-config --cflags --libs codecvisor) \
  -o "$tmp/standard"
expect 0 "runs" "$tmp/standard"
holds "pkg-config kept the later standard" [ "$(cat "$out")" -gt 202002 ]
expect 1 "C++17 is refused" \
  "${cxx[@]}" -std=c++17 -c "$tmp/standard.cc" $(PKG_CONFIG_PATH="$b/lib/pkgconfig" pkg-config --cflags codecvisor) \
  -o "$tmp/standard.o"
holds "saying what it needs" grep -q "codecvisor's headers need C++20 or later" "$err"
linked=$(ldd "$tmp/quickstart" | sed -n 's/.*libcodecvisor.so.0 => \([^ ]*\) .*/\1/p')
holds "quick start links the installed library" [ "$(realpath "$linked")" = "$(realpath "$b/lib/libcodecvisor.so.0.1.0")" ]
expect 0 "quick start decodes" installed "$tmp/quickstart" "$video" 7
holds "quick start's frame 7 equals ffmpeg" same_as_ffmpeg "$out" "$video" 7
holds "quick start says what it decoded" grep -q "h264 96x64, frame 7 at 0.280 s" "$err"
# The README's quick start, extracted from README.md as written there.
sed -n '/<!-- cpp-quickstart -->/,/<!-- \/cpp-quickstart -->/p' "$TEST_SRCDIR/codecvisor/README.md" |
  sed '/^<!--/d; /^```/d' >"$tmp/readme_quickstart.cc"
holds "README has a quick start" grep -q "GetFrameAt" "$tmp/readme_quickstart.cc"
expect 0 "README's quick start compiles as written, warnings as errors" \
  "${cxx[@]}" -std=c++20 -Wall -Wextra -Werror "$tmp/readme_quickstart.cc" \
  $(PKG_CONFIG_PATH="$b/lib/pkgconfig" pkg-config --cflags --libs codecvisor) -o "$tmp/readme_quickstart"
expect 0 "README's quick start decodes" installed "$tmp/readme_quickstart" "$video"
holds "README's quick start prints frame 0" grep -qx "96x64 at 0.000 s" "$out"
expect 2 "README's quick start without a video says how to call it" installed "$tmp/readme_quickstart"
holds "with its usage" grep -qx "usage: app VIDEO" "$err"
expect 1 "quick start on a missing file fails" installed "$tmp/quickstart" "$tmp/missing.mp4"
holds "with the library's diagnostic" grep -q "NOT_FOUND: open($tmp/missing.mp4)" "$err"

# The Python package from the moved tree, with Debian's Python (torch
# tensors) and with another interpreter that has numpy but no torch (pyenv's
# 3.11 when there is one, else Debian's with its site-packages off).
site="$b/lib/python3/site-packages"
py_check='
import sys, numpy as np
from codecvisor.decoders import VideoDecoder
d = VideoDecoder(sys.argv[1], dimension_order="NHWC")
f = d[7]
print(type(f).__module__, tuple(f.shape), d.backend)
sys.stdout.flush()
sys.stdout.buffer.write(b"P6\n96 64\n255\n" + np.asarray(f).tobytes())
'
expect 0 "python: import and decode from the installed tree" \
  installed env "${python_preload[@]}" PYTHONPATH="$site" /usr/bin/python3 -c "$py_check" "$video"
holds "python: a torch tensor from the cpu backend" grep -aq "^torch (64, 96, 3) cpu$" "$out"
holds "python: frame 7 equals ffmpeg" same_as_ffmpeg <(sed '1d' "$out") "$video" 7
numpy_only="$tmp/numpy_only"
mkdir -p "$numpy_only"
ln -s "$(/usr/bin/python3 -c 'import numpy, os; print(os.path.dirname(numpy.__file__))')" "$numpy_only/numpy"
other_python=(/usr/bin/python3 -S)
pyenv_python="${PYENV_ROOT:-/root/.pyenv}/versions/3.11.7/bin/python3"
if [[ -x $pyenv_python ]]; then
  other_python=("$pyenv_python")
fi
expect 0 "python: another interpreter without torch (${other_python[*]})" \
  installed env "${python_preload[@]}" PYTHONPATH="$site:$numpy_only" "${other_python[@]}" -c "$py_check" "$video"
holds "python: numpy arrays without torch" grep -aq "^numpy (64, 96, 3) cpu$" "$out"
holds "python: the same frame 7" same_as_ffmpeg <(sed '1d' "$out") "$video" 7
# Without numpy it says so (the extension's own 'initialization failed'
# named nothing).
expect 1 "python: an interpreter without numpy fails to import" \
  installed env "${python_preload[@]}" PYTHONPATH="$site" "${other_python[@]}" -c "import codecvisor"
holds "python: ... saying it needs numpy" grep -q "ImportError: codecvisor needs numpy in this Python" "$err"

# The Python bench from the installed tree, on tiny clips, one round: every
# figure measured, the C++ in-process baseline found next to the runner.
bench_check='
import json, sys
report = json.load(sys.stdin)
rows = report["results"]
assert not report["notes"], report["notes"]
assert all(r["codecvisor"] > 0 and r["other"] > 0 and r["ratio"] > 0 for r in rows), rows
baselines = {(r["figure"], r["baseline"]) for r in rows}
for threads in (0, 1):
    assert (f"all frames 96x64, threads={threads}", "C++ in-process") in baselines, baselines
    assert (f"all frames 96x64, threads={threads}", "PyAV") in baselines, baselines
assert len(rows) == 17, len(rows)
cpu = report["cpu_ms_per_frame"]
for threads in (0, 1):
    sides = cpu[f"all frames 96x64, threads={threads}"]
    assert set(sides) == {"codecvisor host", "codecvisor backend", "backend processes", "C++ in-process"}, sides
    assert sides["backend processes"] >= 1, sides  # a backend whose CPU is never read would read as free
    assert sides["codecvisor host"] > 0 and sides["C++ in-process"] > 0 and sides["codecvisor backend"] >= 0, sides
'
expect 0 "python bench: one round on tiny clips" installed env "${python_preload[@]}" PYTHONPATH="$site" \
  /usr/bin/python3 -m codecvisor.bench --sizes 96x64 --seconds 1 --short-clips 2 --rounds 1 --json \
  --folder "$tmp/bench"
holds "python bench: every figure, C++ in-process included" /usr/bin/python3 -c "$bench_check" <"$out"

# Decoded by a sandboxed child: the installed runner, not an in-process path.
expect 0 "backends --start" installed "$cv" backends --start
holds "child sandboxed" grep -q "seccomp" "$out"

# A plugin on CODECVISOR_BACKEND_PATH, outside the installed tree.
plugins="$tmp/plugins"
mkdir -p "$plugins"
cp "$TEST_SRCDIR/codecvisor/backends/testing/synthetic.toml" \
  "$TEST_SRCDIR/codecvisor/backends/testing/libcodecvisor_synthetic.so" "$plugins/"
printf 'synthetic frames=4 width=32 height=24 fps=10\n' >"$tmp/clip.syn"
expect 0 "plugin listed" installed CODECVISOR_BACKEND_PATH="$plugins" "$cv" backends --json
holds "plugin is synthetic" grep -qF '"name":"synthetic","devices":["synthetic"]' "$out"
expect 0 "plugin decodes" installed CODECVISOR_BACKEND_PATH="$plugins" "$cv" decode "$tmp/clip.syn" \
  --device synthetic --format ppm --out "$tmp/syn"
holds "plugin wrote 4 frames" [ "$(ls "$tmp/syn" | wc -l)" = 4 ]

# The vendor example (examples/vendor_backend), built the way a vendor
# would: its Makefile, against the installed SDK header only, installed
# into the moved tree's backends folder, where the CLI discovers it.
example="$TEST_SRCDIR/codecvisor/examples/vendor_backend"
holds "vendor example sources in runfiles" [ -f "$example/Makefile" ]
cp -rL "$example" "$tmp/vendor_src"
chmod -R u+w "$tmp/vendor_src"
expect 0 "vendor example builds against the installed SDK" make -C "$tmp/vendor_src" SDK_PREFIX="$b"
holds "vendor build used the installed header" grep -q -- "-I$b/include" "$out"
expect 0 "vendor example installs" make -C "$tmp/vendor_src" install PREFIX="$b"
av1="$tmp/clip_av1.mkv"
"${ffmpeg[@]}" -y -f lavfi -i testsrc=size=96x64:rate=25 -t 1 -c:v libaom-av1 -cpu-used 8 -pix_fmt yuv420p "$av1"
mv "$b" "$tmp/c"  # moved again, with the plugin inside
cv="$tmp/c/bin/codecvisor"
expect 0 "dav1d listed" installed "$cv" backends --json
holds "dav1d from the installed tree" grep -qF "$tmp/c/lib/codecvisor/backends/dav1d.toml" "$out"
expect 0 "dav1d decodes from the moved tree" installed "$cv" decode "$av1" --device dav1d --format ppm \
  --indices 0,11 --out "$tmp/av1"
holds "dav1d frame 11 equals ffmpeg" same_as_ffmpeg "$tmp/av1/frame_000011.ppm" "$av1" 11

# As users other than root: nobody (65534) and an ordinary uid with no
# passwd entry. Each decodes through a sandboxed child with every mechanism
# the kernel gives an unprivileged user (its own user namespace, Landlock,
# seccomp, rlimits); a cgroup needs delegation this machine does not give
# them, and the host says so once, naming why, and goes on.
if [ "$(id -u)" != 0 ]; then
  echo "FAIL the non-root checks switch users and need root to start as" >&2
  exit 1
fi
nr=$(mktemp -d /tmp/codecvisor-nonroot.XXXXXX)
trap 'rm -rf "$nr"' EXIT
chmod 755 "$nr"
cp -r "$tmp/c" "$nr/tree"
cp "$video" "$nr/clip.mp4"
# A plugin that fills memfds (the faulty test backend's memfd_hog: 2 GiB,
# four times its memory_mb, exiting 42 if it got it all): with no cgroup
# to charge them to, memfd_create is refused, and its frames decode.
mkdir "$nr/plugins"
cp "$TEST_SRCDIR/codecvisor/backends/testing/faulty.toml" \
  "$TEST_SRCDIR/codecvisor/backends/testing/libcodecvisor_faulty.so" "$nr/plugins/"
printf 'synthetic frames=4 width=32 height=24 fps=10 fault=memfd_hog fault_frame=2\n' >"$nr/hog.syn"
chmod -R a+rX "$nr"
for uid in 65534 4321; do
  as_user=(setpriv --reuid="$uid" --regid="$uid" --clear-groups env HOME="$nr")
  mkdir -m 777 "$nr/out-$uid"
  expect 0 "uid $uid: decode" installed "${as_user[@]}" "$nr/tree/bin/codecvisor" decode "$nr/clip.mp4" \
    --format ppm --indices 0,7 --out "$nr/out-$uid"
  holds "uid $uid: frame 7 equals ffmpeg" same_as_ffmpeg "$nr/out-$uid/frame_000007.ppm" "$video" 7
  holds "uid $uid: says the cgroup is missing and why" \
    grep -q "backends run without a cgroup (cannot create cgroups in .*not delegated to this user" "$err"
  expect 0 "uid $uid: backends --start" installed "${as_user[@]}" "$nr/tree/bin/codecvisor" backends --start
  holds "uid $uid: sandboxed" grep -qE "sandbox: user\+pid\+net\+ipc\+mount namespaces, empty root, .*landlock v[0-9]+, seccomp" "$out"
  if [ "$uid" = 65534 ]; then
    holds "uid $uid: the child is nobody" grep -q "uid nobody" "$out"
    mkdir -m 777 "$nr/hog-$uid"
    expect 0 "uid $uid: a plugin filling memfds without a cgroup gets none, and decodes" installed "${as_user[@]}" \
      CODECVISOR_BACKEND_PATH="$nr/plugins" "$nr/tree/bin/codecvisor" decode "$nr/hog.syn" --device faulty \
      --format ppm --out "$nr/hog-$uid"
    holds "uid $uid: the hog's 4 frames" [ "$(ls "$nr/hog-$uid" | wc -l)" = 4 ]
    holds "uid $uid: memfds are said to be refused" grep -q "memfd_create is refused" "$err"
  fi
  expect 0 "uid $uid: doctor" installed "${as_user[@]}" "$nr/tree/bin/codecvisor" doctor
  holds "uid $uid: doctor names the missing cgroup" grep -qE "^cgroup \(memory, pids\) +MISSING +where available" "$out"
  holds "uid $uid: cpu ready" grep -qE "^backend cpu \(cpu\): ready, pid [0-9]+$" "$out"
  # Its sandbox is all that a user who is not root can have: not degraded.
  holds "uid $uid: doctor does not call it degraded" [ -z "$(grep DEGRADED "$out")" ]
  if [ "$uid" != 65534 ]; then
    holds "uid $uid: doctor says why the backend is not nobody" \
      grep -q "note: not available to this host: uid nobody (a host that is not root keeps its own uid, $uid" "$out"
  fi
done
if ((fails)); then
  echo "$fails check(s) failed" >&2
  exit 1
fi
echo "all checks passed"
