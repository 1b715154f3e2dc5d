"""Vendor backends registered as Python entry points, found without running
any vendor code.

A plugin package declares, in its metadata::

    [project.entry-points."codecvisor.backends"]
    acme = "acme_codecvisor"              # every *.toml in that package's folder
    acme = "acme_codecvisor:acme.toml"    # or one manifest in it

Discovery reads the installed distributions' metadata and file lists
(importlib.metadata) only: the plugin's module is never imported, so its
Python code never runs in the user's process, and its library is only ever
loaded by the sandboxed backend process. A plugin that cannot be resolved
becomes a failed entry with its diagnostic; it never makes
``import codecvisor`` fail.
"""

import dataclasses
import importlib.metadata
import os
from typing import List, Optional

GROUP = "codecvisor.backends"


@dataclasses.dataclass
class PluginManifest:
    entry_point: str          # "acme = acme_codecvisor:acme.toml"
    distribution: str         # "acme-codecvisor 1.0"
    manifest_path: Optional[str]
    error: Optional[str]      # why it could not be resolved


def _entry_points():
    eps = importlib.metadata.entry_points()
    if hasattr(eps, "select"):
        return list(eps.select(group=GROUP))
    return list(eps.get(GROUP, []))


def _resolve(ep) -> List[PluginManifest]:
    label = f"{ep.name} = {ep.value}"
    dist = getattr(ep, "dist", None)
    dist_label = f"{dist.metadata['Name']} {dist.version}" if dist is not None else "unknown distribution"
    module, _, attr = ep.value.partition(":")
    module, attr = module.strip(), attr.strip()
    if not module or not all(part.isidentifier() for part in module.split(".")):
        return [PluginManifest(label, dist_label, None, f"'{ep.value}' does not name a module")]
    if dist is None or dist.files is None:
        return [PluginManifest(label, dist_label, None, "its distribution lists no installed files")]
    folder = module.replace(".", "/")
    tomls = []
    for f in dist.files:
        path = str(f).replace(os.sep, "/")
        parent, _, name = path.rpartition("/")
        if parent == folder and name.endswith(".toml") and (not attr or name == attr):
            tomls.append(str(dist.locate_file(f)))
    if not tomls:
        wanted = f"{folder}/{attr}" if attr else f"*.toml manifest in {folder}/"
        return [PluginManifest(label, dist_label, None, f"{dist_label} installs no {wanted}")]
    return [PluginManifest(label, dist_label, os.path.abspath(p), None) for p in sorted(tomls)]


def discover() -> List[PluginManifest]:
    """Every manifest registered under the codecvisor.backends group."""
    found = []
    try:
        eps = _entry_points()
    except Exception as e:  # a broken metadata file must not break import
        return [PluginManifest("(entry points)", "", None, f"reading entry points failed: {e}")]
    for ep in sorted(eps, key=lambda e: (e.name, e.value)):
        try:
            found.extend(_resolve(ep))
        except Exception as e:
            found.append(PluginManifest(f"{ep.name} = {ep.value}", "", None, f"cannot resolve: {e}"))
    return found
