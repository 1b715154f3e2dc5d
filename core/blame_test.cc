#include "core/blame.h"

#include <signal.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace codecvisor {
namespace {

using std::chrono::milliseconds;

constexpr uint64_t kMe = 7;
constexpr uint64_t kOther = 8;

TEST(IsFaultSignalTest, Table) {
  struct Case {
    ExitStatus exit;
    int32_t violation_syscall;
    bool fault;
  };
  const std::vector<Case> cases = {
      {{true, SIGSEGV}, -1, true},   {{true, SIGBUS}, -1, true},    {{true, SIGFPE}, -1, true},
      {{true, SIGILL}, -1, true},    {{true, SIGABRT}, -1, true},   {{true, SIGSYS}, -1, true},
      {{true, SIGTRAP}, -1, true},   {{true, SIGKILL}, -1, false},  {{true, SIGTERM}, -1, false},
      {{false, 0}, -1, false},       {{false, 1}, -1, false},       {{false, 128 + SIGSEGV}, -1, false},
      // A sandbox violation: the runner exits 128 + SIGSYS and records the call.
      {{false, 128 + SIGSYS}, 41, true},
  };
  for (const Case& c : cases) {
    DeathRecord death;
    death.exit = c.exit;
    death.violation_syscall = c.violation_syscall;
    EXPECT_EQ(IsFaultSignal(death), c.fault) << c.exit.ToString() << " syscall " << c.violation_syscall;
  }
}

struct JudgeCase {
  std::string name;
  DeathRecord death;
  ipc::CrashHints hints;  // this session's channel
  RequestBlame want;
};

DeathRecord Death(ExitStatus exit) {
  DeathRecord d;
  d.exit = exit;
  return d;
}

ipc::CrashHints Hints(uint32_t in_call, uint32_t fault_signal = 0, int32_t exit_code = -1) {
  ipc::CrashHints h;
  h.in_call = in_call;
  h.fault_signal = fault_signal;
  h.exit_code = exit_code;
  return h;
}

TEST(JudgeTest, Table) {
  std::vector<JudgeCase> cases;
  {
    DeathRecord d = Death({true, SIGKILL});
    d.killed_by_supervisor = true;
    d.blamed_session = kMe;
    cases.push_back({"killed by the supervisor for my request", d, Hints(1), {true, false}});
    d.blamed_session = kOther;
    cases.push_back({"killed by the supervisor for another's request", d, Hints(1), {false, false}});
  }
  {
    DeathRecord d = Death({true, SIGSEGV});
    d.culprit_recorded = true;
    d.suspects = 2;
    cases.push_back({"fault recorded on my channel", d, Hints(1, SIGSEGV), {true, false}});
    cases.push_back({"fault recorded on another channel, I was inside too", d, Hints(1), {false, false}});
    d.exit = {false, 128 + SIGSYS};
    d.violation_syscall = 41;
    cases.push_back({"sandbox violation in my call", d, Hints(1, SIGSYS), {true, false}});
  }
  cases.push_back({"outside SIGKILL while I was inside", Death({true, SIGKILL}), Hints(1), {false, false}});
  {
    DeathRecord d = Death({true, SIGKILL});
    d.oom_killed = true;
    d.suspects = 1;
    cases.push_back({"OOM kill while I was alone inside", d, Hints(1), {false, false}});
  }
  {
    DeathRecord d = Death({false, 3});
    d.exit_recorded = true;
    d.suspects = 2;
    cases.push_back({"exit() caught in my call", d, Hints(1, 0, 3), {true, false}});
    cases.push_back({"exit() caught in another's call", d, Hints(1), {false, false}});
  }
  {
    DeathRecord d = Death({true, SIGSEGV});  // a stray fault: no culprit recorded
    d.suspects = 2;
    cases.push_back({"stray fault, two suspects, I was inside", d, Hints(1), {false, true}});
    cases.push_back({"stray fault, I was not inside", d, Hints(0), {false, false}});
    d.suspects = 1;
    cases.push_back({"stray fault, I was alone inside", d, Hints(1), {true, true}});
  }
  {
    DeathRecord d = Death({false, 1});  // an exit the sandbox did not see
    d.suspects = 1;
    cases.push_back({"unrecorded exit, I was alone inside", d, Hints(1), {true, true}});
  }
  {
    // The runner's close watchdog ended it (a close_session nobody waits
    // for never returned): whoever was decoding is a bystander.
    DeathRecord d = Death({false, 6});
    d.close_hung = true;
    d.suspects = 1;
    cases.push_back({"close watchdog's exit, I was alone inside", d, Hints(1), {false, false}});
  }
  for (const JudgeCase& c : cases) {
    const RequestBlame got = Judge(c.death, c.hints, kMe);
    EXPECT_EQ(got.blamed, c.want.blamed) << c.name;
    EXPECT_EQ(got.replay_alone, c.want.replay_alone) << c.name;
  }
}

const Replays::Words kWords{"frame indices [1]", "serving frame indices [1]", "; poison"};

TEST(ReplaysTest, TwoBlamedDeathsArePoisonNamingBoth) {
  Replays replays(milliseconds(1000));
  const auto t = Replays::Clock::time_point() + std::chrono::hours(1);
  unsetenv("CODECVISOR_BACKEND_BACKTRACE");  // the advice names it
  DeathRecord segv = Death({true, SIGSEGV});
  DeathRecord abrt = Death({true, SIGABRT});
  EXPECT_TRUE(replays.AfterDeath({true, false}, segv, kWords, t).ok());
  EXPECT_TRUE(replays.AfterDeath({false, false}, segv, kWords, t).ok());  // a bystander death between
  absl::Status s = replays.AfterDeath({true, false}, abrt, kWords, t);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(s.message(),
            "frame indices [1] killed the backend twice (killed by signal 11 (SIGSEGV); then killed by signal 6 "
            "(SIGABRT)); poison; for the crashing thread's backtrace, run with CODECVISOR_BACKEND_BACKTRACE=1");
}

TEST(ReplaysTest, ASuspectReplaysAloneOnlyAfterTheDeathThatMadeItOne) {
  Replays replays(milliseconds(1000));
  const auto t = Replays::Clock::time_point() + std::chrono::hours(1);
  EXPECT_FALSE(replays.alone());
  ASSERT_TRUE(replays.AfterDeath({false, true}, Death({true, SIGSEGV}), kWords, t).ok());
  EXPECT_TRUE(replays.alone());
  ASSERT_TRUE(replays.AfterDeath({false, false}, Death({true, SIGKILL}), kWords, t).ok());
  EXPECT_FALSE(replays.alone());
}

// A fault on a plugin's own thread with several requests inside vendor
// code blames none of them; the one that then kills the backend twice on
// its own is poison, and guilty of all three deaths (the restart budget
// forgets them). Deaths that blamed nobody and made it no suspect are not
// its own.
TEST(ReplaysTest, APoisonRequestIsGuiltyOfTheDeathsItWasASuspectOf) {
  Replays replays(milliseconds(1000));
  const auto t = Replays::Clock::time_point() + std::chrono::hours(1);
  auto death = [](uint64_t generation, ExitStatus exit) {
    DeathRecord d = Death(exit);
    d.generation = generation;
    return d;
  };
  ASSERT_TRUE(replays.AfterDeath({}, death(1, {true, SIGKILL}), kWords, t).ok());  // from outside
  ASSERT_TRUE(replays.AfterDeath({false, true}, death(2, {true, SIGSEGV}), kWords, t).ok());
  ASSERT_TRUE(replays.AfterDeath({true, true}, death(3, {true, SIGSEGV}), kWords, t).ok());
  EXPECT_EQ(replays.AfterDeath({true, true}, death(4, {true, SIGSEGV}), kWords, t).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(replays.guilty_generations(), (std::vector<uint64_t>{2, 3, 4}));
}

TEST(ReplaysTest, GivesUpFourTimeoutsAfterTheFirstDeath) {
  struct Case {
    milliseconds since_first;
    bool gives_up;
  };
  for (const Case c : {Case{milliseconds(0), false}, Case{milliseconds(3999), false}, Case{milliseconds(4000), true},
                       Case{milliseconds(60'000), true}}) {
    Replays replays(milliseconds(1000));
    const auto t = Replays::Clock::time_point() + std::chrono::hours(1);
    ASSERT_TRUE(replays.AfterDeath({}, Death({true, SIGKILL}), kWords, t).ok());
    absl::Status s = replays.AfterDeath({}, Death({true, SIGKILL}), kWords, t + c.since_first);
    EXPECT_EQ(!s.ok(), c.gives_up) << c.since_first.count() << " ms: " << s;
    if (c.gives_up) {
      EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
      EXPECT_EQ(s.message(), absl::StrCat("the backend died 2 times in ", c.since_first.count(),
                                          " ms while serving frame indices [1] (last: killed by signal 9 "
                                          "(SIGKILL)); giving up"));
    }
  }
}

}  // namespace
}  // namespace codecvisor
