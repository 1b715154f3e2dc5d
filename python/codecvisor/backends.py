"""codecvisor.backends: which decoding backends this process can use.

Backends are found from manifests only (the built-in "cpu" one, folders on
CODECVISOR_BACKEND_PATH, the install prefix, and Python entry points in the
``codecvisor.backends`` group); no plugin code runs in this process. A broken
plugin is listed with its diagnostic and fails only a decoder that names its
device.
"""

import dataclasses
import os
from typing import List, Optional

from . import _codecvisor, _errors, _host, _open_errors, decoders


@dataclasses.dataclass
class BackendInfo:
    name: str
    devices: List[str]
    source: str               # "built-in", "path", or "entry point NAME = VALUE (DIST VERSION)"
    manifest_path: Optional[str]
    state: str                # discovered, failed, spawning, ready, restarting, quarantined
    diagnostic: str           # why it failed or is quarantined
    pid: Optional[int] = None
    restarts: int = 0
    sandbox: str = ""
    # Idle decoders' sessions closed to make room in the backend for others,
    # re-opened on their next call.
    parked: int = 0
    version: str = ""


def list(start: bool = False, timeout: float = 15.0) -> List[BackendInfo]:  # noqa: A001 (torch-style name)
    """Every backend this process can use, with its source, state and
    diagnostic. Nothing is started: a plugin whose manifest is sound is
    "discovered" until its device is first used, even one whose library
    cannot load. With ``start``, each discovered backend is started first
    (at most ``timeout`` seconds each), as ``codecvisor backends`` does, so
    that one that cannot load or dies as it starts is listed as "failed",
    saying why."""
    host = _host.get()
    if start:
        decoders._check_timeout("timeout", timeout)
        for b in host.backends():
            if b["state"] == "discovered":
                try:
                    host.start_backend(b["name"], timeout)
                except _codecvisor.StatusError:
                    pass  # its state and diagnostic say why, below
    failed = [BackendInfo(name=plugin.name, devices=[], source=plugin.source, manifest_path=plugin.manifest_path,
                          state="failed", diagnostic=reason) for plugin, reason in host.failures]
    # Keyed as the host spells the path it was given (os.fsencode of ours):
    # its text is UTF-8 with any other byte backslash-escaped.
    from_entry_points = {os.fsencode(plugin.manifest_path).decode("utf-8", "backslashreplace"): plugin.source
                         for plugin in host.loaded}
    out = []
    for b in host.backends():
        path = b["manifest_path"]
        source = from_entry_points.get(path, "built-in" if b["name"] == "cpu" else "path")
        out.append(BackendInfo(name=b["name"], devices=b["devices"], source=source, manifest_path=path,
                               state=b["state"], diagnostic=b["diagnostic"], pid=b["pid"] if b["pid"] > 0 else None,
                               restarts=b["restarts"], sandbox=b["sandbox"], version=b["version"],
                               parked=b["parked"]))
    return out + failed


def start(name: str, timeout: float = 15.0) -> None:
    """Starts backend ``name``'s process now (else it starts on first use);
    raises with its diagnostic if it cannot (for an entry-point plugin that
    failed to load, NoSuchDeviceError saying why)."""
    decoders._check_timeout("timeout", timeout)
    host = _host.get()
    try:
        host.start_backend(name, timeout)
    except _codecvisor.StatusError as e:
        unloadable = _open_errors.plugin_unloadable(host.backends(), getattr(e, "code", None),
                                                    lambda b: b["name"] == name)
        raise _errors.translate(e, plugin_unloadable=unloadable) from None


def reset(name: str) -> None:
    """Lifts backend ``name``'s quarantine or failed state in this process,
    so that its next use starts it afresh (after crashes you have dealt
    with, or a plugin you have fixed). A quarantine otherwise ends by
    itself after a minute (longer each time it comes back), or with the
    process's host; nothing outside the process can lift it."""
    try:
        _host.get().reset_backend(name)
    except _codecvisor.StatusError as e:
        raise _errors.translate(e) from None


def warnings() -> List[str]:
    return _host.get().warnings()
