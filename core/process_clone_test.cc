// CloneUntilExec against real children, on both clone paths: what
// core/process_clone.h promises the child's code and the host.

#include "core/process_clone.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

#include "gtest/gtest.h"
#include "ipc/unique_fd.h"

namespace codecvisor::process_internal {
namespace {

class ProcessCloneTest : public ::testing::TestWithParam<bool> {
 protected:
  ProcessCloneTest() { ForceLegacyCloneForTesting(GetParam()); }
  ~ProcessCloneTest() override { ForceLegacyCloneForTesting(false); }
};

INSTANTIATE_TEST_SUITE_P(Clone, ProcessCloneTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "clone" : "clone3"; });

// How the child ended (it is reaped here).
siginfo_t Reap(pid_t pid) {
  siginfo_t info{};
  EXPECT_EQ(waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED), 0);
  return info;
}

std::atomic<int> handler_runs{0};
void CountRun(int) { handler_runs.fetch_add(1); }

int RaiseUsr1(void*) {
  kill(getpid(), SIGUSR1);
  _exit(0);
}

// A handler the host installed, run in the child, would run on the host's
// memory: the child sets it back to the default first. Here the default
// kills the child; the host's handler would have counted in the host's
// memory and let the child exit 0.
TEST_P(ProcessCloneTest, AHandlerTheHostInstalledNeverRunsInTheChild) {
  struct sigaction count {
  }, old{};
  count.sa_handler = CountRun;
  ASSERT_EQ(sigaction(SIGUSR1, &count, &old), 0);
  CloneRequest request;
  request.child = RaiseUsr1;
  CloneResult cloned = CloneUntilExec(request);
  ASSERT_GT(cloned.pid, 0) << cloned.call << ": " << cloned.err;
  const siginfo_t info = Reap(cloned.pid);
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_EQ(info.si_code, CLD_KILLED);
  EXPECT_EQ(info.si_status, SIGUSR1);
  EXPECT_EQ(handler_runs.load(), 0);
}

struct GoArgs {
  int go_read;
};

int WaitForGo(void* arg) {
  char go = 0;
  const bool got = read(static_cast<GoArgs*>(arg)->go_read, &go, 1) == 1;
  _exit(got && go == 'g' ? 0 : 3);
}

// `started` runs while the child runs and before it may exec, with its pid:
// the child here waits for the byte `started` writes, and could not end
// without it.
TEST_P(ProcessCloneTest, StartedRunsWithTheChildsPidWhileItWaits) {
  int go[2];
  ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
  ipc::UniqueFd go_read(go[0]), go_write(go[1]);
  GoArgs args{go_read.get()};
  pid_t seen = -1;
  CloneRequest request;
  request.child = WaitForGo;
  request.child_arg = &args;
  request.started = [&](pid_t pid, bool born_in_cgroup) {
    seen = pid;
    EXPECT_FALSE(born_in_cgroup);
    ASSERT_EQ(write(go_write.get(), "g", 1), 1);
  };
  CloneResult cloned = CloneUntilExec(request);
  ASSERT_GT(cloned.pid, 0) << cloned.call << ": " << cloned.err;
  EXPECT_EQ(seen, cloned.pid);
  EXPECT_TRUE(cloned.pidfd.valid());
  EXPECT_FALSE(cloned.deadline_passed);
  const siginfo_t info = Reap(cloned.pid);
  EXPECT_EQ(info.si_code, CLD_EXITED);
  EXPECT_EQ(info.si_status, 0);
}

int Hang(void*) {
  for (;;) pause();
}

// The cloning thread sleeps until the child execs or exits: one that does
// neither is killed at the deadline, which wakes it.
TEST_P(ProcessCloneTest, AChildThatNeverExecsIsKilledAtTheDeadline) {
  CloneRequest request;
  request.child = Hang;
  request.exec_deadline = std::chrono::milliseconds(100);
  CloneResult cloned = CloneUntilExec(request);
  ASSERT_GT(cloned.pid, 0) << cloned.call << ": " << cloned.err;
  EXPECT_TRUE(cloned.deadline_passed);
  const siginfo_t info = Reap(cloned.pid);
  EXPECT_EQ(info.si_code, CLD_KILLED);
  EXPECT_EQ(info.si_status, SIGKILL);
}

// A clone the kernel refuses (CLONE_FS with a new user namespace) returns
// its errno, without a child or a call to `started`.
TEST_P(ProcessCloneTest, ARefusedCloneReturnsItsErrno) {
  bool started = false;
  CloneRequest request;
  request.flags = CLONE_FS | CLONE_NEWUSER;
  request.child = Hang;
  request.started = [&](pid_t, bool) { started = true; };
  CloneResult cloned = CloneUntilExec(request);
  EXPECT_EQ(cloned.pid, -1);
  EXPECT_EQ(cloned.err, EINVAL) << cloned.call;
  EXPECT_FALSE(cloned.pidfd.valid());
  EXPECT_FALSE(started);
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG | __WALL), -1) << "a child was left";
}

}  // namespace
}  // namespace codecvisor::process_internal
