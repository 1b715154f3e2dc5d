#include "core/backend_sandbox.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>

namespace codecvisor {
namespace {

bool HasLimit(const SandboxSpec& spec, int resource) {
  return std::any_of(spec.rlimits.begin(), spec.rlimits.end(), [&](const auto& r) { return r.first == resource; });
}

TEST(BackendSandboxTest, TheFullSandboxBoundsTheBackendsTasks) {
  const SandboxSpec spec = HostSandbox(SandboxPolicy{});
  EXPECT_TRUE(spec.namespaces);
  EXPECT_TRUE(HasLimit(spec, RLIMIT_NPROC));
  EXPECT_TRUE(HasLimit(spec, RLIMIT_NOFILE));
}

// A user allowed real-time priorities (ulimit -r) does not pass that on:
// a plugin's SCHED_FIFO spinner would starve its host.
TEST(BackendSandboxTest, TheBackendGetsNoRealTimeOrRaisedPriority) {
  for (const bool namespaces : {true, false}) {
    SandboxSpec spec = HostSandbox(SandboxPolicy{});
    if (!namespaces) DropNamespaces(&spec, false);
    for (const int resource : {RLIMIT_RTPRIO, RLIMIT_NICE}) {
      auto it =
          std::find_if(spec.rlimits.begin(), spec.rlimits.end(), [&](const auto& r) { return r.first == resource; });
      ASSERT_NE(it, spec.rlimits.end()) << "resource " << resource << ", namespaces " << namespaces;
      EXPECT_EQ(it->second, 0u);
    }
  }
}

// Without a user namespace RLIMIT_NPROC counts every task of the user: a
// QA helper's root host failed a good file as poison ("could not start a
// thread ... below its own limit of 4096") while another nobody process
// held 4200 threads.
TEST(BackendSandboxTest, WithoutNamespacesTheUsersTaskCountIsNotTheBackends) {
  for (const bool cgroup : {false, true}) {
    SandboxSpec spec = HostSandbox(SandboxPolicy{});
    DropNamespaces(&spec, cgroup);
    EXPECT_FALSE(spec.namespaces);
    EXPECT_EQ(HasLimit(spec, RLIMIT_NPROC), !cgroup) << "cgroup " << cgroup << ": kept only where nothing else bounds";
    EXPECT_TRUE(HasLimit(spec, RLIMIT_NOFILE)) << "the other limits stay";
    EXPECT_TRUE(HasLimit(spec, RLIMIT_CPU));
  }
}

// The red team's manifest asked for 6000 tasks on a machine whose pid_max
// is 32768: granted, and 40000 would have taken every task id there.
TEST(BackendSandboxTest, OneBackendHoldsAtMostAQuarterOfTheMachinesTasks) {
  EXPECT_EQ(BackendTaskLimit(4096, 32768, 190000), 4096u);
  EXPECT_EQ(BackendTaskLimit(40000, 32768, 190000), 8192u);
  EXPECT_EQ(BackendTaskLimit(40000, 4194304, 20000), 5000u) << "threads-max is the lower";
  EXPECT_EQ(BackendTaskLimit(40000, 0, 0), 40000u) << "unknown limits leave the manifest's";
  EXPECT_EQ(BackendTaskLimit(100, 2, 0), 1u);
  // A container's pids limit (docker --pids-limit 512), or systemd's
  // TasksMax for the user's session: half of it.
  EXPECT_EQ(BackendTaskLimit(4096, 32768, 190000, 512), 256u);
  EXPECT_EQ(BackendTaskLimit(4096, 0, 0, 20000), 4096u);
  EXPECT_LE(BackendTaskLimit(uint64_t{1} << 30), BackendTaskLimit(uint64_t{1} << 30, 4194304, 0));
  EXPECT_GT(BackendTaskLimit(4096), 0u);
}

}  // namespace
}  // namespace codecvisor
