#include "tools/common/subprocess.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace codecvisor::tools {
namespace {

TEST(RunForOutputTest, ReturnsStdoutAndNamesFailures) {
  absl::StatusOr<std::string> out = RunForOutput({"sh", "-c", "printf 'a\\0b'; echo oops >&2"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, std::string("a\0b", 3));

  absl::StatusOr<std::string> failed = RunForOutput({"sh", "-c", "echo broken pipe dream >&2; exit 3"});
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("exited with status 3"), std::string::npos) << failed.status();
  EXPECT_NE(failed.status().message().find("broken pipe dream"), std::string::npos) << failed.status();

  EXPECT_FALSE(RunForOutput({"/nonexistent/tool"}).ok());
}

TEST(RunForOutputTest, KillsAProgramPastItsLimits) {
  OutputLimits slow;
  slow.timeout = std::chrono::milliseconds(200);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> hung = RunForOutput({"sleep", "30"}, slow);
  EXPECT_EQ(hung.status().code(), absl::StatusCode::kDeadlineExceeded) << hung.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));

  OutputLimits small;
  small.max_stdout_bytes = 1 << 16;
  absl::StatusOr<std::string> flood = RunForOutput({"cat", "/dev/zero"}, small);
  EXPECT_EQ(flood.status().code(), absl::StatusCode::kResourceExhausted) << flood.status();
}

}  // namespace
}  // namespace codecvisor::tools
