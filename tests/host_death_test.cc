// What a host leaves behind when it is killed: nothing. Its own process
// (forked here, before this binary has any other thread) makes a Host and
// starts the synthetic backend; the test then stops that backend and kills
// the host, and the backend must die with it.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include <gtest/gtest.h>

#include "core/host.h"
#include "tests/host_test_support.h"
#include "tests/test_paths.h"

namespace codecvisor::testing {
namespace {

using ::codecvisor::internal::Host;
using ::codecvisor::internal::HostOptions;

// In the host's process: starts the backend, reports its pid, waits.
[[noreturn]] void RunHost(int report) {
  HostOptions options;
  options.layout = TestLayout();
  auto host = Host::Create(options);
  if (!host.ok()) _exit(2);
  if (!(*host)->LoadBackend(Runfile("backends/testing/synthetic.toml")).ok()) _exit(3);
  if (!(*host)->StartBackend("synthetic", std::chrono::seconds(60)).ok()) _exit(4);
  const pid_t backend = BackendPid(**host, "synthetic");
  if (write(report, &backend, sizeof(backend)) != sizeof(backend)) _exit(5);
  for (;;) pause();
}

// A stopped (or wedged) backend never notices its host hang up, so only
// the parent-death signal ends it. A root host's child becomes nobody after
// it sets that signal, and a change of credentials clears it: such a
// backend once outlived its host for good.
TEST(HostDeathTest, AHostKilledWhileItsBackendIsStoppedTakesTheBackendWithIt) {
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  const pid_t host = fork();
  ASSERT_GE(host, 0);
  if (host == 0) {
    close(pipe_fds[0]);
    RunHost(pipe_fds[1]);
  }
  close(pipe_fds[1]);
  pid_t backend = 0;
  const ssize_t got = read(pipe_fds[0], &backend, sizeof(backend));
  close(pipe_fds[0]);
  if (got != sizeof(backend)) {
    int status = 0;
    waitpid(host, &status, 0);
    FAIL() << "the host process could not start its backend (exit " << WEXITSTATUS(status) << ")";
  }
  // Through a pidfd: a signal that never reaches a reused pid.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, backend, 0));
  // Whatever fails below, neither process outlives the test.
  struct KillBoth {
    pid_t host;
    int backend;
    ~KillBoth() {
      if (host > 0 && kill(host, SIGKILL) == 0) waitpid(host, nullptr, 0);
      if (backend >= 0) {
        syscall(SYS_pidfd_send_signal, backend, SIGKILL, nullptr, 0);
        close(backend);
      }
    }
  } cleanup{host, pidfd};
  ASSERT_GT(backend, 0);
  ASSERT_GE(pidfd, 0);
  ASSERT_EQ(syscall(SYS_pidfd_send_signal, pidfd, SIGSTOP, nullptr, 0), 0);
  ASSERT_EQ(kill(host, SIGKILL), 0);
  ASSERT_EQ(waitpid(host, nullptr, 0), host);
  cleanup.host = 0;
  pollfd exited{pidfd, POLLIN, 0};
  const int ready = poll(&exited, 1, 30'000);
  EXPECT_EQ(ready, 1) << "the backend (pid " << backend << ") outlived its killed host";
}

}  // namespace
}  // namespace codecvisor::testing
