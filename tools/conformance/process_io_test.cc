#include "tools/conformance/process_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace codecvisor::conformance {
namespace {

TEST(ParseReadCharsTest, TheRcharLine) {
  EXPECT_EQ(*ParseReadChars("rchar: 323934931\nwchar: 5\nsyscr: 6\n"), 323934931);
  EXPECT_EQ(*ParseReadChars("wchar: 5\nrchar: 7"), 7);
  EXPECT_FALSE(ParseReadChars("wchar: 5\n").ok());
  EXPECT_FALSE(ParseReadChars("rchar: lots\n").ok());
}

// Reading a file of 1 MiB moves this process's count by at least that
// much; not reading moves it by no more than reading /proc/self/io does.
TEST(BytesReadTest, CountsWhatThisProcessReads) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/mebibyte";
  std::ofstream(path, std::ios::binary) << std::string(1 << 20, 'x');
  absl::StatusOr<int64_t> before = BytesRead(getpid());
  ASSERT_TRUE(before.ok()) << before.status();
  absl::StatusOr<int64_t> idle = BytesRead(getpid());
  ASSERT_TRUE(idle.ok()) << idle.status();
  EXPECT_LT(*idle - *before, 4096);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::vector<char> buffer(1 << 16);
  while (read(fd, buffer.data(), buffer.size()) > 0) {
  }
  close(fd);
  absl::StatusOr<int64_t> after = BytesRead(getpid());
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_GE(*after - *idle, 1 << 20);
  EXPECT_LT(*after - *idle, (1 << 20) + 8192);
}

TEST(BytesReadTest, NoSuchProcessNamesTheFile) {
  absl::StatusOr<int64_t> none = BytesRead(0x7ffffff0);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("/proc/2147483632/io"), std::string::npos) << none.status();
}

}  // namespace
}  // namespace codecvisor::conformance
