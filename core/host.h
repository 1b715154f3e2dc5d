// File: core/host.h
//
// codecvisor::Host: the entry point of the library. It holds the registry of
// backends, starts each backend's sandboxed child on first use, and opens
// VideoDecoders on them. No backend code ever runs in the host process.
//
// Thread-safety: all methods may be called from any thread. Destroying the
// Host stops every backend child within a bounded time; decoders that
// outlive it see their backend gone (kUnavailable) and nothing worse.

#ifndef CODECVISOR_CORE_HOST_H_
#define CODECVISOR_CORE_HOST_H_

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ipc/mutex.h"
#include "core/backend_process.h"
#include "core/install_layout.h"
#include "core/manifest.h"
#include "core/process.h"
#include "core/video_decoder.h"

namespace codecvisor {

struct HostOptions {
  std::string default_device = "cpu";
  std::chrono::milliseconds spawn_timeout{10'000};
  // Where the runner and built-in manifests are; discovered when empty.
  std::optional<InstallLayout> layout;
};

// What `codecvisor backends` shows for one backend.
struct BackendStatus {
  std::string name;
  std::vector<std::string> devices;
  std::string manifest_path;
  std::string state;       // "discovered", "ready", "failed"
  std::string diagnostic;  // why it failed, if it did
  pid_t pid = -1;
};

class Host {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Host>> Create(HostOptions options = {});
  ~Host();

  // Opens the video at `path` on the device in `options` (the default device
  // if empty). The host opens the file and hands the backend the descriptor.
  [[nodiscard]] absl::StatusOr<std::unique_ptr<VideoDecoder>> OpenDecoder(absl::string_view path,
                                                                          DecoderOptions options = {});

  // Registers the backend described by the manifest at `manifest_path`.
  // Only reads the manifest: the backend's child starts on first use.
  // kInvalidArgument for a malformed manifest, kAlreadyExists for a name
  // that is taken.
  [[nodiscard]] absl::Status LoadBackend(absl::string_view manifest_path);

  std::vector<BackendStatus> Backends() const;

 private:
  explicit Host(HostOptions options, InstallLayout layout);
  // Registers a backend from its manifest; the first one to claim a device keeps it.
  absl::Status Register(const BackendManifest& manifest) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The running backend serving `device` ("name" or "name:index"), started if needed.
  absl::StatusOr<std::shared_ptr<BackendProcess>> BackendFor(absl::string_view device);

  struct Entry {
    BackendManifest manifest;
    std::shared_ptr<BackendProcess> process;
    absl::Status failure;
  };

  HostOptions options_;
  InstallLayout layout_;
  std::shared_ptr<ProcessLauncher> launcher_;
  mutable Mutex mu_;
  std::map<std::string, Entry> backends_ ABSL_GUARDED_BY(mu_);       // by name
  std::map<std::string, std::string> devices_ ABSL_GUARDED_BY(mu_);  // device -> name
};

// Splits "acme:1" into ("acme", 1) and "cpu" into ("cpu", -1).
[[nodiscard]] absl::StatusOr<std::pair<std::string, int>> ParseDevice(absl::string_view device);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_HOST_H_
