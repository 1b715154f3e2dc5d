// File: examples/vendor_backend/sdk.h
//
// Where the one codecvisor header the plugin uses comes from. A vendor's
// build (the Makefile) compiles against the installed SDK,
// $(SDK_PREFIX)/include/codecvisor/codecvisor_backend.h, and says so with
// -DDAV1D_PLUGIN_INSTALLED_SDK; the monorepo's Bazel build takes the same
// header from //backends/sdk:backend_abi. Nothing else of codecvisor's is
// ever included.

#ifndef CODECVISOR_EXAMPLES_VENDOR_BACKEND_SDK_H_
#define CODECVISOR_EXAMPLES_VENDOR_BACKEND_SDK_H_

#ifdef DAV1D_PLUGIN_INSTALLED_SDK
#include <codecvisor/codecvisor_backend.h>
#else
#include "backends/sdk/codecvisor_backend.h"
#endif

#endif  // CODECVISOR_EXAMPLES_VENDOR_BACKEND_SDK_H_
