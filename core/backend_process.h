// File: core/backend_process.h
//
// One running backend: the runner child, its control channel, and the
// handshake. Opens decoder sessions on it (each on a channel of its own).
// Thread-safe: sessions may be opened from many threads; control-channel
// traffic is serialised by a mutex, session traffic never touches it.

#ifndef CODECVISOR_CORE_BACKEND_PROCESS_H_
#define CODECVISOR_CORE_BACKEND_PROCESS_H_

#include <chrono>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "ipc/mutex.h"
#include "core/install_layout.h"
#include "core/manifest.h"
#include "core/process.h"
#include "ipc/channel.h"
#include "ipc/messages.h"

namespace codecvisor {

// A session opened on a backend and attached to its own channel.
struct OpenedSession {
  std::unique_ptr<ipc::HostChannel> channel;
  ipc::SessionOpened info;
};

class BackendProcess {
 public:
  // Spawns the runner for `manifest`, waits for the handshake until
  // `deadline`. If the backend cannot load, the error carries the runner's
  // own diagnostic (library, symbol, ABI, init), prefixed by the manifest.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BackendProcess>> Start(
      const BackendManifest& manifest, const InstallLayout& layout,
      std::shared_ptr<ProcessLauncher> launcher, ipc::Deadline deadline);

  // Stops the child: closes the control channel (the runner exits when it
  // sees the hang-up), then SIGKILLs it if it is still there after a grace
  // period, and reaps it. Never blocks for more than about a second.
  // Idempotent; sessions still open see their backend gone (kUnavailable).
  void Shutdown();
  ~BackendProcess() { Shutdown(); }

  // Opens `video_fd` with `options` and attaches a session channel with
  // `slots` arena slots sized for the session's frames. Errors from the
  // backend (a corrupt file, no video stream) keep their codes and messages.
  [[nodiscard]] absl::StatusOr<OpenedSession> OpenSession(int video_fd, ipc::OpenSession options,
                                                          uint32_t slots, ipc::Deadline deadline);

  pid_t pid() const {
    MutexLock lock(&mu_);
    return child_.pid;
  }
  const ipc::HelloReply& hello() const { return hello_; }
  const BackendManifest& manifest() const { return manifest_; }

 private:
  BackendProcess(BackendManifest manifest, std::shared_ptr<ProcessLauncher> launcher, ChildProcess child,
                 std::unique_ptr<ipc::HostChannel> control);
  // One request and its response on the control channel.
  absl::StatusOr<ipc::Response> Call(ipc::Request request, ipc::Deadline deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Handshake(ipc::Deadline deadline) ABSL_LOCKS_EXCLUDED(mu_);

  BackendManifest manifest_;
  std::shared_ptr<ProcessLauncher> launcher_;
  ChildProcess child_ ABSL_GUARDED_BY(mu_);
  ipc::HelloReply hello_;
  mutable Mutex mu_;
  std::unique_ptr<ipc::HostChannel> control_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

// Turns a protocol Error from a backend into a Status with the matching code.
absl::Status FromWireError(const ipc::Error& error);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_BACKEND_PROCESS_H_
