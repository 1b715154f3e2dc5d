// File: core/file_trust_namespace_test.cc
//
// CheckOnlyOwnerCanChange in a user namespace of the test's own. Runs
// outside Bazel's sandbox (tag no-sandbox), whose own user namespace maps
// only root and so leaves no other uid to map a namespace's root to.

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>

#include "core/file_trust.h"
#include "gtest/gtest.h"

namespace codecvisor {
namespace {

// In a user namespace that maps this process's user to another uid and
// leaves root unmapped, / belongs to the unmapped uid: the refusal says
// so, and is marked as the namespace's doing (no reinstall helps).
TEST(FileTrustTest, AFileUnderAnUnmappedOwnerIsTheNamespacesRefusal) {
  if (geteuid() != 0) GTEST_SKIP() << "writing another process's uid_map to an arbitrary uid needs root";
  int ready[2], mapped[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(mapped), 0);
  const std::string file = std::string(std::getenv("TEST_TMPDIR")) + "/unmapped.toml";
  std::ofstream(file) << "";
  ASSERT_TRUE(std::ifstream(file).good());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char byte = 0;
    const char made = unshare(CLONE_NEWUSER) == 0 ? 1 : 0;
    if (write(ready[1], &made, 1) != 1 || made == 0) _exit(3);
    if (read(mapped[0], &byte, 1) != 1 || byte == 0) _exit(4);
    // Become the namespace's root (uid 54321 outside): until then this
    // process is root outside, unmapped, and so the overflow uid too.
    if (setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0) _exit(7);
    const absl::Status s = CheckOnlyOwnerCanChange(file, "manifest");
    if (s.ok()) _exit(5);
    _exit(IsUnmappedOwnerRefusal(s) && s.message().find("stands for every user outside it") != absl::string_view::npos
              ? 0
              : 6);
  }
  char made = 0;
  ASSERT_EQ(read(ready[0], &made, 1), 1);
  bool ok = made == 1;
  if (ok) {
    const std::string proc = "/proc/" + std::to_string(child) + "/";
    for (const auto& [name, line] : {std::pair<const char*, const char*>{"setgroups", "deny"},
                                     {"uid_map", "0 54321 1"},
                                     {"gid_map", "0 54321 1"}}) {
      std::ofstream(proc + name) << line;
    }
  }
  const char byte = ok ? 1 : 0;
  ASSERT_EQ(write(mapped[1], &byte, 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  for (int fd : {ready[0], ready[1], mapped[0], mapped[1]}) close(fd);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "3: no user namespace, 5: trusted, 6: not marked as the namespace's, 7: not mapped";
}

}  // namespace
}  // namespace codecvisor
