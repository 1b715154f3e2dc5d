"""backend_conformance_test: the conformance suite as a Bazel test target.

    load("//tests:conformance.bzl", "backend_conformance_test")

    backend_conformance_test(
        name = "acme_conformance",
        manifest = ":acme.toml",
        library = ":libacme.so",
        samples = [":clip.y4m"],  # the files the manifest's [conformance] samples names
    )

makes a test that starts the backend described by `manifest` through the
host, the trusted runner and the sandbox, and runs every check of
tools/conformance against it, one GoogleTest case per check.
"""

load("@rules_cc//cc:defs.bzl", "cc_test")

_RUNTIME = [
    "//backends/sdk/runner:codecvisor-backend",
    "//backends/cpu:cpu.toml",
    "//backends/cpu:libcodecvisor_cpu.so",
]

def backend_conformance_test(name, manifest, library, samples = [], data = [], size = "large", tags = [], **kwargs):
    """One conformance test target for the backend of `manifest`.

    Args:
      name: the test's name.
      manifest: the backend's manifest (a label of a .toml file).
      library: the backend's shared library, named by the manifest.
      samples: the sample files the manifest's [conformance] `samples` names
        (relative to the manifest, so in its package or below).
      data: anything else the backend needs at run time.
      size: the test size; the suite makes videos and decodes them several ways.
      tags: test tags.
      **kwargs: passed to cc_test.
    """
    runfiles = []
    for label in [manifest, library] + samples + data + _RUNTIME:
        if label not in runfiles:
            runfiles.append(label)
    cc_test(
        name = name,
        size = size,
        args = ["--manifest=$(rootpath %s)" % manifest],
        data = runfiles,
        tags = tags,
        deps = ["//tests:conformance_main"],
        **kwargs
    )
