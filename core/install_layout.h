// File: core/install_layout.h
//
// Where the host finds the trusted runner and the built-in backends'
// manifests: next to the running program, in a Bazel runfiles tree, or in an
// installed prefix. Thread-safe (pure, reads the environment).

#ifndef CODECVISOR_CORE_INSTALL_LAYOUT_H_
#define CODECVISOR_CORE_INSTALL_LAYOUT_H_

#include <string>

#include "absl/status/statusor.h"

namespace codecvisor {

struct InstallLayout {
  std::string runner;        // the codecvisor-backend executable
  std::string builtin_dir;   // folder holding cpu.toml and its library

  // Looks, in order, at:
  //  1. CODECVISOR_RUNNER and CODECVISOR_BUILTIN_BACKENDS (both must be set);
  //  2. a Bazel runfiles tree (RUNFILES_DIR, TEST_SRCDIR, or <exe>.runfiles);
  //  3. an installed prefix around the code: libcodecvisor.so (PREFIX/lib)
  //     or the Python extension (PREFIX/lib/python3/site-packages/codecvisor)
  //     when linked shared, then around the program (PREFIX/bin):
  //     PREFIX/libexec/codecvisor/codecvisor-backend and
  //     PREFIX/lib/codecvisor/backends.
  // kNotFound lists every place it looked.
  [[nodiscard]] static absl::StatusOr<InstallLayout> Discover();
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_INSTALL_LAYOUT_H_
