// File: examples/vendor_backend/dav1d_backend_log_test.cc
//
// The dav1d plugin writes nothing to stderr unless the host asks for it
// (log_level.h): decoding a damaged AV1 file leaves stderr empty by
// default, and shows libdav1d's and libavformat's complaints with
// CODECVISOR_BACKEND_LOG_LEVEL=error. The plugin reads the variable once
// per process, so each decode runs in a child forked before the plugin is
// loaded, with its stderr in a file.

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test_support.h"

namespace dav1d_plugin::testing {
namespace {

// What a child's decode of the damaged file came to (its exit code).
enum ChildExit { kSomeFramesFailed = 0, kEveryFrameDecoded = 1, kOpenFailed = 2, kNoStderrFile = 3 };

// An AV1 file with 4 KB of text written over its middle: the container
// still opens, and libdav1d rejects the frames the text landed in.
std::string DamagedAv1() {
  const std::string clean = MakeVideo("log_clean.ivf",
                                      "-f lavfi -i testsrc2=size=160x120:rate=25 -frames:v 30 -c:v libaom-av1 "
                                      "-cpu-used 8 -g 10 -pix_fmt yuv420p");
  std::ifstream in(clean, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t start = bytes.size() / 2;
  for (size_t i = 0; i < 4096 && start + i < bytes.size(); ++i) bytes[start + i] = "damaged AV1 "[i % 12];
  const std::string damaged = TempDir() + "/log_damaged.ivf";
  std::ofstream(damaged, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return damaged;
}

// In the child: loads the plugin, opens `video` and decodes every frame.
[[noreturn]] void DecodeInChild(const std::string& video, const char* level, const std::string& stderr_file) {
  if (level != nullptr) {
    setenv(CODECVISOR_BACKEND_LOG_LEVEL_ENV, level, 1);
  } else {
    unsetenv(CODECVISOR_BACKEND_LOG_LEVEL_ENV);
  }
  const int fd = open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || dup2(fd, STDERR_FILENO) < 0) _exit(kNoStderrFile);
  OpenVideo v;
  if (v.Open(video, DefaultOptions()) != CV_OK) _exit(kOpenFailed);
  bool failed = false;
  std::vector<uint8_t> frame;
  const int64_t n = v.Metadata().num_frames_from_scan;
  for (int64_t i = 0; i < n; ++i) failed |= v.Decode(i, &frame) != CV_OK;
  _exit(failed ? kSomeFramesFailed : kEveryFrameDecoded);
}

// The stderr of a child decoding the damaged file with the log level
// variable set to `level` (nullptr: unset).
std::string StderrOfDamagedDecode(const char* level) {
  const std::string video = DamagedAv1();
  const std::string stderr_file = TempDir() + "/stderr_" + (level != nullptr ? level : "default") + ".txt";
  const pid_t pid = fork();
  if (pid == 0) DecodeInChild(video, level, stderr_file);
  EXPECT_GT(pid, 0) << "fork failed";
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status)) << "the child died with status " << status;
  EXPECT_EQ(WEXITSTATUS(status), kSomeFramesFailed)
      << "the damage must make some frames fail (1: every frame decoded, 2: the file did not open)";
  std::ifstream in(stderr_file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(Dav1dBackendLogTest, ADamagedFileLeavesStderrEmptyByDefault) {
  EXPECT_EQ(StderrOfDamagedDecode(nullptr), "");
}

TEST(Dav1dBackendLogTest, AnUnknownLevelIsQuiet) { EXPECT_EQ(StderrOfDamagedDecode("loud"), ""); }

TEST(Dav1dBackendLogTest, TheErrorLevelShowsTheDecodersComplaints) {
  EXPECT_NE(StderrOfDamagedDecode("error"), "");
}

}  // namespace
}  // namespace dav1d_plugin::testing
