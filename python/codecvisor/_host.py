"""The process's codecvisor Host: made on first use, one per process.

A forked child (a DataLoader worker started with fork) must not use or stop
its parent's Host and backend processes. After a fork the child forgets the
inherited Host without destroying it (os.register_at_fork), and makes its own
on first use; decoders notice the new pid and reopen from their source.

The Host also loads the entry-point plugins (_plugins.py), each on its own:
one that fails is kept, with why, for codecvisor.backends.list() and for the
error of whoever asks for its device.
"""

import multiprocessing.util
import os
import sys
import threading
import warnings

from . import _codecvisor, _errors, _plugins, _worker_memory

_lock = threading.Lock()
_host = None
_host_pid = None
_forked = False  # this process is a fork of one that imported codecvisor
_warned = set()  # the host warnings this process (or the one it was forked from) has warned


def _autoload():
    # As torch and torchcodec read their switches: on only when unset or
    # "1", so that "false" or "off" turns it off too.
    return os.environ.get("CODECVISOR_DEVICE_BACKEND_AUTOLOAD", "1") == "1"


class Host:
    """The extension's Host, with what only the Python side knows: the
    entry-point plugins, loaded or failed. A plugin that failed before the
    host saw it (its manifest unresolved or rejected) is unknown to the
    host, whose NOT_FOUND for its device would only say that nothing serves
    it; here that error names the plugin and why it failed."""

    def __init__(self, native, loaded, failures, shadowed=()):
        self._native = native
        self.loaded = loaded      # PluginManifest registered with the host
        self.failures = failures  # (PluginManifest, reason) that did not load
        self.shadowed = list(shadowed)  # warnings: entry points whose backend came earlier

    def __getattr__(self, attr):  # everything else is the extension's
        return getattr(self._native, attr)

    def warnings(self):
        return self._native.warnings() + self.shadowed

    def open_path(self, path, device, *args, **kwargs):
        return self._call("device", device, self._native.open_path, path, device, *args, **kwargs)

    def open_bytes(self, data, label, device, *args, **kwargs):
        return self._call("device", device, self._native.open_bytes, data, label, device, *args, **kwargs)

    def start_backend(self, name, *args, **kwargs):
        return self._call("backend", name, self._native.start_backend, name, *args, **kwargs)

    def _call(self, what, name, method, *args, **kwargs):
        try:
            return method(*args, **kwargs)
        except _codecvisor.StatusError as e:
            raise self._explained(e, what, name or self._native.default_device()) from None

    def _explained(self, error, what, name):
        """`error`, or when it is the host not knowing device or backend
        `name` and an entry point for that name failed, a StatusError of the
        same code that says which entry point and why."""
        key = name.split(":")[0]
        if getattr(error, "code", None) != "NOT_FOUND" or self._host_knows(what, key):
            return error
        reasons = [f"{plugin.source} failed to load: {why}" for plugin, why in self.failures
                   if key == plugin.name or key in _plugins.manifest_names(plugin.manifest_path)]
        if not reasons:
            return error
        explained = _codecvisor.StatusError(
            f"{what} '{name}': " + "; ".join(reasons) +
            "; fix or remove the plugin, or set CODECVISOR_DEVICE_BACKEND_AUTOLOAD=0")
        explained.code = error.code
        return explained

    def _host_knows(self, what, key):
        # Then its own message is about that backend (a stream it lacks, a
        # library it cannot load), not about a plugin that never reached it.
        if what == "device":
            return any(key in b["devices"] or key == b["name"] for b in self._native.backends())
        return any(key == b["name"] for b in self._native.backends())


def _make():
    try:
        native = _codecvisor.Host(backend_path=None, autoload=None, default_device="")
    except _codecvisor.StatusError as e:
        raise _errors.translate(e) from None
    loaded, failures, shadowed = _load_plugins(native) if _autoload() else ([], [], [])
    return Host(native, loaded, failures, shadowed)


def _load_plugins(native):
    """Registers every entry-point manifest with `native`: (loaded, failures,
    shadowed). Whatever one plugin does, the others and the built-in
    backends load. An entry point whose backend's name a manifest earlier in
    the search order has (a development build on CODECVISOR_BACKEND_PATH
    over the installed package, or the name `cpu`) is shadowed: a warning,
    not a failure."""
    loaded, failures, shadowed = [], [], []
    try:
        plugins = _plugins.discover()
    except Exception as e:  # discovery guards each distribution; this is the last resort
        plugins = [_plugins.PluginManifest("(entry points)", "", "", None, f"reading entry points failed: {e}")]
    # A manifest the host already has (from CODECVISOR_BACKEND_PATH, or named
    # by an earlier entry point) is the same backend: loading it again would
    # only fail as "already provided by" itself.
    seen = {_file_key(b["manifest_path"]) for b in native.backends() if b["manifest_path"]}
    for plugin in plugins:
        if plugin.error is not None:
            failures.append((plugin, plugin.error))
            continue
        key = _file_key(plugin.manifest_path)
        if key in seen:
            continue
        seen.add(key)
        try:
            # As bytes: a folder whose name is not UTF-8 is a path all the same.
            native.load_backend(os.fsencode(plugin.manifest_path))
            loaded.append(plugin)
        except _codecvisor.StatusError as e:
            if getattr(e, "code", None) == "ALREADY_EXISTS":
                shadowed.append(f"entry point {plugin.source}: manifest {plugin.manifest_path} is not used: {e}")
            else:
                failures.append((plugin, str(e)))
        except Exception as e:  # never let one plugin break the others, or cpu
            failures.append((plugin, f"cannot be loaded: {type(e).__name__}: {e}"))
    return loaded, failures, shadowed


def _file_key(path):
    """What tells two paths to one manifest file apart from two files."""
    try:
        st = os.stat(path)
        return (st.st_dev, st.st_ino)
    except (OSError, ValueError):
        return os.path.abspath(path)


def get():
    """The Host of this process, made on first use."""
    global _host, _host_pid
    made = None
    with _lock:
        if _host is None or _host_pid != os.getpid():
            _host = made = _make()
            _host_pid = os.getpid()
            if _forked or multiprocessing.parent_process() is not None:
                # A forked multiprocessing child (a DataLoader worker, with
                # the fork or the forkserver start method, whose worker may
                # import codecvisor only after its fork) ends with
                # os._exit, past the interpreter's teardown: its Host would
                # never stop and reap its backends, which the kernel then
                # kills and hands, unreaped, to init (zombies for the rest
                # of a job whose trainer is a container's PID 1).
                # multiprocessing runs its exit finalizers before os._exit.
                multiprocessing.util.Finalize(None, _close_if_alone, args=(_host,), exitpriority=0)
        host = _host
    if made is not None:
        # A Dask worker's first use of codecvisor, whatever the task: its
        # batch cache within the worker's memory limit.
        _worker_memory.fit_batch_cache_to_worker()
        # Once the host is this process's, outside the lock: a warning
        # turned into an error (-W error) fails this call, not every call,
        # and a showwarning hook may use codecvisor. Blamed on the user's
        # line that made the host; shown once per process, and not again in
        # a forked child whose parent showed it.
        for warning in made.warnings():
            if warning in _warned:  # by this process, or by the parent it was forked from
                continue
            warnings.warn(f"codecvisor: {warning}", _errors.CodecvisorWarning, stacklevel=_caller_level())
            _warned.add(warning)  # not when the filter made it an error: a child's host raises it too
    return host


def _caller_level():
    """warnings.warn's stacklevel, called from here, for the first frame
    outside this package: the user's line that made the host."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == package:
        frame, level = frame.f_back, level + 1
    return level


def _close_if_alone(host):
    # The finalizers run as the Process's target returns, before its other
    # threads are joined: a thread of the child's may still be in a call on
    # this Host, which must not go from under it. So it is closed only when
    # the other threads are multiprocessing's own (a DataLoader worker's
    # queue feeder and descriptor server), which never call codecvisor;
    # otherwise the backends are left to the kernel, as before.
    def multiprocessings(thread):
        target = getattr(thread, "_target", None)
        return thread.daemon and getattr(target, "__module__", "").startswith("multiprocessing.")
    me = threading.current_thread()
    if all(t is me or multiprocessings(t) for t in threading.enumerate()):
        host.close()


def plugin_failures():
    return list(get().failures)


def loaded_plugins():
    return list(get().loaded)


def _forget_after_fork():
    # The inherited Host is the parent's: dropping our reference leaks it in
    # this process (its destructor knows it is not ours), and the next get()
    # makes this process's own.
    global _host, _host_pid, _lock, _forked
    _lock = threading.Lock()  # a lock held by a parent thread at fork stays held here
    _host = None
    _host_pid = None
    _forked = True


os.register_at_fork(after_in_child=_forget_after_fork)
