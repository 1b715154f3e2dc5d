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

}  // namespace
}  // namespace codecvisor
