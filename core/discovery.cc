#include "core/discovery.h"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace codecvisor {
namespace {

std::vector<std::string> ManifestsIn(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".toml") == 0 && name[0] != '.') {
      out.push_back(dir + "/" + name);
    }
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string Stem(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string file = slash == std::string::npos ? path : path.substr(slash + 1);
  return file.substr(0, file.size() - 5);
}

// The path with links and dots resolved, or as given where it cannot be.
std::string Canonical(const std::string& path) {
  std::error_code error;
  std::filesystem::path canonical = std::filesystem::canonical(path, error);
  return error ? path : canonical.string();
}

}  // namespace

DiscoveryOptions DiscoveryOptionsFromEnvironment(std::string builtin_dir) {
  DiscoveryOptions o;
  o.builtin_dir = std::move(builtin_dir);
  if (const char* path = std::getenv("CODECVISOR_BACKEND_PATH"); path != nullptr) {
    for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) o.search_path.emplace_back(dir);
  }
  if (const char* autoload = std::getenv("CODECVISOR_DEVICE_BACKEND_AUTOLOAD"); autoload != nullptr) {
    o.autoload = std::string(autoload) == "1";  // as torch reads its switch: anything else is off
    if (!o.autoload) o.autoload_setting = absl::StrCat("CODECVISOR_DEVICE_BACKEND_AUTOLOAD=", autoload);
  }
  return o;
}

Discovery DiscoverBackends(const DiscoveryOptions& options) {
  std::vector<std::string> paths;
  const std::string builtin = options.builtin_dir + "/" + kBuiltinBackend + ".toml";
  if (options.autoload) {
    for (const std::string& dir : options.search_path) {
      for (std::string& p : ManifestsIn(dir)) paths.push_back(std::move(p));
    }
    for (std::string& p : ManifestsIn(options.builtin_dir)) {
      if (p != builtin) paths.push_back(std::move(p));
    }
  }
  // The built-in backend is registered first, so that it always keeps `cpu`
  // and its name, but listed where the search order puts it.
  Discovery out;
  std::map<std::string, std::string> owner_of_device;  // device -> manifest path
  std::map<std::string, std::string> owner_of_name;
  // `cpu` belongs to the built-in backend even if its manifest is broken.
  owner_of_device[kBuiltinBackend] = builtin;
  owner_of_name[kBuiltinBackend] = builtin;
  auto add = [&](const std::string& path) {
    DiscoveredBackend b;
    b.manifest_path = path;
    b.manifest = LoadManifest(path);
    b.name = b.manifest.ok() ? b.manifest->name : Stem(path);
    if (b.manifest.ok()) {
      if (auto it = owner_of_name.find(b.name); it != owner_of_name.end() && it->second != path) {
        // Shadowed: a copy of a backend earlier on the search path (a
        // vendor's development build on CODECVISOR_BACKEND_PATH over the
        // installed one), or a plugin named `cpu`. Said, not a failure.
        out.warnings.push_back(absl::StrCat("manifest ", path, " is not used: backend '", b.name, "' is ",
                                            b.name == kBuiltinBackend
                                                ? "the built-in backend's name, from "
                                                : "provided by a manifest earlier in the search order, ",
                                            it->second));
        return;
      }
      owner_of_name[b.name] = path;
      for (const std::string& device : b.manifest->devices) {
        auto [it2, fresh] = owner_of_device.emplace(device, path);
        if (fresh || it2->second == path) {
          b.devices.push_back(device);
        } else {
          out.warnings.push_back(absl::StrCat("device '", device, "' is claimed by ", it2->second, " and ", path, "; ",
                                              it2->second, " keeps it"));
        }
      }
    }
    out.backends.push_back(std::move(b));
  };
  add(builtin);
  // A folder listed twice (CODECVISOR_BACKEND_PATH=/d:/d, or the install's
  // own) is read once: its manifests are not others providing the same name.
  std::set<std::string> seen = {Canonical(builtin)};
  for (const std::string& p : paths) {
    if (seen.insert(Canonical(p)).second) add(p);
  }
  // A broken manifest is listed under its file's stem. It must not share a
  // name with a working backend (the host routes a name's devices to the
  // entry of that name) or with an earlier broken one: such an entry is
  // listed as "stem (path)". The built-in comes first and keeps `cpu`.
  std::set<std::string> working;
  for (const DiscoveredBackend& b : out.backends) {
    if (b.manifest.ok()) working.insert(b.name);
  }
  std::set<std::string> listed;
  for (DiscoveredBackend& b : out.backends) {
    if (!b.manifest.ok() && (working.count(b.name) > 0 || listed.count(b.name) > 0)) {
      b.name = absl::StrCat(b.name, " (", b.manifest_path, ")");
    }
    listed.insert(b.name);
  }
  return out;
}

}  // namespace codecvisor
