#include "core/death_record.h"

#include <signal.h>
#include <sys/syscall.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace codecvisor {
namespace {

ipc::CrashHints Hints(uint32_t in_call, uint32_t fault = 0, uint32_t stray = 0, int32_t syscall = -1,
                      int32_t exit_code = -1) {
  ipc::CrashHints h;
  h.in_call = in_call;
  h.fault_signal = fault;
  h.stray_fault_signal = stray;
  h.violation_syscall = syscall;
  h.exit_code = exit_code;
  return h;
}

TEST(AddCrashHintsTest, Table) {
  struct Case {
    std::string name;
    std::vector<ipc::CrashHints> channels;  // control first
    ExitStatus exit;                        // what the host saw
    int suspects;
    bool culprit;
    bool exit_recorded;
    uint32_t signal;
    int32_t syscall;
  };
  const ExitStatus kKilled{true, SIGKILL}, kSegv{true, SIGSEGV}, kViolation{false, 128 + SIGSYS}, kExit3{false, 3};
  const std::vector<Case> cases = {
      {"nothing recorded", {Hints(0), Hints(0)}, kKilled, 0, false, false, 0, -1},
      {"two sessions inside, no fault", {Hints(0), Hints(1), Hints(1)}, kKilled, 2, false, false, 0, -1},
      {"a session's fault in its call", {Hints(0), Hints(1, SIGSEGV), Hints(1)}, kSegv, 2, true, false, SIGSEGV, -1},
      {"an open's fault", {Hints(1, SIGBUS), Hints(0)}, {true, SIGBUS}, 1, true, false, SIGBUS, -1},
      {"a stray fault names nobody", {Hints(0, 0, SIGSEGV), Hints(1)}, kSegv, 1, false, false, SIGSEGV, -1},
      {"a stray abort while an open is inside (as init, it ends in SIGSEGV)",
       {Hints(1, 0, SIGABRT)},
       kSegv,
       1,
       false,
       false,
       SIGABRT,
       -1},
      {"the culprit's signal wins over a stray one",
       {Hints(0, 0, SIGABRT), Hints(1, SIGSEGV)},
       kSegv,
       1,
       true,
       false,
       SIGSEGV,
       -1},
      {"the first culprit's signal stays",
       {Hints(0), Hints(1, SIGSEGV), Hints(1, SIGFPE)},
       kSegv,
       2,
       true,
       false,
       SIGSEGV,
       -1},
      {"a fault, then a SIGKILL (a crash handler stuck, killed)",
       {Hints(1, SIGSEGV)},
       kKilled,
       1,
       true,
       false,
       SIGSEGV,
       -1},
      {"a sandbox violation in a call", {Hints(0), Hints(1, SIGSYS, 0, 41)}, kViolation, 1, true, false, SIGSYS, 41},
      {"a trap in a fault's handler (the fault recorded first)",
       {Hints(0), Hints(1, SIGSEGV, 0, 41)},
       kViolation,
       1,
       true,
       false,
       SIGSYS,
       41},
      {"a trap on a thread in no call", {Hints(1, 0, SIGSYS, 41)}, kViolation, 1, false, false, SIGSYS, 41},
      {"a trap in the handler of a fault in no call, while an open is inside",
       {Hints(1, 0, SIGSEGV, 41)},
       kViolation,
       1,
       false,
       false,
       SIGSYS,
       41},
      {"exit() caught in a call", {Hints(0), Hints(1, 0, 0, -1, 3), Hints(1)}, kExit3, 2, false, true, 0, -1},
      {"exit() outside any call names nobody", {Hints(0, 0, 0, -1, 3)}, kExit3, 0, false, false, 0, -1},
      // What the exit does not bear out is a plugin's writing: ignored.
      {"a fault written, then a clean exit", {Hints(0), Hints(1, SIGSEGV)}, {false, 0}, 1, false, false, 0, -1},
      {"a signal no handler records", {Hints(0), Hints(1, 4'000'000'000u)}, kSegv, 1, false, false, 0, -1},
      {"SIGKILL written as a fault", {Hints(0), Hints(1, SIGKILL)}, kSegv, 1, false, false, 0, -1},
      {"a trapped execve written, then a SIGSEGV death",
       {Hints(0), Hints(1, SIGSYS, 0, SYS_execve)},
       kSegv,
       1,
       false,
       false,
       0,
       -1},
      {"an exit() written, then a death by a signal", {Hints(0), Hints(1, 0, 0, -1, 3)}, kSegv, 1, false, false, 0, -1},
      {"an exit() written, then another code", {Hints(0), Hints(1, 0, 0, -1, 3)}, {false, 4}, 1, false, false, 0, -1},
      {"a fault written, then an exit with 128 + it",
       {Hints(0), Hints(1, SIGSEGV)},
       {false, 128 + SIGSEGV},
       1,
       false,
       false,
       0,
       -1},
  };
  for (const Case& c : cases) {
    DeathRecord record;
    record.exit = c.exit;
    AddCrashHints(c.channels, &record);
    EXPECT_EQ(record.suspects, c.suspects) << c.name;
    EXPECT_EQ(record.culprit_recorded, c.culprit) << c.name;
    EXPECT_EQ(record.exit_recorded, c.exit_recorded) << c.name;
    EXPECT_EQ(record.recorded_signal, c.signal) << c.name;
    EXPECT_EQ(record.violation_syscall, c.syscall) << c.name;
  }
}

TEST(AddCrashHintsTest, KeepsAFullAddressSpaceFromAnyChannel) {
  ipc::CrashHints control = Hints(0, 0, SIGSEGV);
  control.address_space_full = true;
  DeathRecord record;
  record.exit = {true, SIGSEGV};
  AddCrashHints(std::vector<ipc::CrashHints>{control, Hints(1)}, &record);
  EXPECT_TRUE(record.address_space_full);
  DeathRecord other;
  other.exit = {true, SIGSEGV};
  AddCrashHints(std::vector<ipc::CrashHints>{Hints(0, 0, SIGSEGV), Hints(1)}, &other);
  EXPECT_FALSE(other.address_space_full);
}

TEST(DescribeTest, NamesHowItEnded) {
  DeathRecord d;
  d.exit = {true, SIGKILL};
  EXPECT_EQ(d.Describe(), "killed by signal 9 (SIGKILL)");
  d.oom_killed = true;
  EXPECT_EQ(d.Describe(), "killed by signal 9 (SIGKILL): out of memory (over the memory_mb of its manifest)");
  d.exit = {false, 128 + SIGSEGV};
  d.recorded_signal = SIGSEGV;  // the runner, as init, exits instead
  EXPECT_EQ(d.Describe(), "killed by signal 11 (SIGSEGV)");
  d.address_space_full = true;
  EXPECT_EQ(d.Describe(),
            "killed by signal 11 (SIGSEGV) with its address space full (the memory_mb of its manifest): likely an "
            "allocation that failed and was used unchecked");
  d.violation_syscall = 41;
  EXPECT_EQ(d.Describe(), "sandbox violation: syscall socket");
  d.violation_syscall = SYS_mprotect;  // only ever for W+X
  EXPECT_EQ(d.Describe(),
            "sandbox violation: syscall mprotect (a mapping both writable and executable, which the sandbox refuses: "
            "map it writable, write it, then make it executable)");
  d.violation_syscall = 41;
  d.killed_by_supervisor = true;
  d.kill_reason = "no answer within 30000 ms";
  EXPECT_EQ(d.Describe(), "killed by codecvisor: no answer within 30000 ms");
}

// Exit code 6 is the close watchdog's only when the runner said so in the
// control region: a plugin's own exit(6) is described as an exit.
TEST(DescribeTest, NamesTheCloseWatchdogOnlyWhereItSaidSo) {
  ipc::CrashHints control = Hints(0);
  control.close_hung = true;
  DeathRecord watchdog;
  watchdog.exit = {false, 6};
  AddCrashHints(std::vector<ipc::CrashHints>{control, Hints(1)}, &watchdog);
  EXPECT_TRUE(watchdog.close_hung);
  EXPECT_EQ(watchdog.Describe(),
            "exited with code 6: the plugin's close_session of a closed decoder did not return within the "
            "manifest's [restart] close_timeout_seconds");
  DeathRecord own_exit;
  own_exit.exit = {false, 6};
  AddCrashHints(std::vector<ipc::CrashHints>{Hints(0), Hints(1)}, &own_exit);
  EXPECT_EQ(own_exit.Describe(), "exited with code 6");
}

TEST(CrashAdviceTest, NamesTheBacktraceSwitchForFaultsOnly) {
  DeathRecord d;
  d.exit = {false, 128 + SIGSEGV};
  d.recorded_signal = SIGSEGV;
  EXPECT_EQ(CrashAdvice(d, false), "; for the crashing thread's backtrace, run with CODECVISOR_BACKEND_BACKTRACE=1");
  EXPECT_EQ(CrashAdvice(d, true),
            "; the crashing thread's backtrace is among the backend's lines on this process's stderr (\"codecvisor: "
            "backend 'NAME': ...\")");
  d.recorded_signal = 0;
  d.exit = {true, SIGABRT};
  EXPECT_NE(CrashAdvice(d, false), "");
  d.exit = {true, SIGKILL};  // an operator or the OOM killer: no vendor fault
  EXPECT_EQ(CrashAdvice(d, false), "");
  d.exit = {false, 3};  // exit(3)
  EXPECT_EQ(CrashAdvice(d, false), "");
  d.exit = {false, 128 + SIGSYS};
  d.violation_syscall = 41;  // named by Describe(): a backtrace adds nothing
  EXPECT_EQ(CrashAdvice(d, false), "");
  d = DeathRecord{};
  d.exit = {true, SIGKILL};
  d.recorded_signal = SIGSEGV;
  d.killed_by_supervisor = true;  // a hang: the supervisor's SIGKILL
  EXPECT_EQ(CrashAdvice(d, false), "");
}

// A runner that ended before its handshake: where the plugin made it exit,
// that is said; the runner's own exits and deaths by signal say nothing more.
TEST(PluginExitWhileStartingTest, NamesCreateOrTheLibrarysConstructors) {
  EXPECT_EQ(PluginExitWhileStarting({false, 3}, Hints(0, 0, 0, -1, 3)),
            " (the plugin's create() called exit(3): a backend that cannot start returns an error from create, "
            "which the host shows)");
  EXPECT_EQ(PluginExitWhileStarting({false, 0}, Hints(0)),
            " (not an exit the runner makes while it starts: the plugin's library probably called exit(0) as it "
            "loaded, in a constructor)");
  EXPECT_NE(PluginExitWhileStarting({false, 7}, Hints(0)).find("exit(7) as it loaded"), std::string::npos);
  EXPECT_EQ(PluginExitWhileStarting({false, 3}, Hints(0)), "") << "the runner's own: the backend did not load";
  EXPECT_EQ(PluginExitWhileStarting({false, 2}, Hints(0)), "") << "the runner's own: its command line refused";
  EXPECT_EQ(PluginExitWhileStarting({false, 5}, Hints(0)), "") << "the runner's own: its channel closed";
  EXPECT_EQ(PluginExitWhileStarting({false, 128 + SIGSYS}, Hints(0)), "") << "a sandbox violation";
  EXPECT_EQ(PluginExitWhileStarting({true, SIGSEGV}, Hints(0)), "");
}

}  // namespace
}  // namespace codecvisor
