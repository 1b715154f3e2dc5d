"""Vendor plugins installed with pip and registered as codecvisor.backends
entry points: discovered without running their Python code, listed with a
precise diagnostic when broken, and used only when their device is named."""

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import ffmpeg_frames, make_video, runfile, synthetic_clip

# What the child process reports: every backend listed, what decoding on
# each device did (arguments DEVICE=VIDEO; every frame decoded is saved to
# OUT/DEVICE.npy) and what codecvisor.backends.start did (arguments NAME).
CHILD = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import codecvisor
    from codecvisor.decoders import VideoDecoder
    out = {"backends": [b.__dict__ for b in codecvisor.backends.list()], "decode": {}, "start": {},
           "warnings": codecvisor.backends.warnings()}
    for arg in sys.argv[2:]:
        device, _, video = arg.partition("=")
        try:
            if not video:
                codecvisor.backends.start(device)
                out["start"][device] = ["ok"]
                continue
            d = VideoDecoder(video, device=device, dimension_order="NHWC")
            frames = d[:]
            np.save(os.path.join(sys.argv[1], device + ".npy"), np.asarray(frames))
            out["decode"][device] = ["ok", d.backend, list(frames.shape)]
        except Exception as e:
            out["decode" if video else "start"][device] = [type(e).__name__, str(e)]
    print(json.dumps(out))
""")


def package(root, name, entry_points, files, src_layout=False):
    """A plugin package folder: pyproject.toml, NAME/__init__.py (which leaves
    a marker file if anything ever imports it) and `files` in NAME/ (in
    src/NAME/ with `src_layout`). `entry_points`: its codecvisor.backends
    lines."""
    folder = root / name
    code = folder / "src" / name if src_layout else folder / name
    code.mkdir(parents=True)
    dist_name = name.replace("_", "-")
    (folder / "pyproject.toml").write_text("\n".join([
        '[build-system]',
        'requires = ["setuptools"]',
        'build-backend = "setuptools.build_meta"',
        '[project]',
        f'name = "{dist_name}"',
        'version = "1.0"',
        '[project.entry-points."codecvisor.backends"]',
        entry_points,
        '[tool.setuptools]',
        f'packages = ["{name}"]',
        'package-dir = {"" = "src"}' if src_layout else '',
        '[tool.setuptools.package-data]',
        f'{name} = ["*.toml", "*.so"]',
    ]) + "\n")
    marker = f"import os\nopen(os.path.join(os.environ['PLUGIN_MARKERS'], '{name}'), 'w').close()\n"
    (code / "__init__.py").write_text(marker)
    for filename, content in files.items():
        path = code / filename
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return str(folder)


def pip_install(target, *args):
    """pip install ARGS (package folders, -e FOLDER) into `target`, offline."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-build-isolation",
                    "--disable-pip-version-check", "--target", str(target)] + [str(a) for a in args], check=True)
    return target


def manifest(name, library, devices=None, abi_version=1):
    devices = ", ".join(f'"{d}"' for d in devices or [name])
    return (f'name = "{name}"\ndevices = [{devices}]\nlibrary = "{library}"\nentry = "codecvisor_backend_v1"\n'
            f'abi_version = {abi_version}\n')


SYNTHETIC = "frames=4 width=32 height=24 fps=10"  # a clip for the synthetic backend


def synthetic_plugin():
    """A sound plugin's files: the synthetic test backend (whose library
    checks that its manifest calls it "synthetic")."""
    lib = open(runfile("backends/testing/libcodecvisor_synthetic.so"), "rb").read()
    return {"synthetic.toml": manifest("synthetic", "libcodecvisor_synthetic.so"), "libcodecvisor_synthetic.so": lib}


def decode_synthetic(site, tmp_path, **kwargs):
    """run_child, decoding a synthetic clip on the synthetic plugin's device."""
    return run_child(site, tmp_path, dict(synthetic=synthetic_clip(tmp_path / "clip.syn", SYNTHETIC)), **kwargs)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Nine plugin packages pip-installed (offline) into one folder: the
    dav1d example plugin, and eight broken ones."""
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
    # Libraries that load but are no backend: an entry returning NULL, and a
    # function table of another ABI version.
    for lib, body in (("nulltable", "return 0;"),
                      ("libabi", "static const unsigned t[64] = {sizeof t, 99}; return (void *)t;")):
        (root / f"{lib}.c").write_text(f"void *codecvisor_backend_v1(void) {{ {body} }}\n")
        subprocess.run(["cc", "-shared", "-fPIC", "-o", str(root / f"lib{lib}.so"), str(root / f"{lib}.c")],
                       check=True)
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
        package(root, "nulltable_plugin", 'nulltable = "nulltable_plugin"',
                {"nulltable.toml": manifest("nulltable", "libnulltable.so"),
                 "libnulltable.so": (root / "libnulltable.so").read_bytes()}),
        package(root, "libabi_plugin", 'libabi = "libabi_plugin"',
                {"libabi.toml": manifest("libabi", "liblibabi.so"),
                 "liblibabi.so": (root / "liblibabi.so").read_bytes()}),
        # Built for another backend ABI: the host rejects its manifest.
        package(root, "badabi_plugin", 'badabi = "badabi_plugin"',
                {"badabi.toml": manifest("badabi", "libbadabi.so", devices=["badabi", "badabi_gpu"], abi_version=7)}),
    ]
    return pip_install(root / "site", *folders)


@pytest.fixture(scope="module")
def av1_clip(tmp_path_factory):
    """A 96x64 AV1 clip in Matroska, for the dav1d plugin."""
    return make_video(tmp_path_factory.mktemp("av1") / "clip.mkv",
                      ["-f", "lavfi", "-i", "testsrc=size=96x64:rate=25", "-frames:v", "12", "-c:v", "libaom-av1",
                       "-cpu-used", "8", "-g", "5", "-pix_fmt", "yuv420p"])


def run_child(site, tmp_path, decodes, starts=(), **env):
    """Runs CHILD with the plugins of `site` on its path; `decodes` maps each
    device to the video to decode on it, `starts` names backends to start.
    Returns its report and where it saved the frames."""
    markers = tmp_path / "markers"
    markers.mkdir(exist_ok=True)
    child_env = dict(os.environ, PLUGIN_MARKERS=str(markers))
    child_env.pop("CODECVISOR_BACKEND_PATH", None)  # plugins come from entry points only, unless `env` says
    child_env.update(env)
    child_env["PYTHONPATH"] = f"{site}:{child_env['PYTHONPATH']}"
    args = [f"{device}={video}" for device, video in decodes.items()] + list(starts)
    run = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)] + args, env=child_env, capture_output=True,
                         text=True, timeout=300)
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
    # The host never saw the garbage manifest: its device's error says why all the same.
    assert decode["garbage"][0] == "NoSuchDeviceError", decode["garbage"]
    assert "entry point garbage = garbage_plugin (garbage-plugin 1.0) failed to load: " in decode["garbage"][1], \
        decode["garbage"]
    assert "garbage.toml" in decode["garbage"][1], decode["garbage"]
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


def test_list_with_start_shows_the_plugins_that_cannot_start(site, tmp_path):
    # A vendor's QA found list() calling plugins healthy ("discovered", no
    # diagnostic) whose library could not load: nothing had started them.
    code = ("import json, codecvisor\n"
            "before = {b.name: b.state for b in codecvisor.backends.list()}\n"
            "after = {b.name: [b.state, b.diagnostic] for b in codecvisor.backends.list(start=True)}\n"
            "print(json.dumps([before, after]))\n")
    env = dict(os.environ)
    env.pop("CODECVISOR_BACKEND_PATH", None)
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    before, after = json.loads(run.stdout)
    assert before["nolib"] == "discovered" and before["undef"] == "discovered"
    assert after["nolib"][0] == "failed" and "libmissing.so: cannot open shared object file" in after["nolib"][1], \
        after["nolib"]
    assert after["undef"][0] == "failed" and "vendor_dep_init" in after["undef"][1], after["undef"]
    assert after["dav1d"][0] == "ready" and after["cpu"][0] == "ready", (after["dav1d"], after["cpu"])
    assert after["garbage"][0] == "failed"


def test_every_plugin_that_cannot_load_is_a_device_error(site, tmp_path):
    # However its library fails (missing, an undefined symbol, an entry
    # returning NULL, another ABI's table), asking for the device raises
    # NoSuchDeviceError saying why, as backends.start does; only dying as
    # it starts is a BackendError (the crash plugin above).
    clip = synthetic_clip(tmp_path / "clip.syn", SYNTHETIC)
    missing = str(tmp_path / "missing.mp4")
    result = run_child(site, tmp_path, {"nulltable": clip, "libabi": clip, "nulltable:0": missing},
                       starts=["nulltable", "libabi"])
    for name, why in (("nulltable", "codecvisor_backend_v1() returned NULL"), ("libabi", "ABI version 99")):
        for error, message in (result["decode"][name], result["start"][name]):
            assert error == "NoSuchDeviceError" and why in message, (name, error, message)
    # A path that cannot be opened is that, whatever the device: the host opens it first.
    assert result["decode"]["nulltable:0"][0] == "FileNotFoundError", result["decode"]["nulltable:0"]


@pytest.mark.parametrize("value", ["0", "false"])  # as torch: anything but "1" is off
def test_autoload_off_ignores_every_plugin(site, tmp_path, av1_clip, value):
    result = run_child(site, tmp_path, {"dav1d": av1_clip}, CODECVISOR_DEVICE_BACKEND_AUTOLOAD=value)
    assert set(by_name(result)) == {"cpu"}
    error, message = result["decode"]["dav1d"]
    assert error == "NoSuchDeviceError", (error, message)
    assert f"CODECVISOR_DEVICE_BACKEND_AUTOLOAD={value} is set" in message, message


def test_a_failed_plugins_device_and_backend_errors_say_why(site, tmp_path):
    # The host never saw these plugins (their manifests were rejected before
    # it did), yet asking for their device or backend names the entry point
    # and why, as list() does, instead of "no backend serves device".
    clip = synthetic_clip(tmp_path / "clip.syn", SYNTHETIC)
    result = run_child(site, tmp_path, {"badabi:1": clip, "badabi_gpu:0": clip, "empty": clip},
                       starts=["badabi", "garbage"])
    badabi = "entry point badabi = badabi_plugin (badabi-plugin 1.0) failed to load: manifest "
    # By the entry point's name, and by a device its manifest declares.
    for device in ("badabi:1", "badabi_gpu:0"):
        error, message = result["decode"][device]
        assert error == "NoSuchDeviceError", result["decode"][device]
        assert message.startswith(f"device '{device}': {badabi}") and "abi_version" in message, message
        assert "CODECVISOR_BACKEND_PATH" not in message, message
    assert result["decode"]["empty"][0] == "NoSuchDeviceError"
    assert "installs no *.toml manifest in empty_plugin/" in result["decode"]["empty"][1], result["decode"]["empty"]
    assert result["start"]["badabi"][0] == "NoSuchDeviceError", result["start"]
    assert result["start"]["badabi"][1].startswith(f"backend 'badabi': {badabi}"), result["start"]
    assert "garbage.toml" in result["start"]["garbage"][1], result["start"]
    assert by_name(result)["badabi"]["diagnostic"] in result["start"]["badabi"][1]


def test_an_editable_plugin_is_found_in_its_source_tree(tmp_path):
    # pip install -e: RECORD lists only a .pth; the package is in src/ of the tree.
    folder = package(tmp_path, "edit_plugin", 'edit = "edit_plugin"', synthetic_plugin(), src_layout=True)
    site = pip_install(tmp_path / "site", "-e", folder)
    result = decode_synthetic(site, tmp_path)
    plugin = by_name(result)["synthetic"]
    assert plugin["source"] == "entry point edit = edit_plugin (edit-plugin 1.0)", plugin
    assert os.path.samefile(plugin["manifest_path"], os.path.join(folder, "src", "edit_plugin", "synthetic.toml"))
    assert result["decode"]["synthetic"] == ["ok", "synthetic", [4, 24, 32, 3]], result["decode"]


def as_debian_egg_info(site, dist_info):
    """Rewrites a dist-info folder the way Debian's packages install Python
    code: an .egg-info folder (PKG-INFO, entry_points.txt, top_level.txt)
    with no list of the installed files."""
    egg_info = site / dist_info.replace(".dist-info", ".egg-info")
    os.rename(site / dist_info, egg_info)
    os.rename(egg_info / "METADATA", egg_info / "PKG-INFO")
    for name in ("RECORD", "INSTALLER", "REQUESTED", "WHEEL", "direct_url.json"):
        (egg_info / name).unlink(missing_ok=True)


def test_a_plugin_installed_debian_style_is_found_next_to_its_egg_info(tmp_path):
    site = pip_install(tmp_path / "site", package(tmp_path, "deb_plugin", 'deb = "deb_plugin"', synthetic_plugin()))
    as_debian_egg_info(site, "deb_plugin-1.0.dist-info")
    assert [d.files for d in importlib.metadata.distributions(path=[str(site)])] == [None]
    result = decode_synthetic(site, tmp_path)
    plugin = by_name(result)["synthetic"]
    assert plugin["source"] == "entry point deb = deb_plugin (deb-plugin 1.0)", plugin
    assert os.path.samefile(plugin["manifest_path"], site / "deb_plugin" / "synthetic.toml"), plugin
    assert result["decode"]["synthetic"] == ["ok", "synthetic", [4, 24, 32, 3]], result["decode"]


def test_a_malformed_entry_points_file_costs_only_its_own_row(tmp_path):
    site = pip_install(tmp_path / "site", *[
        package(tmp_path, "fine_plugin", 'fine = "fine_plugin"', synthetic_plugin()),
        package(tmp_path, "broken_eps", 'broken = "broken_eps"', {"broken.toml": manifest("broken", "lib.so")}),
        package(tmp_path, "unrelated", 'unrelated = "unrelated"', {}),
    ])
    # A plugin's file with a console script line that is not `name = value`,
    # and another distribution's whose malformed file declares no plugin.
    with open(site / "broken_eps-1.0.dist-info" / "entry_points.txt", "a") as f:
        f.write("[console_scripts]\nno equals sign here\n")
    (site / "unrelated-1.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\nnor here\n")
    result = decode_synthetic(site, tmp_path)
    backends = by_name(result)
    assert set(backends) == {"cpu", "synthetic", "broken-eps"}, backends
    assert backends["synthetic"]["source"] == "entry point fine = fine_plugin (fine-plugin 1.0)", backends
    assert result["decode"]["synthetic"] == ["ok", "synthetic", [4, 24, 32, 3]], result["decode"]
    broken = backends["broken-eps"]
    assert broken["state"] == "failed" and broken["source"] == "entry points of broken-eps 1.0", broken
    assert broken["diagnostic"] == ("broken-eps 1.0: entry_points.txt cannot be read: line 'no equals sign here' in "
                                    "[console_scripts] is not `name = value`"), broken


def test_a_fifo_among_a_distributions_metadata_costs_only_its_own_row(tmp_path):
    # A FIFO in place of a metadata file blocked its read for good (the
    # standard library's readers block on one), and with it the first
    # decoder, on any device: an unrelated distribution's entry_points.txt,
    # or a plugin's RECORD.
    site = pip_install(tmp_path / "site", *[
        package(tmp_path, "fine_plugin", 'fine = "fine_plugin"', synthetic_plugin()),
        package(tmp_path, "fifo_record", 'fifo = "fifo_record"', {"fifo.toml": manifest("fifo", "lib.so")}),
        package(tmp_path, "unrelated", 'unrelated = "unrelated"', {}),
    ])
    for path in (site / "unrelated-1.0.dist-info" / "entry_points.txt", site / "fifo_record-1.0.dist-info" / "RECORD"):
        path.unlink()
        os.mkfifo(path)
    result = decode_synthetic(site, tmp_path)
    backends = by_name(result)
    # A distribution whose entry points cannot be read may be a plugin: it
    # is listed, as a malformed one is.
    assert set(backends) == {"cpu", "synthetic", "fifo_record-1.0.dist-info", "unrelated-1.0.dist-info"}, \
        list(backends)
    assert result["decode"]["synthetic"] == ["ok", "synthetic", [4, 24, 32, 3]], result["decode"]
    for name, file in (("fifo_record", "RECORD"), ("unrelated", "entry_points.txt")):
        row = backends[f"{name}-1.0.dist-info"]
        assert row["state"] == "failed", row
        assert row["diagnostic"] == (f"{name}-1.0.dist-info: its metadata cannot be read: "
                                     f"{site / f'{name}-1.0.dist-info' / file} is not a regular file"), row


def test_a_plugin_in_a_folder_whose_name_is_not_utf8_loads_and_spares_cpu(tmp_path, video):
    installed = pip_install(tmp_path / "site", package(tmp_path, "odd_plugin", 'odd = "odd_plugin"',
                                                       synthetic_plugin()))
    site = os.fsencode(tmp_path) + b"/site\xffname"
    os.rename(os.fsencode(installed), site)
    result = run_child(os.fsdecode(site), tmp_path, {"synthetic": synthetic_clip(tmp_path / "clip.syn", SYNTHETIC),
                                                     "cpu": video})
    plugin = by_name(result)["synthetic"]
    assert plugin["source"] == "entry point odd = odd_plugin (odd-plugin 1.0)", plugin
    # As the host spells a path: UTF-8, any other byte escaped.
    assert plugin["manifest_path"].endswith("/site\\xffname/odd_plugin/synthetic.toml"), plugin
    assert result["decode"]["synthetic"] == ["ok", "synthetic", [4, 24, 32, 3]], result["decode"]
    assert result["decode"]["cpu"] == ["ok", "cpu", [50, 64, 96, 3]], result["decode"]


def test_one_manifest_named_twice_is_loaded_once(tmp_path):
    site = pip_install(tmp_path / "site", package(
        tmp_path, "twice_plugin", 'twice = "twice_plugin"\ntwice_too = "twice_plugin:synthetic.toml"',
        synthetic_plugin()))
    # By two entry points; then by them and CODECVISOR_BACKEND_PATH too.
    for env, source in [({}, "entry point twice = twice_plugin (twice-plugin 1.0)"),
                        ({"CODECVISOR_BACKEND_PATH": str(site / "twice_plugin")}, "path")]:
        result = decode_synthetic(site, tmp_path, **env)
        rows = [(b["name"], b["state"], b["source"]) for b in result["backends"] if b["name"] != "cpu"]
        assert rows == [("synthetic", "discovered", source)], rows
        assert result["decode"]["synthetic"] == ["ok", "synthetic", [4, 24, 32, 3]], result["decode"]


def test_an_entry_point_under_a_development_copy_on_the_path_is_shadowed_not_failed(tmp_path):
    # The vendor's development build on CODECVISOR_BACKEND_PATH, the same
    # backend pip-installed: the path's copy is used, the entry point's is
    # said to be unused, and nothing is listed as failed.
    site = pip_install(tmp_path / "site", package(tmp_path, "shadowed_plugin", 'synthetic = "shadowed_plugin"',
                                                  synthetic_plugin()))
    dev = tmp_path / "dev"
    dev.mkdir()
    for name, content in synthetic_plugin().items():
        (dev / name).write_bytes(content.encode() if isinstance(content, str) else content)
    result = decode_synthetic(site, tmp_path, CODECVISOR_BACKEND_PATH=str(dev))
    rows = [(b["name"], b["state"], b["manifest_path"]) for b in result["backends"] if b["name"] != "cpu"]
    assert rows == [("synthetic", "discovered", str(dev / "synthetic.toml"))], rows
    assert result["decode"]["synthetic"] == ["ok", "synthetic", [4, 24, 32, 3]], result["decode"]
    said = [w for w in result["warnings"] if "shadowed_plugin" in w]
    assert len(said) == 1 and "is not used" in said[0] and str(dev / "synthetic.toml") in said[0], result["warnings"]


def test_an_entry_point_naming_a_module_attribute_says_what_values_are_valid(tmp_path):
    files = dict(synthetic_plugin(), **{"mod.py": "raise RuntimeError('imported')\n"})
    site = pip_install(tmp_path / "site", package(tmp_path, "attr_plugin", 'attr = "attr_plugin.mod:backend"', files))
    attr = by_name(run_child(site, tmp_path, {}))["attr"]
    assert attr["state"] == "failed", attr
    assert attr["diagnostic"] == ("'attr_plugin.mod:backend' names no manifest: the value must be `package` or "
                                  "`package:manifest.toml` (it is never imported)"), attr


def fake_editable_dist(site, source, entry_point):
    """A dist-info in `site` as pip writes it for `pip install -e SOURCE`
    (a RECORD of its own files only, direct_url.json naming SOURCE), which a
    hostile wheel could also carry itself."""
    info = site / "evil_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evil-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[codecvisor.backends]\n{entry_point}\n")
    (info / "RECORD").write_text("evil_plugin-1.0.dist-info/METADATA,,\n")
    (info / "direct_url.json").write_text(json.dumps(
        {"url": f"file://{source}", "dir_info": {"editable": True}}))
    return next(iter(importlib.metadata.distributions(path=[str(site)])))


def test_an_editable_source_inside_the_python_installation_is_not_a_plugins_folder(tmp_path):
    # The red team's wheel for pip install --user: its data files in
    # ~/.local/share (beside the user's keyrings), its own direct_url.json
    # calling ~/.local an editable source, and `acme = share:acme.toml`:
    # ~/.local/share would have been the plugin's own folder, readable.
    from codecvisor import _plugins
    prefix = tmp_path / "home" / ".local"
    site = prefix / "lib" / "python3.11" / "site-packages"
    (prefix / "share" / "keyrings").mkdir(parents=True)
    (prefix / "share" / "acme.toml").write_text(manifest("acme", "acme/libevil.so"))
    found = _plugins._resolve_distribution(fake_editable_dist(site, prefix, "acme = share:acme.toml"))
    assert [p.manifest_path for p in found] == [None], found
    assert f"inside the Python installation {prefix} but outside its packages" in found[0].error, found[0].error
    # A real editable source (a checkout beside the installation, or in a
    # virtualenv's src/, where pip puts `-e git+...` checkouts) is looked in.
    for n, source in enumerate((tmp_path / "checkout", prefix / "src" / "acme")):
        (source / "share").mkdir(parents=True)
        (source / "share" / "acme.toml").write_text(manifest("acme", "libacme.so"))
        other_site = prefix / "lib" / f"python3.{n}" / "site-packages"
        found = _plugins._resolve_distribution(fake_editable_dist(other_site, source, "acme = share:acme.toml"))
        assert [p.manifest_path for p in found] == [str(source / "share" / "acme.toml")], found


def test_an_editable_source_is_judged_by_the_folder_with_its_manifest_in_its_own_installation(tmp_path, monkeypatch):
    # Only the folder that holds the manifest is judged, and only against
    # the installation the distribution is in: the one its wheel could
    # have written data files into.
    from codecvisor import _plugins
    installs = iter(range(100))

    def resolve(prefix, source):
        site = prefix / "lib" / f"python3.{next(installs)}" / "site-packages"
        found = _plugins._resolve_distribution(fake_editable_dist(site, source, "acme = acme:acme.toml"))
        return [p.manifest_path for p in found], found[0].error

    def plugin_folder(folder):
        folder.mkdir(parents=True)
        (folder / "acme.toml").write_text(manifest("acme", "libacme.so"))
        return str(folder / "acme.toml")

    # A virtualenv made at the root of a src-layout project (`python -m venv
    # .`): the project is the installation, its src/acme the plugin's folder
    # (REPO/acme, which is not there, was refused). A flat layout there is
    # a folder the installation's wheels could have made, and is refused.
    repo = tmp_path / "repo"
    plugin_folder(repo / "acme")
    paths, error = resolve(repo, repo)
    assert paths == [None] and f"inside the Python installation {repo} but outside its packages" in error, error
    # With a src layout beside it, REPO/src/acme is still looked in.
    src_layout = plugin_folder(repo / "src" / "acme")
    assert resolve(repo, repo) == ([src_layout], None)
    # A site-packages that is a link to another folder still names its
    # installation; so does PyPy's lib/pypy3.10/site-packages.
    linked = tmp_path / "linked"
    (tmp_path / "elsewhere").mkdir()
    (linked / "lib" / "python3.11").mkdir(parents=True)
    (linked / "lib" / "python3.11" / "site-packages").symlink_to(tmp_path / "elsewhere")
    plugin_folder(linked / "share" / "acme")
    found = _plugins._resolve_distribution(fake_editable_dist(
        linked / "lib" / "python3.11" / "site-packages", linked / "share", "acme = acme:acme.toml"))
    assert [p.manifest_path for p in found] == [None], found
    pypy = tmp_path / "pypy"
    plugin_folder(pypy / "share" / "acme")
    found = _plugins._resolve_distribution(fake_editable_dist(
        pypy / "lib" / "pypy3.10" / "site-packages", pypy / "share", "acme = acme:acme.toml"))
    assert [p.manifest_path for p in found] == [None], found
    # A checkout in another installation's src/ (an admin's in /usr/local/src,
    # under Debian's Python at /usr) or outside any src/: a --user install's
    # wheel could not write there.
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "usr"))
    user = tmp_path / "home" / ".local"
    for checkout in (tmp_path / "usr" / "local" / "src" / "acme", tmp_path / "usr" / "src" / "acme",
                     tmp_path / "usr" / "share" / "acme"):
        path = plugin_folder(checkout / "acme")
        assert resolve(user, checkout) == ([path], None), checkout
    # The user base of a user site not shaped PREFIX/lib/pythonX.Y (Windows's
    # %APPDATA%\Python\Python311\site-packages) is its installation too.
    base = tmp_path / "appdata"
    user_site = base / "Python311" / "site-packages"
    monkeypatch.setattr("site.getusersitepackages", lambda: str(user_site))
    monkeypatch.setattr("site.getuserbase", lambda: str(base))
    plugin_folder(base / "acme")
    found = _plugins._resolve_distribution(fake_editable_dist(user_site, base, "acme = acme:acme.toml"))
    assert [p.manifest_path for p in found] == [None], found
    assert f"inside the Python installation {base} but outside its packages" in found[0].error, found[0].error
