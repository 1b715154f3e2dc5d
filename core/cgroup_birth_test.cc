#include "core/cgroup_birth.h"

#include <linux/sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/cgroup.h"
#include "gtest/gtest.h"

namespace codecvisor {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// On a machine that lets this process make cgroups (root here; tools/test.sh
// makes the cgroup hierarchies writable in Bazel's sandbox): the child is
// born in every cgroup of the backend (v1: memory and pids), and the
// cloning thread is back in its own afterwards.
TEST(CgroupBirthTest, TheChildIsBornInItsCgroupsAndTheThreadReturns) {
  const CgroupLayout layout = ProbeCgroupLayout();
  ASSERT_NE(layout.version, 0) << layout.missing
                               << " (in Bazel's sandbox, tools/test.sh makes the cgroup hierarchies writable)";
  auto cg = BackendCgroup::Create(layout, "birth", 256 << 20, 64);
  ASSERT_TRUE(cg.ok()) << cg.status();
  const std::string dir = (*cg)->memory_dir();
  const std::string name = dir.substr(dir.rfind('/') + 1);
  const std::string before = Read("/proc/thread-self/cgroup");
  ASSERT_EQ(before.find(name), std::string::npos);
  {
    // Given up on (the clone refused), it leaves and closes everything.
    CgroupBirth abandoned((*cg)->procs_files(), (*cg)->version());
    if (layout.version == 1) ASSERT_TRUE(abandoned.Enter());
    EXPECT_TRUE(abandoned.in_use());
    abandoned.Abandon();
    EXPECT_FALSE(abandoned.in_use());
    EXPECT_EQ(abandoned.clone_into(), -1);
    EXPECT_EQ(Read("/proc/thread-self/cgroup"), before);
  }
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  long child = -1;
  {
    CgroupBirth birth((*cg)->procs_files(), (*cg)->version());
    clone_args args{};
    args.exit_signal = SIGCHLD;
    if (layout.version == 2) {
      ASSERT_GE(birth.clone_into(), 0);
      args.flags = CLONE_INTO_CGROUP;
      args.cgroup = static_cast<uint64_t>(birth.clone_into());
    } else {
      ASSERT_EQ(birth.clone_into(), -1);
      ASSERT_TRUE(birth.Enter());
      EXPECT_EQ(Count(Read("/proc/thread-self/cgroup"), name), 2u) << "the thread is not in both hierarchies";
    }
    child = syscall(SYS_clone3, &args, sizeof(args));
    if (child == 0) {
      char c;
      (void)!read(go[0], &c, 1);
      _exit(0);
    }
    birth.Leave();
    EXPECT_FALSE(birth.entered());
  }
  ASSERT_GT(child, 0) << std::strerror(errno);
  EXPECT_EQ(Read("/proc/thread-self/cgroup"), before) << "the thread did not return to its own cgroups";
  const std::string childs = Read(absl::StrCat("/proc/", child, "/cgroup"));
  EXPECT_EQ(Count(childs, name), (*cg)->procs_files().size()) << childs;
  close(go[0]);
  (void)!write(go[1], "x", 1);
  close(go[1]);
  ASSERT_EQ(waitpid(static_cast<pid_t>(child), nullptr, 0), child);
}

// Without cgroups it does nothing: the caller's path is unchanged.
TEST(CgroupBirthTest, NoCgroupsNoMove) {
  CgroupBirth birth({}, 1);
  EXPECT_EQ(birth.clone_into(), -1);
  EXPECT_FALSE(birth.Enter());
  EXPECT_FALSE(birth.entered());
  EXPECT_FALSE(birth.in_use());
}

}  // namespace
}  // namespace codecvisor
