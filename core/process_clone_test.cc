// CloneUntilExec against real children, on both clone paths: what
// core/process_clone.h promises the child's code and the host.

#include "core/process_clone.h"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "base/threads_refused_for_test.h"
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

CODECVISOR_CHILD_CODE int RaiseUsr1(void*, const sigset_t* exec_mask) {
  pthread_sigmask(SIG_SETMASK, exec_mask, nullptr);
  kill(getpid(), SIGUSR1);
  ExitChild(0);
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

CODECVISOR_CHILD_CODE int WaitForGo(void* arg, const sigset_t*) {
  char go = 0;
  const bool got = read(static_cast<GoArgs*>(arg)->go_read, &go, 1) == 1;
  ExitChild(got && go == 'g' ? 0 : 3);
}

// `started` runs while the child runs and before it may exec, with its pid:
// the child here waits for the byte `started` writes, and could not end
// without it.
// Clones WaitForGo with a `started` that writes its byte, checks that
// `started` ran with the child's pid and that the child exited 0, and
// returns whether the child was a copy of this process.
bool ExpectStartedLetsTheChildGoOn() {
  int go[2];
  EXPECT_EQ(pipe2(go, O_CLOEXEC), 0);
  ipc::UniqueFd go_read(go[0]), go_write(go[1]);
  GoArgs args{go_read.get()};
  pid_t seen = -1;
  CloneRequest request;
  request.child = WaitForGo;
  request.child_arg = &args;
  request.started = [&](pid_t pid, bool born_in_cgroup) {
    seen = pid;
    EXPECT_FALSE(born_in_cgroup);
    EXPECT_EQ(write(go_write.get(), "g", 1), 1);
    return true;
  };
  CloneResult cloned = CloneUntilExec(request);
  EXPECT_GT(cloned.pid, 0) << cloned.call << ": " << cloned.err;
  if (cloned.pid <= 0) return false;
  EXPECT_EQ(seen, cloned.pid);
  EXPECT_TRUE(cloned.pidfd.valid());
  EXPECT_FALSE(cloned.deadline_passed);
  const siginfo_t info = Reap(cloned.pid);
  EXPECT_EQ(info.si_code, CLD_EXITED);
  EXPECT_EQ(info.si_status, 0);
  return cloned.copied;
}

TEST_P(ProcessCloneTest, StartedRunsWithTheChildsPidWhileItWaits) {
  EXPECT_EQ(ExpectStartedLetsTheChildGoOn(), HostIsTraced());
}

// Exits 0 if SIGINT and SIGTERM are blocked (as every signal is until the
// child restores the mask before its exec) and the mask to restore does not
// block them.
CODECVISOR_CHILD_CODE int CheckBlocked(void*, const sigset_t* exec_mask) {
  sigset_t now;
  pthread_sigmask(SIG_SETMASK, nullptr, &now);
  const bool blocked = sigismember(&now, SIGINT) == 1 && sigismember(&now, SIGTERM) == 1;
  const bool restored_unblocked = sigismember(exec_mask, SIGINT) == 0 && sigismember(exec_mask, SIGTERM) == 0;
  ExitChild(blocked && restored_unblocked ? 0 : 4);
}

// A Ctrl-C to the host's process group must not kill a child that has not
// yet left it (setsid) and has its handlers at the default: signals wait
// until the exec.
TEST_P(ProcessCloneTest, EverySignalIsBlockedInTheChildUntilItsExec) {
  CloneRequest request;
  request.child = CheckBlocked;
  CloneResult cloned = CloneUntilExec(request);
  ASSERT_GT(cloned.pid, 0) << cloned.call << ": " << cloned.err;
  const siginfo_t info = Reap(cloned.pid);
  EXPECT_EQ(info.si_code, CLD_EXITED);
  EXPECT_EQ(info.si_status, 0);
}

// Where a seccomp profile answers clone3 with ENOSYS, the child comes from
// clone, which cannot be born in a cgroup: `started` must be told so, or
// the caller would leave it out of its cgroup. In a forked child, which
// exits 0 if so, 1 if not, 10 if the filter could not be loaded.
[[noreturn]] void CloneWithClone3Refused() {
  scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
  if (filter == nullptr || seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) != 0 ||
      seccomp_load(filter) != 0) {
    _exit(10);
  }
  ipc::UniqueFd dir(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  bool born = true;
  CloneRequest request;
  request.cgroup_dir = dir.get();
  request.child = CheckBlocked;
  request.started = [&](pid_t, bool born_in_cgroup) {
    born = born_in_cgroup;
    return true;
  };
  CloneResult cloned = CloneUntilExec(request);
  if (cloned.pid <= 0) _exit(2);
  const siginfo_t info = Reap(cloned.pid);
  _exit(!born && !cloned.born_in_cgroup && std::string_view(cloned.call) == "clone" && info.si_status == 0 ? 0 : 1);
}

TEST(ProcessCloneFallbackTest, AChildFromTheCloneFallbackIsNotTakenForBornInItsCgroup) {
  const pid_t pid = fork();
  if (pid == 0) CloneWithClone3Refused();
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  ASSERT_NE(WEXITSTATUS(status), 10) << "the seccomp filter could not be loaded";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A signal that came while every signal was blocked (a Ctrl-C to the
// host's process group before the child's setsid) is thrown away, not
// delivered when the mask is restored. In a forked child: exits 0 if it
// survives the restore, is killed by SIGINT if not.
TEST(DiscardPendingSignalsTest, ASignalThatCameWhileBlockedIsThrownAway) {
  const pid_t pid = fork();
  if (pid == 0) {
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    kill(getpid(), SIGINT);
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGINT) != 1) ExitChild(3);
    DiscardPendingSignals();
    sigprocmask(SIG_SETMASK, &old, nullptr);
    ExitChild(0);
  }
  const siginfo_t info = Reap(pid);
  EXPECT_EQ(info.si_code, CLD_EXITED) << "killed by signal " << info.si_status;
  EXPECT_EQ(info.si_status, 0);
}

CODECVISOR_CHILD_CODE int Hang(void*, const sigset_t*) {
  for (;;) pause();
}

// The cloning thread sleeps until the child execs or exits: one that does
// neither is killed at the deadline, which wakes it.
// Returns whether the child was a copy of this process.
bool ExpectAChildThatHangsIsKilledAtTheDeadline() {
  CloneRequest request;
  request.child = Hang;
  request.exec_deadline = std::chrono::milliseconds(100);
  CloneResult cloned = CloneUntilExec(request);
  EXPECT_GT(cloned.pid, 0) << cloned.call << ": " << cloned.err;
  if (cloned.pid <= 0) return false;
  EXPECT_TRUE(cloned.deadline_passed);
  const siginfo_t info = Reap(cloned.pid);
  EXPECT_EQ(info.si_code, CLD_KILLED);
  EXPECT_EQ(info.si_status, SIGKILL);
  return cloned.copied;
}

TEST_P(ProcessCloneTest, AChildThatNeverExecsIsKilledAtTheDeadline) {
  EXPECT_EQ(ExpectAChildThatHangsIsKilledAtTheDeadline(), HostIsTraced());
}

// A process that traces the calling thread until it is destroyed, as gdb
// or strace would (without their stops): each signal the thread stops for
// is passed on to it.
class TracerOfThisThread {
 public:
  TracerOfThisThread() {
    const pid_t tracee = static_cast<pid_t>(syscall(SYS_gettid));
    // Where Yama allows only ancestors to trace (ptrace_scope 1).
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0) return;
    ipc::UniqueFd ready_read(ready[0]), ready_write(ready[1]);
    pid_ = fork();
    if (pid_ == 0) {
      const bool seized = ptrace(PTRACE_SEIZE, tracee, nullptr, nullptr) == 0;
      const char byte = seized ? 't' : 'x';
      (void)!write(ready_write.get(), &byte, 1);
      if (!seized) _exit(1);
      for (;;) {
        int status = 0;
        if (waitpid(tracee, &status, __WALL) < 0 || !WIFSTOPPED(status)) _exit(0);
        const int signal = status >> 16 == 0 ? WSTOPSIG(status) : 0;
        ptrace(PTRACE_CONT, tracee, nullptr, reinterpret_cast<void*>(static_cast<intptr_t>(signal)));
      }
    }
    ready_write.reset();
    char byte = 0;
    attached_ = pid_ > 0 && read(ready_read.get(), &byte, 1) == 1 && byte == 't';
  }
  ~TracerOfThisThread() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    prctl(PR_SET_PTRACER, 0, 0, 0, 0);
  }
  bool attached() const { return attached_; }

 private:
  pid_t pid_ = -1;
  bool attached_ = false;
};

// Under a tracer the child is a copy of the host (gdb stops every other
// thread while one is in a vfork, and the helper that lets the child go on
// would never run): `started` still runs while the child waits, and the
// cloning thread waits for the child to exec or end.
TEST_P(ProcessCloneTest, UnderATracerTheChildIsACopyThatStarts) {
  TracerOfThisThread tracer;
  ASSERT_TRUE(tracer.attached());
  EXPECT_TRUE(ExpectStartedLetsTheChildGoOn());
}

// ... and one that never execs is killed at the deadline, which ends the
// cloning thread's wait.
TEST_P(ProcessCloneTest, UnderATracerAChildThatNeverExecsIsKilledAtTheDeadline) {
  TracerOfThisThread tracer;
  ASSERT_TRUE(tracer.attached());
  EXPECT_TRUE(ExpectAChildThatHangsIsKilledAtTheDeadline());
}

// A clone the kernel refuses (CLONE_FS with a new user namespace) returns
// its errno, without a child or a call to `started`.
TEST_P(ProcessCloneTest, ARefusedCloneReturnsItsErrno) {
  bool started = false;
  CloneRequest request;
  request.flags = CLONE_FS | CLONE_NEWUSER;
  request.child = Hang;
  request.started = [&](pid_t, bool) { return started = true; };
  CloneResult cloned = CloneUntilExec(request);
  EXPECT_EQ(cloned.pid, -1);
  EXPECT_EQ(cloned.err, EINVAL) << cloned.call;
  EXPECT_FALSE(cloned.pidfd.valid());
  EXPECT_FALSE(started);
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG | __WALL), -1) << "a child was left";
}

// Where no thread can be started (a pids limit reached: a container's, or
// the user's), the start fails with pthread_create's errno and no child,
// instead of terminating the host on std::thread's exception. Checked in a
// forked child whose clone and clone3 fail with EAGAIN.
TEST_P(ProcessCloneTest, WithNoThreadLeftTheStartFailsWithoutAChild) {
  absl::StatusOr<std::string> said = codecvisor::testing::RunWithThreadsRefused([] {
    bool started = false;
    CloneRequest request;
    request.child = Hang;
    request.started = [&](pid_t, bool) { return started = true; };
    CloneResult cloned;
    try {
      cloned = CloneUntilExec(request);
    } catch (...) {
      return std::string("the start threw");
    }
    const bool no_child = waitpid(-1, nullptr, WNOHANG | __WALL) == -1 && errno == ECHILD;
    return absl::StrCat("pid ", cloned.pid, ", ", std::strerror(cloned.err), " from ", cloned.call,
                        cloned.pidfd.valid() ? ", a pidfd" : "", started ? ", started" : "",
                        no_child ? "" : ", a child left");
  });
  ASSERT_TRUE(said.ok()) << said.status();
  EXPECT_EQ(*said, absl::StrCat("pid -1, ", std::strerror(EAGAIN), " from pthread_create"));
}

}  // namespace
}  // namespace codecvisor::process_internal
