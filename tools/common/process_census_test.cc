#include "tools/common/process_census.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <gtest/gtest.h>

namespace codecvisor::tools {
namespace {

TEST(ProcessCensusTest, SeesAChildUntilItIsReaped) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  // A zombie is still a child.
  std::vector<pid_t> children;
  for (int i = 0; i < 200; ++i) {
    children = ChildProcesses();
    if (std::find(children.begin(), children.end(), child) != children.end()) break;
    usleep(5000);
  }
  EXPECT_NE(std::find(children.begin(), children.end(), child), children.end());
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  children = ChildProcesses();
  EXPECT_EQ(std::find(children.begin(), children.end(), child), children.end());
}

TEST(ProcessCensusTest, NamesANewDescriptor) {
  const auto before = OpenDescriptors();
  const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const auto added = NewDescriptors(before, OpenDescriptors());
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0], std::to_string(fd) + " -> /dev/null");
  close(fd);
  EXPECT_TRUE(NewDescriptors(before, OpenDescriptors()).empty());
}

}  // namespace
}  // namespace codecvisor::tools
