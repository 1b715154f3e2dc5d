// File: core/system_supervisor_env.h
//
// The SupervisorEnv of a real host: sandboxed runner children, the steady
// clock, and one thread that watches every child's pidfd. One per Host, so
// a host with a hundred manifests has one watcher thread, started with the
// first child; a backend never started costs no thread.
//
// Thread-safe.

#ifndef CODECVISOR_CORE_SYSTEM_SUPERVISOR_ENV_H_
#define CODECVISOR_CORE_SYSTEM_SUPERVISOR_ENV_H_

#include <memory>

#include "core/exit_watcher.h"
#include "core/install_layout.h"
#include "core/process.h"
#include "core/supervisor_env.h"

namespace codecvisor {

// Children through `launcher` (BackendProcess::Start); exits seen by one
// ExitWatcher (core/exit_watcher.h) for every backend of the env.
class SystemSupervisorEnv final : public SupervisorEnv {
 public:
  SystemSupervisorEnv(InstallLayout layout, std::shared_ptr<ProcessLauncher> launcher);

  ipc::Clock::time_point Now() const override { return ipc::Clock::now(); }
  absl::StatusOr<std::unique_ptr<RunningBackend>> Start(const BackendManifest& manifest, const SpawnOptions& spawn,
                                                        ipc::Deadline deadline) override;
  absl::StatusOr<uint64_t> WatchExit(const RunningBackend& backend, std::function<void()> on_exit) override;
  void Unwatch(uint64_t id) override;
  bool RunsThreads() const override { return true; }

 private:
  const InstallLayout layout_;
  const std::shared_ptr<ProcessLauncher> launcher_;
  ExitWatcher watcher_;
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_SYSTEM_SUPERVISOR_ENV_H_
