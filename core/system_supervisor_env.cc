#include "core/system_supervisor_env.h"

#include <utility>

#include "core/backend_process.h"

namespace codecvisor {

SystemSupervisorEnv::SystemSupervisorEnv(InstallLayout layout, std::shared_ptr<ProcessLauncher> launcher)
    : layout_(std::move(layout)), launcher_(std::move(launcher)) {}

absl::StatusOr<std::unique_ptr<RunningBackend>> SystemSupervisorEnv::Start(const BackendManifest& manifest,
                                                                            const SpawnOptions& spawn,
                                                                            ipc::Deadline deadline) {
  absl::StatusOr<std::unique_ptr<BackendProcess>> started =
      BackendProcess::Start(manifest, layout_, launcher_, spawn, deadline);
  if (!started.ok()) return started.status();
  return std::unique_ptr<RunningBackend>(*std::move(started));
}

absl::StatusOr<uint64_t> SystemSupervisorEnv::WatchExit(const RunningBackend& backend,
                                                        std::function<void()> on_exit) {
  return watcher_.Add(backend.pidfd(), std::move(on_exit));
}

void SystemSupervisorEnv::Unwatch(uint64_t id) { watcher_.Remove(id); }

}  // namespace codecvisor
