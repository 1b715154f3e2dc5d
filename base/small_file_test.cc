#include "base/small_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "base/lowered_file_limit_for_test.h"
#include "gtest/gtest.h"

namespace codecvisor {
namespace {

std::string WriteTemp(const std::string& text) {
  std::string path = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/small_XXXXXX";
  const int fd = mkstemp(path.data());
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  return path;
}

TEST(ReadSmallFileTest, ReadsAFileLongerThanOneRead) {
  std::string text(10000, 'x');
  text += "end";
  const std::string path = WriteTemp(text);
  EXPECT_EQ(ReadSmallFile(path), text);
  unlink(path.c_str());
}

TEST(ReadSmallFileTest, ReadsAProcFileWhoseSizeSaysZero) {
  const std::optional<std::string> status = ReadSmallFile("/proc/self/status");
  ASSERT_TRUE(status.has_value());
  EXPECT_NE(status->find("Pid:"), std::string::npos);
}

TEST(ReadSmallFileTest, AMissingFileSaysWhy) {
  errno = 0;
  EXPECT_EQ(ReadSmallFile("/nonexistent/codecvisor"), std::nullopt);
  EXPECT_EQ(errno, ENOENT);
  EXPECT_FALSE(OutOfDescriptors(ENOENT));
}

TEST(ReadSmallFileTest, ADirectorySaysWhy) {
  errno = 0;
  EXPECT_EQ(ReadSmallFile("/proc/self"), std::nullopt);
  EXPECT_EQ(errno, EISDIR);
}

TEST(ReadSmallFileTest, NoDescriptorToSpareIsTheShortageNotAnEmptyFile) {
  errno = 0;
  {
    testing::LoweredFileLimit limit(0);
    ASSERT_TRUE(limit.ok());
    EXPECT_EQ(ReadSmallFile("/proc/self/status"), std::nullopt);
    EXPECT_TRUE(OutOfDescriptors(errno)) << errno;
  }
  EXPECT_TRUE(OutOfDescriptors(ENFILE));
  EXPECT_TRUE(ReadSmallFile("/proc/self/status").has_value());
}

}  // namespace
}  // namespace codecvisor
