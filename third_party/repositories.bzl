"""Repository rules that let Bazel 4.2.3 build codecvisor offline from Debian packages.

Every external dependency comes from a Debian package installed by
tools/bootstrap.sh; nothing here downloads anything.
"""

_RULES_CC = "/usr/share/bazel/rules/cc"

def _debian_rules_cc_impl(rctx):
    # Debian's rules_cc 0.0.4 loads use_cpp_toolchain, which Bazel 4.2.3 lacks.
    # Copy it and replace that helper by the toolchain type it would return.
    if not rctx.path(_RULES_CC).exists:
        fail("rules_cc not found at %s; run tools/bootstrap.sh" % _RULES_CC)
    rctx.execute(["cp", "-r", _RULES_CC + "/.", "."])
    for f in [
        "cc/private/rules_impl/compiler_flag.bzl",
        "cc/private/rules_impl/cc_flags_supplier.bzl",
    ]:
        text = rctx.read(f)
        text = text.replace(', "use_cpp_toolchain")', ")")
        text = text.replace("use_cpp_toolchain()", '["@bazel_tools//tools/cpp:toolchain_type"]')
        rctx.file(f, text)

debian_rules_cc = repository_rule(implementation = _debian_rules_cc_impl, local = True)

def _coverage_tools_impl(rctx):
    # Every test depends on @remote_coverage_tools, which Bazel would download.
    # Coverage here comes from gcov/lcov, so two empty filegroups suffice.
    rctx.file("WORKSPACE", "")
    rctx.file("BUILD", "\n".join([
        'filegroup(name = "coverage_report_generator", visibility = ["//visibility:public"])',
        'filegroup(name = "lcov_merger", visibility = ["//visibility:public"])',
        "",
    ]))

local_coverage_tools = repository_rule(implementation = _coverage_tools_impl, local = True)

# Bazel target name -> pkg-config modules it stands for.
_PKG_CONFIG_LIBS = {
    "absl": ["absl_status", "absl_statusor", "absl_strings", "absl_str_format", "absl_synchronization", "absl_time"],
    "benchmark": ["benchmark"],
    "capnp": ["capnp", "kj"],
    "cli11": ["CLI11"],
    "dav1d": ["dav1d"],
    "ffmpeg": ["libavformat", "libavcodec", "libavutil", "libswscale"],
    # Without libavformat: for code that encodes or converts pixels and
    # never opens a file (the CLI's PNG and y4m output).
    "avcodec_swscale": ["libavcodec", "libavutil", "libswscale"],
    # Pixel conversion alone: the host's (media/, api/), which decodes nothing.
    "swscale": ["libswscale", "libavutil"],
    "gtest": ["gtest", "gmock"],
    "gtest_main": ["gtest_main", "gmock"],
    "seccomp": ["libseccomp"],
    "tomlplusplus": ["tomlplusplus"],
}

def _system_libs_impl(rctx):
    lines = ['package(default_visibility = ["//visibility:public"])', ""]
    for name, modules in _PKG_CONFIG_LIBS.items():
        res = rctx.execute(["pkg-config", "--libs", "--cflags"] + modules)
        if res.return_code != 0:
            fail("pkg-config %s failed (%s); run tools/bootstrap.sh to install the Debian packages" %
                 (" ".join(modules), res.stderr.strip()))
        defines, linkopts = [], []
        for flag in res.stdout.split(" "):
            flag = flag.strip()
            if flag.startswith("-D"):
                defines.append(flag[2:])
            elif flag.startswith("-I"):
                pass  # System include directories are already on the search path.
            elif flag:
                linkopts.append(flag)
        lines.append("cc_library(name = %r, defines = %r, linkopts = %r)" % (name, defines, linkopts))
    rctx.file("WORKSPACE", "")
    rctx.file("BUILD", "\n".join(lines) + "\n")

debian_system_libs = repository_rule(
    implementation = _system_libs_impl,
    local = True,
    environ = ["PKG_CONFIG_PATH"],
)

def _debian_python_impl(rctx):
    # The Python package's extension module builds against Debian's Python
    # (/usr/bin/python3, the one that sees python3-torch) and pybind11.
    python = "/usr/bin/python3"
    res = rctx.execute([python, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"])
    if res.return_code != 0:
        fail("%s cannot say where its headers are (%s); run tools/bootstrap.sh" % (python, res.stderr.strip()))
    include = res.stdout.strip()
    if not rctx.path(include + "/Python.h").exists:
        fail("%s/Python.h missing; run tools/bootstrap.sh (python3-dev)" % include)
    if not rctx.path("/usr/include/pybind11/pybind11.h").exists:
        fail("pybind11 headers missing; run tools/bootstrap.sh (pybind11-dev)")
    version = rctx.execute([python, "-c", "import sys; print('%d, %d' % sys.version_info[:2])"])
    if version.return_code != 0:
        fail("%s cannot say its version (%s)" % (python, version.stderr.strip()))
    rctx.symlink(include, "python_include")
    rctx.symlink("/usr/include/pybind11", "pybind11_include/pybind11")
    rctx.file("WORKSPACE", "")
    rctx.file("built_for.py", "\n".join([
        '"""The CPython whose headers the extension module is built with (written by the build)."""',
        "",
        "PYTHON = (%s)" % version.stdout.strip(),
        "",
    ]))
    rctx.file("BUILD", "\n".join([
        'package(default_visibility = ["//visibility:public"])',
        "",
        'exports_files(["built_for.py"])',
        "",
        "# Headers only: an extension module takes its Python symbols from the",
        "# interpreter that loads it.",
        "cc_library(",
        '    name = "pybind11",',
        '    hdrs = glob(["python_include/**/*.h", "pybind11_include/**/*.h"]),',
        '    includes = ["python_include", "pybind11_include"],',
        ")",
        "",
    ]))

debian_python = repository_rule(implementation = _debian_python_impl, local = True)

def codecvisor_dependencies():
    debian_rules_cc(name = "rules_cc")
    native.local_repository(name = "rules_java", path = "/usr/share/bazel/rules/java")
    local_coverage_tools(name = "remote_coverage_tools")
    debian_system_libs(name = "system")
    debian_python(name = "python")
