"""cc_fuzz_test: a libFuzzer target plus a deterministic smoke run of it in `bazel test`.

The smoke run (fuzz_smoke.sh) runs every committed seed once, then `runs`
mutated inputs from a fixed seed: the same commit gives the same verdict on
any machine, fast or slow. The binary `<name>_bin` is the fuzzer itself, for
long, time-bounded runs by hand (docs/fuzzing/README.md).
"""

load("@rules_cc//cc:defs.bzl", "cc_binary")

def cc_fuzz_test(name, srcs, deps, corpus = [], runs = 200000, **kwargs):
    cc_binary(
        name = name + "_bin",
        srcs = srcs,
        deps = deps,
        copts = ["-fsanitize=fuzzer"],
        linkopts = ["-fsanitize=fuzzer"],
        testonly = True,
        **kwargs
    )
    native.sh_test(
        name = name,
        # medium: a run count, not a time budget, bounds the run; the
        # timeout is only a backstop for a slow machine under a sanitizer.
        size = "medium",
        srcs = ["//third_party:fuzz_smoke.sh"],
        args = ["$(location :%s_bin)" % name, str(runs)] + ["$(location %s)" % c for c in corpus],
        data = [":%s_bin" % name] + corpus,
    )
