"""cc_fuzz_test: a libFuzzer target plus a short smoke run of it in `bazel test`.

The binary `<name>_bin` is the fuzzer itself, for long runs by hand:
  bazel build //ipc:response_decode_fuzzer_bin && bazel-bin/ipc/response_decode_fuzzer_bin -runs=1000000 CORPUS_DIR
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
        size = "small",
        srcs = ["//third_party:fuzz_smoke.sh"],
        args = ["$(location :%s_bin)" % name, str(runs)] + ["$(location %s)" % c for c in corpus],
        data = [":%s_bin" % name] + corpus,
    )
