// The C++ API in a process whose cgroup limits its memory (a container
// started with --memory): a time range whose frames a backend keeps
// sending stops at half the limit with kResourceExhausted, where the
// frames kept grew until the kernel killed the process. The process is a
// child forked into a memory cgroup made for it (as root here;
// tools/test.sh makes the hierarchies writable in Bazel's sandbox).

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "codecvisor/codecvisor.h"
#include "core/cgroup.h"
#include "gtest/gtest.h"
#include "tests/test_paths.h"

namespace codecvisor {
namespace {

constexpr uint64_t kLimit = uint64_t{2} << 30;

// Exit codes of the child.
enum : int { kSawTheLimit = 0, kNoHost = 10, kNoDecoder, kNotExhausted, kWrongMessage, kDecoderStopped };

int DecodeTooMuch(const std::string& clip) {
  HostOptions options;
  options.backend_path = {testing::Runfile("backends/testing")};
  auto host = Host::Create(options);
  if (!host.ok()) {
    std::fprintf(stderr, "%s\n", host.status().ToString().c_str());
    return kNoHost;
  }
  auto decoder = (*host)->OpenDecoder(clip, {.device = "synthetic", .seek_mode = SeekMode::kApproximate});
  if (!decoder.ok()) return kNoDecoder;
  // 400 frames of 12 MiB: 4.7 GiB, more than the cgroup's 2 GiB.
  auto frames = (*decoder)->GetFramesPlayedInRange(0.0, 40.0);
  if (frames.ok() || frames.status().code() != StatusCode::kResourceExhausted) return kNotExhausted;
  if (frames.status().message().find("more than half the 2048 MiB of memory this process may use") ==
      std::string::npos) {
    std::fprintf(stderr, "%s\n", frames.status().ToString().c_str());
    return kWrongMessage;
  }
  auto next = (*decoder)->GetFramesPlayedInRange(0.0, 1.0);
  return next.ok() && next->size() == 10 ? kSawTheLimit : kDecoderStopped;
}

TEST(MemoryLimitTest, FramesKeptStopAtHalfTheCgroupsLimit) {
  const CgroupLayout layout = ProbeCgroupLayout();
  ASSERT_NE(layout.version, 0) << layout.missing;
  auto cgroup = BackendCgroup::Create(layout, "memory-limit-test", kLimit, 1024);
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  const std::string clip = testing::WriteFile("big.syn", "synthetic frames=400 width=2048 height=2048 fps=10");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (const std::string& procs : (*cgroup)->procs_files()) std::ofstream(procs) << getpid() << std::flush;
    _exit(DecodeTooMuch(clip));
  }
  // A child that never ends (a hang the test is to catch) is killed after
  // two minutes, well within the test's own limit, so the cgroup goes.
  int status = 0;
  pid_t waited = 0;
  for (int i = 0; i < 1200 && (waited = waitpid(child, &status, WNOHANG)) == 0; ++i) usleep(100'000);
  if (waited == 0) {
    kill(child, SIGKILL);
    waited = waitpid(child, &status, 0);
  }
  ASSERT_EQ(waited, child);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0)
                                 << " (the kernel's OOM killer takes SIGKILL)";
  EXPECT_EQ(WEXITSTATUS(status), kSawTheLimit)
      << "10: no host, 11: no decoder, 12: not kResourceExhausted, 13: another message, 14: the decoder stopped";
}

}  // namespace
}  // namespace codecvisor
