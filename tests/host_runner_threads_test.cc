// The runner's threads, seen from /proc while the synthetic backend serves
// real sessions: one named thread per session, and none of them awake while
// the decoders are idle. And the host's: one exit watcher for all its
// backends, none for a backend never used.

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "backends/sdk/runner/runner_args.h"
#include "core/exit_watcher.h"
#include "ipc/hangup_watcher.h"
#include "tests/fault_test_support.h"
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
  for (int i = 0; i < 2000 && left != 1; ++i) {  // the thread ends after the close reaches it
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

// A host with a hundred manifests has no exit watcher until a backend
// starts, then one for all of them (two running here); a backend that is never used costs no
// thread. A child killed from outside is seen dead by that watcher with no
// request in flight and no heartbeat (turned off here) to notice it.
TEST(HostThreadsTest, OneExitWatcherForAHundredBackends) {
  HostOptions options;
  options.layout = InstallLayout{Runfile("backends/sdk/runner/codecvisor-backend"), Runfile("backends/cpu")};
  options.supervision.heartbeat_interval = std::chrono::milliseconds(0);
  absl::StatusOr<std::unique_ptr<Host>> host = Host::Create(options);
  ASSERT_TRUE(host.ok()) << host.status();
  const std::string library = Runfile("backends/testing/libcodecvisor_synthetic.so");
  int all_threads_before = 0;
  ForEachThread(getpid(), [&](const std::string&, const std::string&) { ++all_threads_before; });
  // Never used, so never started: the library's own name is never checked.
  for (int i = 0; i < 100; ++i) {
    const std::string name = "unused" + std::to_string(i);
    const std::string manifest = WriteFile(name + ".toml", "name = \"" + name + "\"\ndevices = [\"" + name +
                                                               "\"]\nlibrary = \"" + library + "\"\nabi_version = 1\n");
    absl::Status loaded = (*host)->LoadBackend(manifest);
    ASSERT_TRUE(loaded.ok()) << loaded;
  }
  int all_threads_after = 0;
  ForEachThread(getpid(), [&](const std::string&, const std::string&) { ++all_threads_after; });
  EXPECT_EQ(all_threads_after, all_threads_before) << "discovered backends started threads";
  EXPECT_EQ(ThreadsNamed(getpid(), kExitWatcherThreadName), 0);
  for (const char* manifest : {"backends/testing/synthetic.toml", "backends/testing/faulty.toml"}) {
    absl::Status loaded = (*host)->LoadBackend(Runfile(manifest));
    ASSERT_TRUE(loaded.ok()) << loaded;
  }

  const std::string video = WriteFile("threads.syn", "synthetic frames=40 width=32 height=24 fps=10 start=0.5");
  std::vector<std::unique_ptr<VideoDecoder>> decoders;
  for (const char* device : {"synthetic", "faulty"}) {
    DecoderOptions decoder_options;
    decoder_options.device = device;
    absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = (*host)->OpenDecoder(video, decoder_options);
    ASSERT_TRUE(decoder.ok()) << decoder.status();
    ASSERT_TRUE((*decoder)->GetFrameAt(1).ok());
    decoders.push_back(*std::move(decoder));
  }
  EXPECT_EQ(ThreadsNamed(getpid(), kExitWatcherThreadName), 1);

  const pid_t pid = BackendPid(**host, "synthetic");
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  // Only the watcher can record this death. The bound is for a broken
  // build, not a measure: the watcher sees it as soon as the kernel does.
  std::string last_exit;
  for (int i = 0; i < 1000 && last_exit.empty(); ++i) {
    for (const BackendStatus& b : (*host)->Backends()) {
      if (b.name == "synthetic") last_exit = b.last_exit;
    }
    if (last_exit.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(last_exit, "killed by signal 9 (SIGKILL)");
  // The decoder replays on the restarted child.
  absl::StatusOr<Frame> frame = decoders[0]->GetFrameAt(2);
  ASSERT_TRUE(frame.ok()) << frame.status();
  ExpectFrame(*frame, 2);
}

}  // namespace
}  // namespace codecvisor::testing
