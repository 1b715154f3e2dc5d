// File: core/host.h
//
// codecvisor::Host: the entry point of the library. At creation it
// discovers installed backends (the built-in cpu one always, third-party
// ones from CODECVISOR_BACKEND_PATH and the install prefix unless
// CODECVISOR_DEVICE_BACKEND_AUTOLOAD=0), reading their manifests only: no
// backend code ever runs in the host process. Each backend gets a
// Supervisor that starts its sandboxed child on first use (or eagerly) and
// keeps it running; VideoDecoders are opened on them by device string.
//
// A broken plugin never breaks start-up: it is listed as failed with its
// diagnostic, and only a request for its device fails, with that diagnostic.
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
#include "core/discovery.h"
#include "core/install_layout.h"
#include "core/kernel_features.h"
#include "core/manifest.h"
#include "core/process.h"
#include "core/supervisor.h"
#include "core/video_decoder.h"
#include "base/mutex.h"

namespace codecvisor::internal {

struct HostOptions {
  // The device used when a decoder names none. Empty: CODECVISOR_DEFAULT_DEVICE,
  // else "cpu". A plugin is only ever used when its device is named.
  std::string default_device;
  // Where the runner and the built-in manifests are; discovered when empty.
  std::optional<InstallLayout> layout;
  // Third-party discovery; empty: from the environment (see discovery.h).
  std::optional<DiscoveryOptions> discovery;
  // Start every backend's child at creation rather than on first use.
  bool eager_spawn = false;
  SupervisorOptions supervision;
  // When not empty, the host adds what it saw of its backends' failures to
  // this file as it is destroyed (core/backend_history.h).
  std::string history_file;
};

// What `codecvisor backends` shows for one backend.
struct BackendStatus {
  std::string name;
  std::vector<std::string> devices;
  std::string manifest_path;
  std::string state;       // discovered, failed, spawning, ready, restarting, quarantined
  std::string diagnostic;  // why it failed or is quarantined
  pid_t pid = -1;
  double uptime_seconds = 0;
  int sessions = 0;
  uint64_t parked = 0;  // sessions closed to make room for others (Supervisor::MakeRoom)
  uint64_t restarts = 0;
  std::string last_exit;   // "killed by signal 11 (SIGSEGV)", empty if none
  // For a crash (a fault signal), how to see where it happened: "for the
  // crashing thread's backtrace, run with CODECVISOR_BACKEND_BACKTRACE=1",
  // or where that backtrace went; else empty.
  std::string last_exit_advice;
  std::string last_exit_time;  // ISO 8601, UTC
  bool warm_spare = false;
  // Why no warm spare is kept any more (one was stopped for spinning with
  // no decoder), or empty.
  std::string spare_stopped;
  std::string sandbox;     // what is engaged for the running child
  // The running child's handshake: its version and capabilities.
  std::optional<ipc::HelloReply> hello;
  // A call on the control channel (create(), an open, a closed decoder's
  // session's close) is inside the plugin's code now (what the child's
  // control region says: a hint).
  bool control_call_in_vendor_code = false;
};

class Host {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Host>> Create(HostOptions options = {});
  ~Host();

  // Opens the video at `path` on the device in `options` (the default device
  // if empty). The host opens the file and hands the backend the descriptor.
  [[nodiscard]] absl::StatusOr<std::unique_ptr<VideoDecoder>> OpenDecoder(absl::string_view path,
                                                                          DecoderOptions options = {});

  // Opens an encoded video held in memory (`label` names it in errors). The
  // bytes are copied into a sealed memfd that the backend reads like a file:
  // nothing touches the disk, and the backend cannot change what it reads.
  [[nodiscard]] absl::StatusOr<std::unique_ptr<VideoDecoder>> OpenDecoderFromBytes(absl::string_view bytes,
                                                                                   std::string label,
                                                                                   DecoderOptions options = {});

  // Registers the backend described by the manifest at `manifest_path`, as
  // discovery would: only reads the manifest. kInvalidArgument for a
  // malformed manifest, kAlreadyExists for a name that a sound manifest
  // (or the built-in) has taken; a broken manifest of that name yields it
  // and is listed as "NAME (its path)".
  [[nodiscard]] absl::Status LoadBackend(absl::string_view manifest_path);
  // Lifts a quarantine or load failure of backend `name`.
  [[nodiscard]] absl::Status ResetBackend(absl::string_view name);
  // Starts backend `name`'s child now, as its first decoder would, and waits
  // up to `timeout` until it is ready (through its handshake, its sandbox
  // engaged; Backends() then shows its pid and sandbox). OK at once if it is
  // already running. kNotFound for an unknown name; kFailedPrecondition for
  // a broken manifest or a quarantined backend; the start's own error, with
  // the runner's diagnostic, when the child cannot start or load (or could
  // not before: a failed backend stays failed until ResetBackend);
  // kDeadlineExceeded if it was not ready in time.
  [[nodiscard]] absl::Status StartBackend(absl::string_view name, std::chrono::milliseconds timeout);

  std::vector<BackendStatus> Backends() const;
  // Discovery's warnings: a device claimed by two manifests, a manifest key
  // this version does not know (ignored).
  std::vector<std::string> warnings() const;
  const std::string& default_device() const { return default_device_.name; }

 private:
  Host(HostOptions options, InstallLayout layout);
  // Adds a discovered backend: a supervisor if its manifest is sound, else
  // a failed entry.
  void Add(DiscoveredBackend backend) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // kNotFound for a backend name or device (`what`: "backend named",
  // "backend serves device") that no manifest gave: lists what there is and
  // where else plugins are found.
  absl::Status NotInstalled(absl::string_view what, absl::string_view name) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The supervisor of the backend serving `device`; kNotFound when none
  // does, or when the one that would failed to load (the message says why).
  absl::StatusOr<std::shared_ptr<Supervisor>> SupervisorFor(absl::string_view device);
  // Opens the video behind `fd` (a regular file or a sealed memfd).
  absl::StatusOr<std::unique_ptr<VideoDecoder>> OpenDescriptor(ipc::UniqueFd fd, std::string label,
                                                               DecoderOptions options);

  struct Entry {
    std::string manifest_path;
    std::vector<std::string> devices;
    std::shared_ptr<Supervisor> supervisor;  // null when the manifest failed
    absl::Status failure;                    // why, then
    std::string note;                        // its devices another backend took first, if any
  };

  const HostOptions options_;
  const InstallLayout layout_;
  struct DefaultDevice {
    std::string name;
    // Where it came from, for errors about it: "" (the options or the
    // built-in default) or the variable's name.
    std::string source;
  };
  static DefaultDevice ChooseDefaultDevice(const HostOptions& options);
  const DefaultDevice default_device_;
  // One per host: every backend's exit is seen on its one watcher thread.
  std::shared_ptr<SupervisorEnv> env_;
  mutable Mutex mu_;
  std::map<std::string, Entry> backends_ ABSL_GUARDED_BY(mu_);       // by name
  std::map<std::string, std::string> devices_ ABSL_GUARDED_BY(mu_);  // device -> name
  std::vector<std::string> warnings_ ABSL_GUARDED_BY(mu_);
  // Why plugins are not autoloaded (the environment's value, or the
  // host's options), empty when they are; set once in Create.
  std::string autoload_off_;
};

// Splits "acme:1" into ("acme", 1) and "cpu" into ("cpu", -1).
[[nodiscard]] absl::StatusOr<std::pair<std::string, int>> ParseDevice(absl::string_view device);

}  // namespace codecvisor::internal

#endif  // CODECVISOR_CORE_HOST_H_
