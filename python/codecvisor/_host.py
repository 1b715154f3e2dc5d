"""The process's codecvisor Host: made on first use, one per process.

A forked child (a DataLoader worker started with fork) must not use or stop
its parent's Host and backend processes. After a fork the child forgets the
inherited Host without destroying it (os.register_at_fork), and makes its own
on first use; decoders notice the new pid and reopen from their source.
"""

import os
import threading

from . import _codecvisor, _errors, _plugins

_lock = threading.Lock()
_host = None
_host_pid = None
_plugin_failures = []  # (PluginManifest, reason) that did not load
_plugins_loaded = []   # PluginManifest registered with the host


def _autoload():
    return os.environ.get("CODECVISOR_DEVICE_BACKEND_AUTOLOAD", "1") != "0"


def _make():
    global _plugin_failures, _plugins_loaded
    try:
        host = _codecvisor.Host(backend_path=None, autoload=None, default_device="")
    except _codecvisor.StatusError as e:
        raise _errors.translate(e) from None
    failures, loaded = [], []
    if _autoload():
        for plugin in _plugins.discover():
            if plugin.error is not None:
                failures.append((plugin, plugin.error))
                continue
            try:
                host.load_backend(plugin.manifest_path)
                loaded.append(plugin)
            except _codecvisor.StatusError as e:
                failures.append((plugin, str(e)))
    _plugin_failures, _plugins_loaded = failures, loaded
    return host


def get():
    """The Host of this process, made on first use."""
    global _host, _host_pid
    with _lock:
        if _host is None or _host_pid != os.getpid():
            _host = _make()
            _host_pid = os.getpid()
        return _host


def plugin_failures():
    get()
    return list(_plugin_failures)


def loaded_plugins():
    get()
    return list(_plugins_loaded)


def _forget_after_fork():
    # The inherited Host is the parent's: dropping our reference leaks it in
    # this process (its destructor knows it is not ours), and the next get()
    # makes this process's own.
    global _host, _host_pid, _lock
    _lock = threading.Lock()  # a lock held by a parent thread at fork stays held here
    _host = None
    _host_pid = None


os.register_at_fork(after_in_child=_forget_after_fork)
