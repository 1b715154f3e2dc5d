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
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "core/backend_output.h"
#include "core/backend_sandbox.h"
#include "core/cgroup.h"
#include "core/death_record.h"
#include "core/install_layout.h"
#include "core/manifest.h"
#include "core/process.h"
#include "core/process_cpu.h"
#include "core/supervisor_env.h"
#include "ipc/channel.h"
#include "ipc/messages.h"
#include "ipc/region_cache.h"

namespace codecvisor {

class BackendProcess final : public RunningBackend {
 public:
  // Spawns the runner for `manifest`, waits for the handshake until
  // `deadline`. If the backend cannot load, the error carries the runner's
  // own diagnostic (library, symbol, ABI, init), prefixed by the manifest.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BackendProcess>> Start(
      const BackendManifest& manifest, const InstallLayout& layout,
      std::shared_ptr<ProcessLauncher> launcher, const SpawnOptions& spawn, ipc::Deadline deadline);

  // Stops the child: closes the control channel (the runner exits when it
  // sees the hang-up), then SIGKILLs it if it is still there after a grace
  // period, reaps it and removes its cgroup. Never blocks for more than
  // about a second or two.
  // Idempotent; sessions still open see their backend gone (kUnavailable).
  void Shutdown() override;
  ~BackendProcess() override { Shutdown(); }

  // Opens `video_fd` with `options` and attaches a session channel with
  // `slots` arena slots sized for the session's frames. Errors from the
  // backend (a corrupt file, no video stream) keep their codes and messages;
  // `*channel_failure` tells them apart from the backend dying or breaking
  // the protocol mid-way (then the process must be replaced). The host's own
  // shortage (no descriptor free for the channel) is a HostShortage, the
  // backend's session closed and the backend kept. `*file_token`
  // is set to the token this open sent with its file (0 if it sent none),
  // which the crash hints name if the backend died inside this open.
  absl::StatusOr<OpenedSession> OpenSession(int video_fd, ipc::OpenSession options, uint32_t slots,
                                            ipc::Deadline deadline, bool* channel_failure,
                                            uint64_t* file_token) override;
  // The control channel's crash hints (see HostChannel::ReadCrashHints):
  // whether an open was inside vendor code when the backend died.
  ipc::CrashHints ControlCrashHints() const override { return ipc::ReadCrashHints(*control_region_); }
  // Whether the kernel killed a task of its cgroup for going over its
  // memory limit (read after its death, before the cgroup is removed).
  bool OomKilled() const override { return cgroup_ != nullptr && cgroup_->OomKills() > 0; }

  // Sends SIGKILL (through the pidfd; never to a reused pid).
  void Kill() override;
  // Whether its pidfd is readable. Never blocks.
  bool Exited() const override;
  // Reaps the child if it has exited by `deadline`, once; later calls return
  // the same status.
  absl::StatusOr<ExitStatus> Reap(ipc::Deadline deadline) override;
  // A heartbeat on the control channel. OK without asking if the channel is
  // busy (an open in progress is proof of life enough).
  absl::Status Ping(ipc::Deadline deadline) override;
  // The child's pidfd, readable once it has exited. Valid for the object's
  // lifetime (the child is reaped through it, never by pid).
  int pidfd() const override { return child_.pidfd.get(); }
  pid_t pid() const override { return child_.pid; }
  std::optional<std::chrono::nanoseconds> CpuTime() const override { return ProcessCpuTime(child_.pid); }
  const ipc::HelloReply& hello() const override { return hello_; }
  std::string DescribeSandbox() const override { return sandbox_.Describe(); }
  const BackendManifest& manifest() const { return manifest_; }
  const EngagedSandbox& sandbox() const { return sandbox_; }

 private:
  BackendProcess(BackendManifest manifest, std::shared_ptr<ProcessLauncher> launcher, ChildProcess child,
                 std::unique_ptr<ipc::HostChannel> control);
  // One request and its response on the control channel. An Error reply
  // becomes its Status with *channel_failure false; anything else that goes
  // wrong sets it true.
  absl::StatusOr<ipc::Response> Call(ipc::Request request, ipc::Deadline deadline, bool* channel_failure)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Handshake(ipc::Deadline deadline) ABSL_LOCKS_EXCLUDED(mu_);

  BackendManifest manifest_;
  std::shared_ptr<ProcessLauncher> launcher_;
  const ChildProcess child_;  // immutable: Kill() and pidfd() need no lock
  ipc::HelloReply hello_;
  EngagedSandbox sandbox_;
  mutable Mutex mu_;
  std::unique_ptr<ipc::HostChannel> control_ ABSL_GUARDED_BY(mu_);
  // The control region outlives the channel (Shutdown() drops the channel
  // to hang up), so its crash hints can be read after the child died.
  const std::shared_ptr<const ipc::Region> control_region_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Closed sessions' regions, for this process's next sessions (populating
  // a new one costs about as much as decoding a few frames). Never shared
  // with another process: it dies with this object.
  const std::shared_ptr<ipc::RegionCache> session_regions_ = ipc::RegionCache::Make({});
  // Reaping is separate from control traffic: a long open on the control
  // channel must not delay seeing the child's death.
  mutable Mutex reap_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::optional<ExitStatus> exit_ ABSL_GUARDED_BY(reap_mu_);
  // The child's cgroup: removed after the child is reaped (the destructor
  // reaps first, and members go after it).
  std::unique_ptr<BackendCgroup> cgroup_;
  // Forwards the child's stdout and stderr; finished when it is reaped.
  std::unique_ptr<BackendOutput> output_;
};

// Turns a protocol Error from a backend into a Status with the matching code.
absl::Status FromWireError(const ipc::Error& error);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_BACKEND_PROCESS_H_
