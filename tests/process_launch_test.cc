// SystemProcessLauncher against real children: what a failed start reports
// when the host's descriptor numbers are low (a host started with its
// stdio closed).

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/process.h"
#include "gtest/gtest.h"
#include "ipc/unique_fd.h"

namespace codecvisor {
namespace {

// The lowest descriptor number not in use (the next open gets it).
int LowestFree() {
  const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  close(fd);
  return fd;
}

// The number the launch's error pipe will get: its first pipe takes the two
// lowest free numbers, and the write end (the child's) gets the second.
int ErrorPipeNumber() {
  const int first = LowestFree();
  ipc::UniqueFd hold(open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int second = LowestFree();
  hold.reset();
  EXPECT_EQ(first + 1, second) << "the two lowest free numbers are not adjacent";
  return second;
}

class ProcessLaunchTest : public ::testing::Test {
 protected:
  SystemProcessLauncher launcher;
  ipc::UniqueFd devnull{open("/dev/null", O_RDONLY | O_CLOEXEC)};
};

TEST_F(ProcessLaunchTest, AFailedExecIsReportedWhenTheErrorPipeHasAMappedNumber) {
  ASSERT_TRUE(devnull.valid());
  const int second = ErrorPipeNumber();
  LaunchSpec spec;
  spec.path = "/nonexistent/codecvisor-process-launch-test";
  spec.argv = {spec.path};
  spec.fds = {{devnull.get(), second}};
  absl::StatusOr<ChildProcess> child = launcher.Launch(spec);
  ASSERT_FALSE(child.ok()) << "a child that could not exec was taken for started";
  EXPECT_EQ(child.status().code(), absl::StatusCode::kNotFound) << child.status();
  EXPECT_NE(child.status().message().find("starting /nonexistent/codecvisor-process-launch-test"), std::string::npos)
      << child.status();
}

TEST_F(ProcessLaunchTest, AChildStartsWithItsDescriptorsWhateverNumbersTheHostHas) {
  ASSERT_TRUE(devnull.valid());
  const int second = ErrorPipeNumber();
  LaunchSpec spec;
  spec.path = "/bin/sh";
  // Exits 0 only if the mapped number is open in the child.
  spec.argv = {"/bin/sh", "-c", "exec 9<&" + std::to_string(second)};
  spec.fds = {{devnull.get(), second}};
  absl::StatusOr<ChildProcess> child = launcher.Launch(spec);
  ASSERT_TRUE(child.ok()) << child.status();
  absl::StatusOr<ExitStatus> exit = launcher.Wait(*child, ipc::Clock::now() + std::chrono::seconds(30));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_FALSE(exit->signaled);
  EXPECT_EQ(exit->code, 0) << exit->ToString();
}

}  // namespace
}  // namespace codecvisor
