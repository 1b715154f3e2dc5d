// The runner's threads, seen from /proc while the synthetic backend serves
// real sessions: one named thread per session, and none of them awake while
// the decoders are idle.

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "backends/sdk/runner/runner_args.h"
#include "ipc/hangup_watcher.h"
#include "tests/host_test_support.h"

namespace codecvisor::testing {

using ::codecvisor::internal::VideoDecoder;
namespace {

// Calls `fn(tid, comm)` for each thread of process `pid` (/proc/PID/task).
template <typename Fn>
void ForEachThread(pid_t pid, Fn fn) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* tasks = opendir(dir.c_str())) {
    while (const dirent* e = readdir(tasks)) {
      if (e->d_name[0] == '.') continue;
      std::string comm;
      std::getline(std::ifstream(dir + "/" + e->d_name + "/comm"), comm);
      fn(std::string(e->d_name), comm);
    }
    closedir(tasks);
  }
}

// Threads of process `pid` named `name`.
int ThreadsNamed(pid_t pid, const std::string& name) {
  int n = 0;
  ForEachThread(pid, [&](const std::string&, const std::string& comm) { n += comm == name; });
  return n;
}

// Each session is served on a runner thread of its own, named so that
// tools (bench decode's CPU split, top -H) can tell it from the vendor's
// threads; it ends when its decoder closes.
TEST_F(HostSyntheticTest, EachSessionHasANamedRunnerThread) {
  std::unique_ptr<VideoDecoder> a, b;
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(OpenTwoSessions(&a, &b, &pid));
  EXPECT_EQ(ThreadsNamed(pid, runner::kSessionThreadName), 2);
  a.reset();
  int left = -1;
  for (int i = 0; i < 200 && left != 1; ++i) {  // the thread ends after the close reaches it
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    left = ThreadsNamed(pid, runner::kSessionThreadName);
  }
  EXPECT_EQ(left, 1);
}

// Context switches (voluntary and not) of the runner's own threads in
// process `pid`: the main (control) thread, the session threads and the
// hang-up watcher. Not a sanitizer runtime's background thread.
int64_t RunnerContextSwitches(pid_t pid) {
  int64_t total = 0;
  ForEachThread(pid, [&](const std::string& tid, const std::string& comm) {
    if (tid != std::to_string(pid) && comm != runner::kSessionThreadName && comm != ipc::kHangupThreadName) return;
    std::ifstream status("/proc/" + std::to_string(pid) + "/task/" + tid + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.find("ctxt_switches:") != std::string::npos) total += std::stoll(line.substr(line.find(':') + 1));
    }
  });
  return total;
}

// An open but idle decoder costs no CPU: the runner's control and session
// threads sleep until the host asks for something (ipc/hangup_watcher.h).
// Polling the sockets every 10 ms instead would switch them in about 100
// times a second each, 300 here.
TEST_F(HostSyntheticTest, AnIdleBackendSleeps) {
  std::unique_ptr<VideoDecoder> a, b;
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(OpenTwoSessions(&a, &b, &pid));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const int64_t before = RunnerContextSwitches(pid);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const int64_t switches = RunnerContextSwitches(pid) - before;
  // The host's idle heartbeat (every 2 s) may fall in the second: a ping
  // and its answer on the control thread.
  EXPECT_LE(switches, 6) << "the idle runner's threads were switched in " << switches << " times in 1 s";
  // Still serving.
  EXPECT_TRUE(a->GetFrameAt(3).ok());
}

}  // namespace
}  // namespace codecvisor::testing
