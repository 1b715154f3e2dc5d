#include "base/kernel_file_system.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace codecvisor {
namespace {

bool On(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  EXPECT_GE(fd, 0) << path;
  const bool kernel = OnAKernelFileSystem(fd);
  if (fd >= 0) close(fd);
  return kernel;
}

TEST(KernelFileSystemTest, ProcAndSysAreTheKernelsAndATestsFileIsNot) {
  EXPECT_TRUE(On("/proc/self/mem"));
  EXPECT_TRUE(On("/proc/self/environ"));
  EXPECT_TRUE(On("/sys/kernel/mm/transparent_hugepage/enabled"));
  const std::string file = std::string(std::getenv("TEST_TMPDIR")) + "/clip.mp4";
  const int fd = open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  EXPECT_FALSE(On(file));
  EXPECT_FALSE(OnAKernelFileSystem(-1)) << "a bad descriptor is the open's to report";
}

}  // namespace
}  // namespace codecvisor
