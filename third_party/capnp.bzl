"""cc_capnp_library: C++ code generated from a .capnp schema by Debian's capnp compiler."""

load("@rules_cc//cc:defs.bzl", "cc_library")

def cc_capnp_library(name, src, deps = [], visibility = None):
    """Generates <src>.h / <src>.c++ with `capnp compile -oc++` and wraps them in a cc_library.

    Args:
      name: the cc_library's name.
      src: one .capnp file in this package.
      deps: other cc_capnp_library targets the schema imports.
      visibility: the cc_library's visibility.
    """
    gen = name + "_gen"
    native.genrule(
        name = gen,
        srcs = [src],
        outs = [src + ".h", src + ".c++"],
        cmd = "capnp compile -I/usr/include -oc++:$(RULEDIR) --src-prefix=$$(dirname $(location %s)) $(location %s)" % (src, src),
    )
    # Bazel compiles only known source extensions, so give the .c++ file a .cc twin.
    native.genrule(
        name = gen + "_cc",
        srcs = [src + ".c++"],
        outs = [src + ".cc"],
        cmd = "cp $< $@",
    )
    cc_library(
        name = name,
        srcs = [src + ".cc"],
        hdrs = [src + ".h"],
        deps = deps + ["@system//:capnp"],
        visibility = visibility,
    )
