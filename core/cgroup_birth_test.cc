#include "core/cgroup_birth.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/cgroup_paths.h"
#include "core/cgroup.h"
#include "gtest/gtest.h"

namespace codecvisor {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// On a machine that lets this process make cgroups (root here; tools/test.sh
// makes the cgroup hierarchies writable in Bazel's sandbox): the child is
// in every cgroup of the backend (v1: memory and pids) before it runs
// anything of its own, and the cloning thread never left its own.
TEST(CgroupBirthTest, TheChildIsInItsCgroupsAndTheThreadStaysInItsOwn) {
  const CgroupLayout layout = ProbeCgroupLayout();
  ASSERT_NE(layout.version, 0) << layout.missing
                               << " (in Bazel's sandbox, tools/test.sh makes the cgroup hierarchies writable)";
  auto cg = BackendCgroup::Create(layout, "birth", 256 << 20, 64);
  ASSERT_TRUE(cg.ok()) << cg.status();
  const std::string dir = (*cg)->memory_dir();
  const std::string name = dir.substr(dir.rfind('/') + 1);
  const std::string before = ReadFileText("/proc/thread-self/cgroup");
  ASSERT_EQ(before.find(name), std::string::npos);
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  CgroupBirth birth((*cg)->procs_files(), (*cg)->version());
  ASSERT_TRUE(birth.in_use());
  clone_args args{};
  args.exit_signal = SIGCHLD;
  if (layout.version == 2) {
    ASSERT_GE(birth.clone_into(), 0);
    args.flags = CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(birth.clone_into());
  } else {
    ASSERT_EQ(birth.clone_into(), -1);
    ASSERT_TRUE(birth.child_moves_itself());
  }
  const long child = syscall(SYS_clone3, &args, sizeof(args));
  if (child == 0) {
    // Reports EnterInChild's result, and whether the v2 descriptor is
    // still open; then waits to be killed.
    const int out[2] = {birth.EnterInChild(), birth.clone_into() >= 0 && fcntl(birth.clone_into(), F_GETFD) >= 0};
    (void)!write(report[1], out, sizeof(out));
    for (;;) pause();  // not a read of the report pipe: it would take the parent's bytes
  }
  const int clone_errno = errno;
  ASSERT_GT(child, 0) << std::strerror(clone_errno);
  close(report[1]);
  int got[2] = {-1, -1};
  ASSERT_EQ(read(report[0], got, sizeof(got)), static_cast<ssize_t>(sizeof(got)));
  EXPECT_EQ(got[0], 0) << std::strerror(got[0]);
  EXPECT_EQ(got[1], 0) << "the v2 descriptor is still open in the child";
  const std::string childs = ReadFileText(absl::StrCat("/proc/", child, "/cgroup"));
  EXPECT_EQ(Count(childs, name), (*cg)->procs_files().size()) << childs;
  EXPECT_EQ(ReadFileText("/proc/thread-self/cgroup"), before) << "the cloning thread moved";
  kill(static_cast<pid_t>(child), SIGKILL);
  ASSERT_EQ(waitpid(static_cast<pid_t>(child), nullptr, 0), child);
  close(report[0]);
}

// Without cgroups it does nothing: the caller's path is unchanged.
TEST(CgroupBirthTest, NoCgroupsNoMove) {
  CgroupBirth birth({}, 1);
  EXPECT_EQ(birth.clone_into(), -1);
  EXPECT_FALSE(birth.child_moves_itself());
  EXPECT_FALSE(birth.in_use());
  EXPECT_EQ(birth.EnterInChild(), 0);
}

}  // namespace
}  // namespace codecvisor
