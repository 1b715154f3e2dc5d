"""Whether this interpreter and its numpy are ones the extension module was
built for, checked before it is imported: a mismatch otherwise surfaces as
an undefined symbol, or as arrays with wrong strides."""


def interpreter_problem(built_for, implementation: str, version) -> str:
    """Why an interpreter `implementation` (sys.implementation.name) of
    `version` (sys.version_info) cannot load an extension built for CPython
    `built_for` (major, minor); "" when it can."""
    if implementation == "cpython" and tuple(version[:2]) == tuple(built_for):
        return ""
    want = ".".join(map(str, built_for))
    return (f"codecvisor's extension module is built for CPython {want} (the Python whose headers the build "
            f"used), and this is {implementation} {version[0]}.{version[1]}: run it with a CPython {want}")


def numpy_problem(version: str) -> str:
    """Why numpy `version` cannot take the extension's arrays; "" when it can.
    The extension builds with Debian 12's pybind11 (2.10), which reads
    NumPy 1's array descriptors: under NumPy 2 an array's item size, and so
    its strides, would be wrong."""
    try:
        major = int(version.split(".")[0])
    except ValueError:
        return ""
    if major < 2:
        return ""
    return (f"codecvisor's extension module reads NumPy 1's array layout (it is built with pybind11 2.10), and "
            f"this is numpy {version}: install numpy<2 in this Python (Debian 12's python3-numpy is 1.24)")
