"""codecvisor's version: the library's soname, Version() and codecvisor.pc."""

VERSION_MAJOR = 0
VERSION_MINOR = 1
VERSION_PATCH = 0
VERSION = "%d.%d.%d" % (VERSION_MAJOR, VERSION_MINOR, VERSION_PATCH)
SONAME = "libcodecvisor.so.%d" % VERSION_MAJOR
