// A host's env with many backends that never start: no thread at all.

#include "core/system_supervisor_env.h"

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "core/supervisor.h"
#include "core/thread_count_for_test.h"

namespace codecvisor {
namespace {

TEST(SystemSupervisorEnvTest, BackendsNeverStartedCostNoThread) {
  const int before = ThreadCountForTest();
  auto env = std::make_shared<SystemSupervisorEnv>(InstallLayout{}, nullptr);
  std::vector<std::unique_ptr<Supervisor>> supervisors;
  for (int i = 0; i < 100; ++i) {
    BackendManifest manifest;
    manifest.name = "never" + std::to_string(i);
    manifest.warm_spare = true;
    supervisors.push_back(std::make_unique<Supervisor>(manifest, env, SupervisorOptions{}));
  }
  EXPECT_EQ(ThreadCountForTest(), before);
  for (auto& s : supervisors) s->Shutdown();
}

}  // namespace
}  // namespace codecvisor
