"""Vendor plugins installed with pip and registered as codecvisor.backends
entry points: discovered without running their Python code, listed with a
precise diagnostic when broken, and used only when their device is named."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import ffmpeg_frames, make_video, runfile, synthetic_clip

# What the child process reports: every backend listed, and what decoding
# on each device did (its arguments are DEVICE=VIDEO pairs; every frame
# decoded is saved to OUT/DEVICE.npy).
CHILD = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import codecvisor
    from codecvisor.decoders import VideoDecoder
    out = {"backends": [b.__dict__ for b in codecvisor.backends.list()], "decode": {}}
    for pair in sys.argv[2:]:
        device, video = pair.split("=", 1)
        try:
            d = VideoDecoder(video, device=device, dimension_order="NHWC")
            frames = d[:]
            np.save(os.path.join(sys.argv[1], device + ".npy"), np.asarray(frames))
            out["decode"][device] = ["ok", d.backend, list(frames.shape)]
        except Exception as e:
            out["decode"][device] = [type(e).__name__, str(e)]
    print(json.dumps(out))
""")


def package(root, name, entry_point, files):
    """A plugin package folder: pyproject.toml, NAME/__init__.py (which leaves
    a marker file if anything ever imports it) and `files` in NAME/."""
    folder = root / name
    (folder / name).mkdir(parents=True)
    (folder / "pyproject.toml").write_text(textwrap.dedent(f"""
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{name.replace('_', '-')}"
        version = "1.0"

        [project.entry-points."codecvisor.backends"]
        {entry_point}

        [tool.setuptools]
        packages = ["{name}"]

        [tool.setuptools.package-data]
        {name} = ["*.toml", "*.so"]
    """))
    (folder / name / "__init__.py").write_text(
        f"import os\nopen(os.path.join(os.environ['PLUGIN_MARKERS'], '{name}'), 'w').close()\n")
    for filename, content in files.items():
        path = folder / name / filename
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return str(folder)


def manifest(name, library):
    return f'name = "{name}"\ndevices = ["{name}"]\nlibrary = "{library}"\nentry = "codecvisor_backend_v1"\nabi_version = 1\n'


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Six plugin packages pip-installed (offline) into one folder: the dav1d
    example plugin, and five broken ones."""
    root = tmp_path_factory.mktemp("plugins")
    dav1d_lib = open(runfile("examples/vendor_backend/libcodecvisor_dav1d.so"), "rb").read()
    dav1d_toml = open(runfile("examples/vendor_backend/dav1d.toml")).read()
    # A library whose constructor aborts: it dies as the sandboxed backend loads it.
    crash_c = root / "crash.c"
    crash_c.write_text("#include <stdlib.h>\n__attribute__((constructor)) static void boom(void) { abort(); }\n"
                       "int codecvisor_backend_v1;\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(root / "libcrash.so"), str(crash_c)], check=True)
    # A library that uses a function of a vendor library it was not linked with.
    undef_c = root / "undef.c"
    undef_c.write_text("void vendor_dep_init(void);\nvoid *codecvisor_backend_v1(void) { vendor_dep_init(); return 0; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(root / "libundef.so"), str(undef_c)], check=True)
    folders = [
        package(root, "dav1d_plugin", 'dav1d = "dav1d_plugin:dav1d.toml"',
                {"dav1d.toml": dav1d_toml, "libcodecvisor_dav1d.so": dav1d_lib}),
        package(root, "garbage_plugin", 'garbage = "garbage_plugin"', {"garbage.toml": "name = = [ not toml"}),
        package(root, "nolib_plugin", 'nolib = "nolib_plugin"', {"nolib.toml": manifest("nolib", "libmissing.so")}),
        package(root, "crash_plugin", 'crash = "crash_plugin"',
                {"crash.toml": manifest("crash", "libcrash.so"), "libcrash.so": (root / "libcrash.so").read_bytes()}),
        package(root, "empty_plugin", 'empty = "empty_plugin"', {}),
        package(root, "undef_plugin", 'undef = "undef_plugin"',
                {"undef.toml": manifest("undef", "libundef.so"), "libundef.so": (root / "libundef.so").read_bytes()}),
    ]
    target = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-build-isolation",
                    "--disable-pip-version-check", "--target", str(target)] + folders, check=True)
    return target


@pytest.fixture(scope="module")
def av1_clip(tmp_path_factory):
    """A 96x64 AV1 clip in Matroska, for the dav1d plugin."""
    return make_video(tmp_path_factory.mktemp("av1") / "clip.mkv",
                      ["-f", "lavfi", "-i", "testsrc=size=96x64:rate=25", "-frames:v", "12", "-c:v", "libaom-av1",
                       "-cpu-used", "8", "-g", "5", "-pix_fmt", "yuv420p"])


def run_child(site, tmp_path, decodes, **env):
    """Runs CHILD with the plugins of `site` on its path; `decodes` maps each
    device to the video to decode on it. Returns its report and where it
    saved the frames."""
    markers = tmp_path / "markers"
    markers.mkdir(exist_ok=True)
    child_env = dict(os.environ, PLUGIN_MARKERS=str(markers), **env)
    child_env.pop("CODECVISOR_BACKEND_PATH", None)  # plugins come from entry points only
    child_env["PYTHONPATH"] = f"{site}:{child_env['PYTHONPATH']}"
    pairs = [f"{device}={video}" for device, video in decodes.items()]
    run = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)] + pairs, env=child_env, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    assert os.listdir(markers) == [], "a plugin's Python code ran in the user's process"
    return json.loads(run.stdout)


def by_name(result):
    return {b["name"]: b for b in result["backends"]}


def test_plugins_are_found_from_entry_points_without_running_them(site, tmp_path, av1_clip):
    not_a_video = synthetic_clip(tmp_path / "clip.syn", "frames=4 width=32 height=24 fps=10")
    result = run_child(site, tmp_path, {"dav1d": av1_clip, "garbage": not_a_video, "nolib": not_a_video,
                                        "crash": not_a_video, "nowhere": not_a_video})
    backends = by_name(result)
    good = backends["dav1d"]
    assert good["source"].startswith("entry point dav1d = dav1d_plugin:dav1d.toml (dav1d-plugin 1.0)"), good
    assert good["manifest_path"].startswith(str(site))
    assert good["devices"] == ["dav1d"]
    assert result["decode"]["dav1d"] == ["ok", "dav1d", [12, 64, 96, 3]], result["decode"]["dav1d"]
    # The plugin's frames, decoded in its sandboxed process, are ffmpeg's.
    assert np.array_equal(np.load(tmp_path / "dav1d.npy"), ffmpeg_frames(av1_clip))
    assert backends["cpu"]["source"] == "built-in"


def test_a_broken_plugin_is_listed_with_why_and_fails_only_its_device(site, tmp_path, video):
    not_a_video = synthetic_clip(tmp_path / "clip.syn", "frames=4 width=32 height=24 fps=10")
    result = run_child(site, tmp_path, {"garbage": not_a_video, "nolib": not_a_video, "crash": not_a_video,
                                        "empty": not_a_video, "undef": not_a_video, "cpu": video})
    backends, decode = by_name(result), result["decode"]
    assert backends["garbage"]["state"] == "failed"
    assert "garbage.toml" in backends["garbage"]["diagnostic"]
    assert backends["empty"]["state"] == "failed"
    assert "installs no *.toml manifest in empty_plugin/" in backends["empty"]["diagnostic"]
    assert decode["garbage"][0] == "NoSuchDeviceError"
    # The manifest is sound, so it is listed; the library fails when used.
    assert backends["nolib"]["state"] == "discovered"
    assert decode["nolib"][0] == "NoSuchDeviceError" and "libmissing.so: cannot open shared object file" in \
        decode["nolib"][1], decode["nolib"]
    assert decode["crash"][0] == "BackendError" and "SIGABRT" in decode["crash"][1], decode["crash"]
    assert "run with CODECVISOR_BACKEND_BACKTRACE=1" in decode["crash"][1], decode["crash"]
    # A symbol of a library the vendor forgot to link: named, with the fix.
    assert decode["undef"][0] == "NoSuchDeviceError", decode["undef"]
    assert "the plugin uses vendor_dep_init, which no library it is linked against defines" in decode["undef"][1], \
        decode["undef"]
    # The built-in backend still serves its device, whatever the plugins did.
    assert decode["cpu"] == ["ok", "cpu", [50, 64, 96, 3]], decode["cpu"]


def test_autoload_off_ignores_every_plugin(site, tmp_path, av1_clip):
    result = run_child(site, tmp_path, {"dav1d": av1_clip}, CODECVISOR_DEVICE_BACKEND_AUTOLOAD="0")
    assert set(by_name(result)) == {"cpu"}
    assert result["decode"]["dav1d"][0] == "NoSuchDeviceError"
