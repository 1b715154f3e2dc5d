#include "backends/sdk/runner/runner_args.h"

#include <fcntl.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ipc/unique_fd.h"

namespace codecvisor::runner {
namespace {

RunnerArgs Full() {
  RunnerArgs a;
  a.name = "acme";
  a.library = "/opt/acme/libacme.so";
  a.entry = "acme_entry";
  a.config = "threads=4\nmode=fast";
  a.library_fd = kLibraryFd;
  a.read_paths = {"/opt/acme/models", "/usr/share/acme"};
  a.devices = {"/dev/acme0"};
  a.landlock = RunnerArgs::Landlock::kTry;
  a.seccomp = RunnerArgs::Seccomp::kLog;
  a.backtrace = true;
  a.memfd = false;
  a.close_timeout_ms = 1500;
  return a;
}

TEST(RunnerArgsTest, RoundTrips) {
  RunnerArgs minimal;
  minimal.name = "cpu";
  minimal.library = "/lib/libcpu.so";
  RunnerArgs off = Full();
  off.landlock = RunnerArgs::Landlock::kOff;
  off.seccomp = RunnerArgs::Seccomp::kOff;
  off.backtrace = false;
  off.memfd = true;
  off.read_paths.clear();
  RunnerArgs require = Full();
  require.landlock = RunnerArgs::Landlock::kRequire;
  require.seccomp = RunnerArgs::Seccomp::kRequire;
  // Values that look like flags are values.
  RunnerArgs odd = Full();
  odd.config = "--name";
  odd.read_paths = {"--device", ""};
  for (const RunnerArgs& args : {minimal, Full(), off, require, odd}) {
    const std::vector<std::string> argv = args.ToArgv();
    EXPECT_EQ(argv[0], "codecvisor-backend");
    absl::StatusOr<RunnerArgs> parsed = RunnerArgs::Parse(argv);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_TRUE(*parsed == args) << args.name << " " << args.config;
  }
}

// [config] passed in a descriptor (as the host passes it, off the command
// line): read whole, the descriptor closed; too much, or both ways at
// once, is refused.
TEST(RunnerArgsTest, ReadsTheConfigFromItsDescriptor) {
  auto memfd_with = [](const std::string& text) {
    absl::StatusOr<ipc::UniqueFd> fd = ipc::SealedMemfd("config", text, "config");
    EXPECT_TRUE(fd.ok()) << fd.status();
    return fd->release();
  };
  RunnerArgs by_fd;
  by_fd.name = "acme";
  by_fd.library = "/l.so";
  by_fd.config_fd = 6;
  absl::StatusOr<RunnerArgs> parsed = RunnerArgs::Parse(by_fd.ToArgv());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->config_fd, 6);
  parsed->config_fd = memfd_with("licence=x\nthreads=4\n");
  const int fd = parsed->config_fd;
  ASSERT_TRUE(parsed->ReadConfig().ok());
  EXPECT_EQ(parsed->config, "licence=x\nthreads=4\n");
  EXPECT_EQ(parsed->config_fd, -1);
  EXPECT_EQ(fcntl(fd, F_GETFD), -1) << "the descriptor is closed";

  RunnerArgs big = by_fd;
  big.config_fd = memfd_with(std::string(kMaxConfigBytes + 1, 'x'));
  EXPECT_EQ(big.ReadConfig().code(), absl::StatusCode::kInvalidArgument);
  RunnerArgs exact = by_fd;
  exact.config_fd = memfd_with(std::string(kMaxConfigBytes, 'x'));
  ASSERT_TRUE(exact.ReadConfig().ok());
  EXPECT_EQ(exact.config.size(), kMaxConfigBytes);

  const absl::StatusOr<RunnerArgs> both =
      RunnerArgs::Parse({"r", "--name", "acme", "--library", "/l.so", "--config", "a=1", "--config-fd", "6"});
  EXPECT_EQ(both.status().message(), "--config and --config-fd exclude each other");
}

TEST(RunnerArgsTest, WritesTheFlagsTheRunnerHasAlwaysRead) {
  const std::vector<std::string> want = {"codecvisor-backend",
                                         "--name",
                                         "acme",
                                         "--library",
                                         "/opt/acme/libacme.so",
                                         "--entry",
                                         "acme_entry",
                                         "--library-fd",
                                         "5",
                                         "--config",
                                         "threads=4\nmode=fast",
                                         "--read-path",
                                         "/opt/acme/models",
                                         "--read-path",
                                         "/usr/share/acme",
                                         "--device",
                                         "/dev/acme0",
                                         "--landlock",
                                         "try",
                                         "--seccomp",
                                         "log",
                                         "--backtrace",
                                         "1",
                                         "--memfd",
                                         "0",
                                         "--close-timeout-ms",
                                         "1500"};
  EXPECT_EQ(Full().ToArgv(), want);
}

TEST(RunnerArgsTest, RejectsMalformedCommandLines) {
  struct Case {
    std::vector<std::string> argv;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"r"}, "--name is required"},
      {{"r", "--name", "acme"}, "--library is required"},
      {{"r", "--library", "/l.so"}, "--name is required"},
      {{"r", "--name", "", "--library", "/l.so"}, "--name is required"},
      {{"r", "--name", "acme", "--library"}, "--library: no value"},
      {{"r", "--name", "acme", "--library", "/l.so", "--verbose", "1"}, "unknown flag --verbose"},
      {{"r", "--name", "acme", "--name", "other", "--library", "/l.so"}, "--name given twice"},
      {{"r", "--name", "acme", "--library", "/l.so", "--landlock", "maybe"}, "--landlock maybe: expected"},
      {{"r", "--name", "acme", "--library", "/l.so", "--seccomp", "try"}, "--seccomp try: expected"},
      {{"r", "--name", "acme", "--library", "/l.so", "--library-fd", "five"}, "--library-fd five: expected"},
      {{"r", "--name", "acme", "--library", "/l.so", "--library-fd", "-1"}, "--library-fd -1: expected"},
      {{"r", "--name", "acme", "--library", "/l.so", "--backtrace", "yes"}, "--backtrace yes: expected"},
      {{"r", "--name", "acme", "--library", "/l.so", "--close-timeout-ms", "0"}, "--close-timeout-ms 0: expected"},
      {{"r", "--name", "acme", "--library", "/l.so", "--close-timeout-ms", "1e3"}, "--close-timeout-ms 1e3: expected"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<RunnerArgs> parsed = RunnerArgs::Parse(c.argv);
    ASSERT_FALSE(parsed.ok()) << c.error;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().message().substr(0, c.error.size()), c.error) << parsed.status();
  }
}

TEST(RunnerArgsTest, DefaultsAreTheStrictSandbox) {
  absl::StatusOr<RunnerArgs> parsed = RunnerArgs::Parse({"r", "--name", "acme", "--library", "/l.so"});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->landlock, RunnerArgs::Landlock::kRequire);
  EXPECT_EQ(parsed->seccomp, RunnerArgs::Seccomp::kRequire);
  EXPECT_EQ(parsed->library_fd, -1);
  EXPECT_TRUE(parsed->entry.empty());
  EXPECT_FALSE(parsed->backtrace);
  EXPECT_EQ(parsed->close_timeout_ms, kDefaultCloseTimeoutMs);
}

TEST(RunnerExitTest, CodesAreTheOnesTheHostReads) {
  EXPECT_EQ(ExitCode(RunnerExit::kHostHungUp), 0);
  EXPECT_EQ(ExitCode(RunnerExit::kBadInvocation), 2);
  EXPECT_EQ(ExitCode(RunnerExit::kLoadFailed), 3);
  EXPECT_EQ(ExitCode(RunnerExit::kChannelBroken), 4);
  EXPECT_EQ(ExitCode(RunnerExit::kPluginClosedChannel), 5);
  EXPECT_EQ(ExitCode(RunnerExit::kCloseHung), 6);
  EXPECT_EQ(ExitCode(RunnerExit::kSandboxViolation), 128 + SIGSYS);
}

}  // namespace
}  // namespace codecvisor::runner
