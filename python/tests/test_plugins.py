"""Vendor plugins installed with pip and registered as codecvisor.backends
entry points: discovered without running their Python code, listed with a
precise diagnostic when broken, and used only when their device is named."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import runfile, synthetic_clip

# What the child process reports: every backend listed, and what decoding
# one frame on each device did.
CHILD = textwrap.dedent("""
    import json, sys
    import codecvisor
    from codecvisor.decoders import VideoDecoder
    out = {"backends": [b.__dict__ for b in codecvisor.backends.list()], "decode": {}}
    for device in sys.argv[2:]:
        try:
            d = VideoDecoder(sys.argv[1], device=device)
            out["decode"][device] = ["ok", d.backend, list(d[0].shape)]
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
    """Five plugin packages pip-installed (offline) into one folder."""
    root = tmp_path_factory.mktemp("plugins")
    synthetic_lib = open(runfile("backends/testing/libcodecvisor_synthetic.so"), "rb").read()
    # A library whose constructor aborts: it dies as the sandboxed backend loads it.
    crash_c = root / "crash.c"
    crash_c.write_text("#include <stdlib.h>\n__attribute__((constructor)) static void boom(void) { abort(); }\n"
                       "int codecvisor_backend_v1;\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(root / "libcrash.so"), str(crash_c)], check=True)
    folders = [
        package(root, "good_plugin", 'synthetic = "good_plugin:synthetic.toml"',
                {"synthetic.toml": manifest("synthetic", "libcodecvisor_synthetic.so"),
                 "libcodecvisor_synthetic.so": synthetic_lib}),
        package(root, "garbage_plugin", 'garbage = "garbage_plugin"', {"garbage.toml": "name = = [ not toml"}),
        package(root, "nolib_plugin", 'nolib = "nolib_plugin"', {"nolib.toml": manifest("nolib", "libmissing.so")}),
        package(root, "crash_plugin", 'crash = "crash_plugin"',
                {"crash.toml": manifest("crash", "libcrash.so"), "libcrash.so": (root / "libcrash.so").read_bytes()}),
        package(root, "empty_plugin", 'empty = "empty_plugin"', {}),
    ]
    target = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-build-isolation",
                    "--disable-pip-version-check", "--target", str(target)] + folders, check=True)
    return target


def run_child(site, tmp_path, devices, **env):
    markers = tmp_path / "markers"
    markers.mkdir(exist_ok=True)
    clip = synthetic_clip(tmp_path / "clip.syn", "frames=4 width=32 height=24 fps=10")
    child_env = dict(os.environ, PLUGIN_MARKERS=str(markers), **env)
    child_env.pop("CODECVISOR_BACKEND_PATH", None)  # plugins come from entry points only
    child_env["PYTHONPATH"] = f"{site}:{child_env['PYTHONPATH']}"
    run = subprocess.run([sys.executable, "-c", CHILD, clip] + devices, env=child_env, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    assert os.listdir(markers) == [], "a plugin's Python code ran in the user's process"
    return json.loads(run.stdout)


def by_name(result):
    return {b["name"]: b for b in result["backends"]}


def test_plugins_are_found_from_entry_points_without_running_them(site, tmp_path):
    result = run_child(site, tmp_path, ["synthetic", "garbage", "nolib", "crash", "nowhere"])
    backends = by_name(result)
    good = backends["synthetic"]
    assert good["source"].startswith("entry point synthetic = good_plugin:synthetic.toml (good-plugin 1.0)")
    assert good["manifest_path"].startswith(str(site))
    assert result["decode"]["synthetic"] == ["ok", "synthetic", [3, 24, 32]]
    assert backends["cpu"]["source"] == "built-in"


def test_a_broken_plugin_is_listed_with_why_and_fails_only_its_device(site, tmp_path):
    result = run_child(site, tmp_path, ["garbage", "nolib", "crash", "empty", "cpu"])
    backends, decode = by_name(result), result["decode"]
    assert backends["garbage"]["state"] == "failed"
    assert "garbage.toml" in backends["garbage"]["diagnostic"]
    assert backends["empty"]["state"] == "failed"
    assert "installs no a *.toml manifest in empty_plugin/" in backends["empty"]["diagnostic"]
    assert decode["garbage"][0] == "NoSuchDeviceError"
    # The manifest is sound, so it is listed; the library fails when used.
    assert backends["nolib"]["state"] == "discovered"
    assert decode["nolib"][0] == "NoSuchDeviceError" and "libmissing.so: cannot open shared object file" in \
        decode["nolib"][1], decode["nolib"]
    assert decode["crash"][0] == "BackendError" and "SIGABRT" in decode["crash"][1], decode["crash"]
    # The built-in backend still serves its device (and finds a .syn file is no video).
    assert decode["cpu"][0] == "VideoError", decode["cpu"]


def test_autoload_off_ignores_every_plugin(site, tmp_path):
    result = run_child(site, tmp_path, ["synthetic"], CODECVISOR_DEVICE_BACKEND_AUTOLOAD="0")
    assert set(by_name(result)) == {"cpu"}
    assert result["decode"]["synthetic"][0] == "NoSuchDeviceError"
