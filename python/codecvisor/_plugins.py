"""Vendor backends registered as Python entry points, found without running
any vendor code.

A plugin package declares, in its metadata::

    [project.entry-points."codecvisor.backends"]
    acme = "acme_codecvisor"              # every *.toml in that package's folder
    acme = "acme_codecvisor:acme.toml"    # or one manifest in it

Discovery reads the installed distributions' metadata and files only: the
plugin's module is never imported, so its Python code never runs in the
user's process, and its library is only ever loaded by the sandboxed backend
process. The package's folder is found, in order, from the distribution's
list of installed files (a wheel's RECORD), from the source tree of an
editable install (``pip install -e``: direct_url.json; never a folder
inside the Python installation the distribution is installed in but
outside its packages and src/, where its wheel could have put data
files), or next to the metadata folder when it lists no files (Debian's
.egg-info). A plugin that
cannot be resolved becomes a failed entry with its diagnostic; it never
makes ``import codecvisor`` fail, and never hides another plugin.
"""

import dataclasses
import importlib.metadata
import json
import os
import re
import site
import stat
import urllib.parse
from typing import Iterator, List, Optional, Set

GROUP = "codecvisor.backends"
_VALUE_SHAPE = "the value must be `package` or `package:manifest.toml`"


@dataclasses.dataclass
class PluginManifest:
    name: str                 # the entry point's name ("acme"), or the distribution's when its entry points are unreadable
    entry_point: str          # "acme = acme_codecvisor:acme.toml"; "" when the distribution's entry points are unreadable
    distribution: str         # "acme-codecvisor 1.0"
    manifest_path: Optional[str]
    error: Optional[str]      # why it could not be resolved

    @property
    def source(self) -> str:
        """Where it came from, as codecvisor.backends.list() shows it."""
        if self.entry_point:
            return f"entry point {self.entry_point} ({self.distribution})"
        return f"entry points of {self.distribution}"


def discover() -> List[PluginManifest]:
    """Every manifest registered under the codecvisor.backends group."""
    found = []
    for dist in _plugin_distributions():
        found.extend(_resolve_distribution(dist))
    return sorted(found, key=lambda p: (p.name, p.entry_point, p.manifest_path or ""))


# The most of a manifest the host reads (kMaxManifestBytes, core/manifest.h).
_MAX_MANIFEST_BYTES = 64 << 10


def manifest_names(path: Optional[str]) -> Set[str]:
    """The backend name and device names a manifest declares, as far as it
    can be read (a broken plugin's manifest may be garbage): so that asking
    for a failed plugin's device can name the plugin."""
    try:
        import tomllib  # Python 3.11
        # As the host reads a manifest: only a regular file, opened without
        # blocking (a FIFO would hang this lookup forever), and no more of it
        # than the host would read.
        if not stat.S_ISREG(os.stat(path).st_mode):
            return set()
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return set()
            text = os.read(fd, _MAX_MANIFEST_BYTES + 1)
        finally:
            os.close(fd)
        if len(text) > _MAX_MANIFEST_BYTES:
            return set()
        manifest = tomllib.loads(text.decode("utf-8"))
        devices = manifest.get("devices")
        names = [manifest.get("name")] + (devices if isinstance(devices, list) else [])
        return {n.split(":")[0] for n in names if isinstance(n, str)}
    except Exception:
        return set()


# --- which distributions declare plugins ---------------------------------


def _plugin_distributions() -> Iterator[importlib.metadata.Distribution]:
    """The installed distributions whose entry_points.txt has a
    codecvisor.backends section, first on sys.path first.

    Each file is looked at on its own, not through the global
    importlib.metadata.entry_points(), which raises for all if any one
    distribution's file is malformed. A distribution without the section is
    none of ours, even when its file is malformed."""
    seen = set()
    for dist in importlib.metadata.distributions():
        try:
            text = _metadata_text(dist, "entry_points.txt")
        except Exception:  # unreadable: it may be a plugin, let its row say why
            text = f"[{GROUP}]"
        if not text or not _declares_group(text):
            continue
        # Several copies on sys.path: the first shadows the rest, as for imports.
        key = _irregular_metadata(dist) or _normalized_name(dist)
        if key in seen:
            continue
        seen.add(key)
        yield dist


# The metadata files importlib.metadata may read of a distribution.
_METADATA_FILES = ("METADATA", "PKG-INFO", "entry_points.txt", "RECORD", "installed-files.txt", "SOURCES.txt",
                   "direct_url.json")


def _irregular_metadata(dist) -> Optional[str]:
    """Why one of the distribution's metadata files is not a regular file
    (a FIFO would block importlib.metadata's read of it forever, and with it
    the first decoder), or None."""
    folder = getattr(dist, "_path", None)
    if folder is None:
        return None
    for name in _METADATA_FILES:
        path = os.path.join(os.fspath(folder), name)
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        if not stat.S_ISREG(mode):
            return f"{path} is not a regular file"
    return None


def _metadata_text(dist, name: str) -> Optional[str]:
    """dist.read_text(name), read only from a regular file and without
    blocking; None where the distribution has no such file."""
    folder = getattr(dist, "_path", None)
    if folder is None:
        return dist.read_text(name)
    path = os.path.join(os.fspath(folder), name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8")


def _declares_group(text: str) -> bool:
    return any(line.strip() == f"[{GROUP}]" for line in text.splitlines())


def _normalized_name(dist) -> str:
    return re.sub(r"[-_.]+", "-", _dist_name(dist)).lower()


def _dist_name(dist) -> str:
    try:
        return dist.metadata["Name"] or "unnamed distribution"
    except Exception:
        return "unnamed distribution"


def _dist_label(dist) -> str:
    try:
        return f"{_dist_name(dist)} {dist.version}"
    except Exception:
        return _dist_name(dist)


def _resolve_distribution(dist) -> List[PluginManifest]:
    irregular = _irregular_metadata(dist)
    if irregular is not None:
        folder = os.path.basename(os.fspath(dist._path))
        return [PluginManifest(folder, "", folder, None, f"{folder}: its metadata cannot be read: {irregular}")]
    label = _dist_label(dist)
    try:
        eps = [ep for ep in dist.entry_points if ep.group == GROUP]
    except Exception as e:  # a malformed entry_points.txt costs this distribution only
        why = _malformed_line(dist) or str(e)
        return [PluginManifest(_dist_name(dist), "", label, None, f"{label}: entry_points.txt cannot be read: {why}")]
    found = []
    for ep in eps:
        try:
            found.extend(_resolve(ep, dist, label))
        except Exception as e:
            found.append(PluginManifest(ep.name, f"{ep.name} = {ep.value}", label, None, f"cannot resolve: {e}"))
    return found


def _malformed_line(dist) -> Optional[str]:
    """The first line of a section that is not `name = value`, quoted."""
    try:
        section = None
        for line in (_metadata_text(dist, "entry_points.txt") or "").splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("[") and line.endswith("]"):
                section = line.strip("[]")
            elif section is not None and "=" not in line:
                return f"line '{line}' in [{section}] is not `name = value`"
    except Exception:
        pass
    return None


# --- one entry point to its manifests --------------------------------------


def _resolve(ep, dist, dist_label) -> List[PluginManifest]:
    label = f"{ep.name} = {ep.value}"

    def failed(why):
        return [PluginManifest(ep.name, label, dist_label, None, why)]

    package, _, manifest = (part.strip() for part in ep.value.partition(":"))
    if not package or not all(part.isidentifier() for part in package.split(".")):
        return failed(f"'{ep.value}' does not name a package: {_VALUE_SHAPE}")
    if ":" in ep.value and not _is_manifest_name(manifest):
        # Say so rather than look for a file named after a Python attribute:
        # a plugin's entry point is read as data, never imported.
        return failed(f"'{ep.value}' names no manifest: {_VALUE_SHAPE} (it is never imported)")
    folder = package.replace(".", "/")
    wanted = f"{folder}/{manifest}" if manifest else f"*.toml manifest in {folder}/"
    paths, looked_in = _find_manifests(dist, folder, manifest)
    if not paths:
        return failed(f"{dist_label} installs no {wanted}{looked_in}")
    return [PluginManifest(ep.name, label, dist_label, os.path.abspath(p), None) for p in sorted(paths)]


def _is_manifest_name(name: str) -> bool:
    return name.endswith(".toml") and "/" not in name and "\\" not in name


def _find_manifests(dist, folder, manifest):
    """(manifest paths, a note on where else it looked, for the diagnostic).
    `folder` is the package's, relative to the site folder ("acme/sub")."""
    files = dist.files
    if files is not None:
        listed = _listed_manifests(dist, files, folder, manifest)
        if listed:
            return listed, ""
        # An editable install's RECORD lists only its .pth and finder: the
        # package is in the source tree it was installed from.
        source = _editable_source(dist)
        if source is None:
            return [], ""
        candidates = [os.path.join(source, folder), os.path.join(source, "src", folder)]
        note = f"an editable install of {source}"
    else:
        # No RECORD, no SOURCES.txt (Debian installs an .egg-info with
        # neither): the package folder sits next to the metadata folder.
        candidates = [os.fspath(dist.locate_file(folder))]
        note = "its metadata lists no installed files"
    refused = []
    for candidate in candidates:
        found = _manifests_in_folder(candidate, manifest)
        if not found:
            continue
        # A wheel may write data files anywhere under the prefix it is
        # installed into (~/.local/share for pip --user), and its own
        # direct_url.json may claim an editable source there: a manifest
        # found so would make ~/.local/share (keyrings and all) the
        # plugin's own folder, which the sandbox lets it read.
        prefix = _installation_holding(candidate, dist) if files is not None else None
        if prefix is not None:
            # (The next candidate, DIR/src/package, may still be the one.)
            refused.append(f"{candidate} is inside the Python installation {prefix} but outside its packages, where "
                           "only a package's data files lie: not a plugin's folder")
            continue
        return found, ""
    if refused:
        return [], f" ({note}: {'; '.join(refused)})"
    return [], f" ({note}; looked in {' and '.join(candidates)})"


def _installation_holding(candidate, dist) -> Optional[str]:
    """The prefix of the Python installation `dist` is installed in, if
    `candidate` lies inside it but outside its packages and its src/ (where
    pip checks out `pip install -e git+...` sources in a virtualenv), or
    None. That prefix (PREFIX/lib/pythonX.Y/site-packages, PREFIX/lib/
    python3/dist-packages; and the user base for a distribution in the user
    site) is the only place its wheel could have written data files: a
    checkout in another one (/usr/local/src for a --user install) is not."""
    try:
        located = os.path.abspath(os.fspath(dist.locate_file("")))
    except Exception:
        return None
    prefixes = []
    # As written and where it really is: a site-packages that is a link
    # to another folder still names its installation's layout.
    for packages in {located, os.path.realpath(located)}:
        rest, kind = os.path.split(packages)
        rest, python = os.path.split(rest)
        prefix, lib = os.path.split(rest)
        if (kind in ("site-packages", "dist-packages") and python.startswith(("python", "pypy"))
                and lib in ("lib", "lib64")):
            prefixes.append(prefix)
        try:
            if os.path.realpath(packages) == os.path.realpath(site.getusersitepackages()):
                prefixes.append(site.getuserbase())
        except Exception:
            pass
    real = os.path.realpath(candidate)
    for prefix in prefixes:
        root = os.path.realpath(prefix)
        if root == os.sep:  # an installation at / would make every folder its own
            continue
        parts = os.path.relpath(real, root).split(os.sep)
        if parts[0] == os.pardir:
            continue
        if parts[0] == "src" and len(parts) > 1:
            continue
        if (len(parts) > 3 and parts[0] in ("lib", "lib64") and parts[1].startswith(("python", "pypy"))
                and parts[2] in ("site-packages", "dist-packages")):
            continue
        return root
    return None


def _listed_manifests(dist, files, folder, manifest) -> List[str]:
    out = []
    for f in files:
        parent, _, name = str(f).replace(os.sep, "/").rpartition("/")
        if parent == folder and name.endswith(".toml") and (not manifest or name == manifest):
            out.append(os.fspath(dist.locate_file(f)))
    return out


def _editable_source(dist) -> Optional[str]:
    """The source folder of a `pip install -e` (PEP 610's direct_url.json:
    dir_info.editable, url file://...), or None."""
    try:
        info = json.loads(_metadata_text(dist, "direct_url.json") or "{}")
        if not info.get("dir_info", {}).get("editable"):
            return None
        url = urllib.parse.urlsplit(info["url"])
        if url.scheme != "file" or url.netloc not in ("", "localhost"):
            return None
        return urllib.parse.unquote(url.path, errors="surrogateescape")
    except Exception:  # no file, or not the JSON PEP 610 describes
        return None


def _manifests_in_folder(folder, manifest) -> List[str]:
    try:
        if manifest:
            path = os.path.join(folder, manifest)
            return [path] if os.path.isfile(path) else []
        with os.scandir(folder) as entries:
            return [e.path for e in entries if e.name.endswith(".toml") and e.is_file()]
    except OSError:
        return []
