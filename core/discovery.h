// File: core/discovery.h
//
// Finding installed backends: the analogue of scanning Python entry points.
// Discovery only reads manifest files (never a plugin library) and never
// fails as a whole: a broken manifest becomes a failed entry with its
// diagnostic, and a device claimed twice becomes a warning. Thread-safe.

#ifndef CODECVISOR_CORE_DISCOVERY_H_
#define CODECVISOR_CORE_DISCOVERY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/manifest.h"

namespace codecvisor {

inline constexpr char kBuiltinBackend[] = "cpu";

struct DiscoveryOptions {
  std::vector<std::string> search_path;  // searched first, in order
  std::string builtin_dir;               // the install prefix's backends folder; holds cpu.toml
  bool autoload = true;                  // false: only the built-in cpu backend
  // What turned autoload off, for messages: the environment's setting
  // ("CODECVISOR_DEVICE_BACKEND_AUTOLOAD=0"), empty where options did.
  std::string autoload_setting;
};

// Reads CODECVISOR_BACKEND_PATH (colon-separated folders) and
// CODECVISOR_DEVICE_BACKEND_AUTOLOAD ("0" turns third-party discovery off).
DiscoveryOptions DiscoveryOptionsFromEnvironment(std::string builtin_dir);

struct DiscoveredBackend {
  std::string manifest_path;
  std::string name;  // from the manifest, or the file's stem if it is unreadable
  absl::StatusOr<BackendManifest> manifest;
  std::vector<std::string> devices;  // the devices this backend won (may be fewer than it claims)
};

struct Discovery {
  std::vector<DiscoveredBackend> backends;  // search order; the built-in cpu backend always included
  std::vector<std::string> warnings;        // e.g. two manifests claiming one device
};

// Every `*.toml` in each folder of the search path (sorted by file name),
// then the built-in folder. The first manifest to claim a device keeps it,
// except `cpu`, which only the built-in backend serves. A second manifest
// with a name already taken is recorded as failed.
Discovery DiscoverBackends(const DiscoveryOptions& options);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_DISCOVERY_H_
