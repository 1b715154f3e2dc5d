// Starts, restarts and their budget, on the fake env of
// core/supervisor_test_fixture.h: first use, crashes and their backoff,
// quarantine, failed and late first starts.

#include "core/supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <vector>

#include "core/blame.h"
#include "core/restart_policy.h"
#include "core/supervisor_test_fixture.h"

namespace codecvisor {
namespace {

using supervisor_testing::SupervisorTest;
using supervisor_testing::kSegv;
using supervisor_testing::kSession;
using std::chrono::milliseconds;
// A session idle on generation 1 while other requests had the backend
// restarted more times than the deaths kept: it learns of its generation's
// end as a death that names nobody, so its request replays on the current
// one (it failed with "generation 1 is gone and its exit was not recorded").
TEST_F(SupervisorTest, ASessionOnALongGoneGenerationIsNotBlamed) {
  MakeWithPoisonLimit(100);
  StartReady();
  for (int request = 0; request < 10; ++request) supervisor_->RecordPoison(KilledTwiceByARequest());
  ASSERT_EQ(supervisor_->Status().state, BackendState::kReady);
  ASSERT_GT(supervisor_->Status().generation, 20u);
  absl::StatusOr<DeathRecord> record =
      supervisor_->ReportFailure(1, kSession, false, "hung up", ipc::Clock::now() + std::chrono::seconds(1));
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_TRUE(record->forgotten);
  EXPECT_EQ(record->generation, 1u);
  EXPECT_FALSE(Judge(*record, ipc::CrashHints{}, kSession).blamed);
  EXPECT_NE(record->Describe().find("no longer known"), std::string::npos);
}

// A plugin whose device initialises slowly sets its own start timeout;
// an open waits for the recovery that timeout implies.
TEST(SupervisorStartTimeoutTest, TheManifestsStartTimeoutOverridesTheHosts) {
  BackendManifest manifest;
  manifest.name = "slow";
  manifest.restart.backoff_max = milliseconds(40);
  SupervisorOptions options;
  options.spawn_timeout = milliseconds(10'000);
  auto env = std::make_shared<FakeSupervisorEnv>();
  EXPECT_EQ(Supervisor(manifest, env, options).RecoveryWait(), milliseconds(2 * 10'000 + 40 + 1'000));
  manifest.start_timeout = std::chrono::seconds(40);
  EXPECT_EQ(Supervisor(manifest, env, options).RecoveryWait(), milliseconds(2 * 40'000 + 40 + 1'000));
}

TEST_F(SupervisorTest, NothingStartsBeforeFirstUse) {
  Make();
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 0);
  EXPECT_EQ(env_->watches(), 0);
  EXPECT_EQ(supervisor_->Status().state, BackendState::kDiscovered);
}

TEST_F(SupervisorTest, FirstUseStartsTheBackendAndWatchesIt) {
  Make();
  absl::StatusOr<BackendHandle> pending = AcquireNow();
  EXPECT_EQ(pending.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(supervisor_->Status().state, BackendState::kSpawning);
  supervisor_->RunDueWorkForTest();
  absl::StatusOr<BackendHandle> handle = AcquireNow();
  ASSERT_TRUE(handle.ok()) << handle.status();
  EXPECT_EQ(handle->generation, 1u);
  EXPECT_EQ(env_->starts(), 1);
  EXPECT_EQ(env_->watches(), 1);
  // Whether an open is in vendor code is what the child's control region says.
  EXPECT_FALSE(supervisor_->Status().control_call_in_vendor_code);
  ipc::CrashHints in_open;
  in_open.in_call = 1;
  in_open.call_token = 7;
  Current()->SetControlCrashHints(in_open);
  EXPECT_TRUE(supervisor_->Status().control_call_in_vendor_code);
  Current()->SetControlCrashHints({});
  EXPECT_FALSE(supervisor_->Status().control_call_in_vendor_code);
}

TEST_F(SupervisorTest, ACrashRestartsAtOnceAndIsRecorded) {
  Make();
  StartReady();
  env_->Exit(Current(), kSegv);
  SupervisorStatus st = supervisor_->Status();
  EXPECT_EQ(st.state, BackendState::kRestarting);
  ASSERT_TRUE(st.last_exit.has_value());
  EXPECT_EQ(st.last_exit->generation, 1u);
  EXPECT_EQ(st.last_exit->Describe(), "killed by signal 11 (SIGSEGV)");
  supervisor_->RunDueWorkForTest();  // no time passes: the first restart is immediate
  st = supervisor_->Status();
  EXPECT_EQ(st.state, BackendState::kReady);
  EXPECT_EQ(st.generation, 2u);
  EXPECT_EQ(st.restarts, 1u);
  EXPECT_EQ(env_->starts(), 2);
  // A session that saw generation 1 fail learns how it ended.
  absl::StatusOr<DeathRecord> record =
      supervisor_->ReportFailure(1, kSession, false, "hung up", ipc::Clock::now() + std::chrono::seconds(1));
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_FALSE(record->killed_by_supervisor);
  EXPECT_EQ(record->exit.code, SIGSEGV);
}

TEST_F(SupervisorTest, LaterCrashesBackOffOnTheClock) {
  Make();
  StartReady();
  env_->Exit(Current(), kSegv);
  supervisor_->RunDueWorkForTest();
  env_->Exit(Current(), kSegv);  // the second crash in the window waits 10 ms
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(supervisor_->Status().state, BackendState::kRestarting);
  EXPECT_EQ(env_->starts(), 2);
  env_->Advance(milliseconds(9));
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 2);
  env_->Advance(milliseconds(1));
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 3);
  EXPECT_EQ(supervisor_->Status().state, BackendState::kReady);
  env_->Exit(Current(), kSegv);  // the third: 20 ms
  env_->Advance(milliseconds(19));
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 3);
  env_->Advance(milliseconds(1));
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 4);
}

TEST_F(SupervisorTest, TooManyCrashesQuarantineUntilReset) {
  Make();
  StartReady();
  for (int crash = 1; crash <= 3; ++crash) {
    env_->Exit(Current(), kSegv);
    env_->Advance(milliseconds(40));
    supervisor_->RunDueWorkForTest();
    ASSERT_EQ(supervisor_->Status().state, BackendState::kReady) << crash;
  }
  env_->Exit(Current(), kSegv);  // the fourth within the window
  EXPECT_EQ(supervisor_->Status().state, BackendState::kQuarantined);
  env_->Advance(milliseconds(10'000));
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 4);  // not restarted
  absl::StatusOr<BackendHandle> handle = AcquireNow();
  EXPECT_EQ(handle.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(handle.status().message().find("quarantined after 4 crashes within 60 s (last: killed by signal 11"),
            std::string::npos)
      << handle.status();
  EXPECT_NE(handle.status().message().find("codecvisor.backends.reset(\"fake\")"), std::string::npos);
  supervisor_->Reset();
  StartReady();
  EXPECT_EQ(env_->starts(), 5);
}

// A burst of deaths (an OOM storm, kills from outside) quarantines the
// backend for a minute, not for the rest of a long job: the first request
// after that starts it again with the budget whole; the next crash loop
// before it heals quarantines it for twice as long.
TEST_F(SupervisorTest, AQuarantineEndsAfterItsTime) {
  Make();
  StartReady();
  Crashes(4);
  ASSERT_EQ(supervisor_->Status().state, BackendState::kQuarantined);
  absl::StatusOr<BackendHandle> handle = AcquireNow();
  EXPECT_NE(handle.status().message().find("the next request after 60 s starts it again"), std::string::npos)
      << handle.status();
  env_->Advance(milliseconds(59'000));
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(AcquireNow().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(env_->starts(), 4);
  env_->Advance(milliseconds(1'000));
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 4) << "started only when asked for";
  StartReady();
  EXPECT_EQ(env_->starts(), 5);
  EXPECT_EQ(supervisor_->Status().state, BackendState::kReady);
  Crashes(4);
  ASSERT_EQ(supervisor_->Status().state, BackendState::kQuarantined);
  EXPECT_NE(AcquireNow().status().message().find("after 120 s"), std::string::npos);
}

// The start that ends a quarantine is a restart: one that fails (the
// machine still short of memory) is retried and counted as a crash, never
// the `failed` of a library that cannot load.
TEST_F(SupervisorTest, AFailedStartAfterAQuarantineIsARestartThatFailed) {
  Make();
  StartReady();
  Crashes(4);
  ASSERT_EQ(supervisor_->Status().state, BackendState::kQuarantined);
  env_->Advance(milliseconds(60'000));
  env_->FailNextStarts({absl::ResourceExhaustedError("out of memory")});
  EXPECT_FALSE(AcquireNow().ok());
  EXPECT_EQ(supervisor_->Status().state, BackendState::kRestarting);
  supervisor_->RunDueWorkForTest();  // the failed start, then its retry at once (a first crash)
  EXPECT_EQ(supervisor_->Status().state, BackendState::kReady);
  EXPECT_EQ(env_->starts(), 6);
}

TEST_F(SupervisorTest, EnoughSuccessesInARowMakeTheBudgetWhole) {
  Make();
  StartReady();
  for (int crash = 1; crash <= 10; ++crash) {
    env_->Exit(Current(), kSegv);
    supervisor_->RunDueWorkForTest();  // always the first crash of a quiet period: immediate
    ASSERT_EQ(supervisor_->Status().state, BackendState::kReady) << crash;
    Served(RestartLimits{}.heal_after_successes);
  }
  EXPECT_EQ(env_->starts(), 11);
}

// A success recorded once the child's death is (a reply it sent just
// before it died, read late) does not count toward making the budget whole.
TEST_F(SupervisorTest, ASuccessOfADeadGenerationDoesNotHeal) {
  Make();
  StartReady();
  for (int crash = 1; crash <= 3; ++crash) {
    const uint64_t generation = supervisor_->Status().generation;
    env_->Exit(Current(), kSegv);
    // Recorded once the death is: before the restart...
    for (int i = 0; i < RestartLimits{}.heal_after_successes; ++i) supervisor_->RecordSuccess(generation);
    env_->Advance(milliseconds(100));
    supervisor_->RunDueWorkForTest();
    ASSERT_EQ(supervisor_->Status().state, BackendState::kReady) << crash;
    // ...and after it.
    for (int i = 0; i < RestartLimits{}.heal_after_successes; ++i) supervisor_->RecordSuccess(generation);
  }
  env_->Exit(Current(), kSegv);
  EXPECT_EQ(supervisor_->Status().state, BackendState::kQuarantined);
}

// A backend that crashes on every other request, each replay succeeding,
// never serves enough requests in a row to heal: the fourth crash within
// the window quarantines it, as if it crashed on every request.
TEST_F(SupervisorTest, ABackendThatCrashesOnEveryOtherRequestIsQuarantined) {
  Make();
  StartReady();
  for (int crash = 1; crash <= 3; ++crash) {
    env_->Exit(Current(), kSegv);
    env_->Advance(milliseconds(100));
    supervisor_->RunDueWorkForTest();
    ASSERT_EQ(supervisor_->Status().state, BackendState::kReady) << crash;
    Served(2);  // the replay and the next request
  }
  env_->Exit(Current(), kSegv);
  EXPECT_EQ(supervisor_->Status().state, BackendState::kQuarantined);
  absl::StatusOr<BackendHandle> handle = AcquireNow();
  EXPECT_NE(handle.status().message().find("quarantined after 4 crashes within 60 s"), std::string::npos)
      << handle.status();
  EXPECT_EQ(env_->starts(), 4);
}

// 3 crashes a minute allowed; a poison request is two crashes. Judged
// poison one after another, their crashes leave the budget, so a run of bad
// files does not quarantine the backend; a crash after two verdicts in a
// row (max_poison_in_a_row 2) with no success between does.
TEST_F(SupervisorTest, PoisonRequestsLeaveTheBudgetUntilTooManyInARow) {
  MakeWithPoisonLimit(2);
  StartReady();
  for (int round = 0; round < 2; ++round) {
    for (int request = 0; request < 2; ++request) {
      const std::vector<uint64_t> generations = KilledTwiceByARequest();
      ASSERT_EQ(supervisor_->Status().state, BackendState::kReady) << round << ", " << request;
      supervisor_->RecordPoison(generations);
    }
    if (round == 0) Served();  // a good file between the runs
  }
  env_->Exit(Current(), kSegv);  // after two verdicts in a row
  EXPECT_EQ(supervisor_->Status().state, BackendState::kQuarantined);
  absl::StatusOr<BackendHandle> handle = AcquireNow();
  EXPECT_NE(handle.status().message().find(
                "quarantined: it crashed again once 2 requests or opens in a row within 60 s were poison"),
            std::string::npos)
      << handle.status();
  EXPECT_EQ(env_->starts(), 9);
}

// Verdicts older than the window no longer count toward the limit: poison
// files far apart (a dataset probed over hours) never quarantine.
TEST_F(SupervisorTest, PoisonVerdictsLeaveTheLimitWithTheWindow) {
  MakeWithPoisonLimit(2);
  StartReady();
  for (int request = 0; request < 6; ++request) {
    const std::vector<uint64_t> generations = KilledTwiceByARequest();
    ASSERT_EQ(supervisor_->Status().state, BackendState::kReady) << request;
    supervisor_->RecordPoison(generations);
    env_->Advance(milliseconds(40'000));  // two verdicts never fall within one window
  }
}

TEST_F(SupervisorTest, AFirstStartThatFailsIsNotRetried) {
  Make();
  env_->FailNextStarts({absl::NotFoundError("library libfake.so: cannot open shared object file")});
  ASSERT_FALSE(AcquireNow().ok());
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(supervisor_->Status().state, BackendState::kFailed);
  absl::StatusOr<BackendHandle> handle = AcquireNow();
  EXPECT_EQ(handle.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(handle.status().message().find("libfake.so"), std::string::npos);
  env_->Advance(milliseconds(60'000));
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 1);
  supervisor_->Reset();
  StartReady();
  EXPECT_EQ(env_->starts(), 2);
}

// A caller whose deadline passes while the first start is under way (a
// plugin's create() that never returns, a short open timeout) is told what
// the start is doing and when it gives up, not only that it is late.
TEST_F(SupervisorTest, ACallerLeftWaitingForAStartIsToldWhatItWaitsFor) {
  Make();
  absl::StatusOr<BackendHandle> handle = AcquireNow();  // the start is now due, and not run
  ASSERT_EQ(handle.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(handle.status().message().find("backend 'fake' is spawning and was not ready in time (its start is "
                                           "sandboxing it, loading the plugin's library and running its create(); "
                                           "each attempt gives up after 10000 ms: [restart] start_timeout_seconds in its manifest)"),
            std::string::npos)
      << handle.status();
}

// A first start that died (an outside kill) or answered late (a loaded
// machine) once failed the backend for the life of the process.
TEST_F(SupervisorTest, AFirstStartThatDiedOrWasLateIsRetried) {
  for (const absl::Status& failure : {absl::UnavailableError("runner killed by signal 9 (SIGKILL) while starting"),
                                      absl::DeadlineExceededError("timed out waiting for a response")}) {
    Make();
    const int starts = env_->starts();
    env_->FailNextStarts({failure});
    ASSERT_FALSE(AcquireNow().ok());
    supervisor_->RunDueWorkForTest();  // the first crash of a quiet period restarts at once
    EXPECT_EQ(supervisor_->Status().state, BackendState::kReady) << failure;
    EXPECT_TRUE(AcquireNow().ok()) << failure;
    EXPECT_EQ(env_->starts() - starts, 2) << failure;
  }
}

// Once: a start that dies every time (a plugin crashing in its
// constructor, a seccomp kill as it loads) is the plugin's, and running it
// again and again would only repeat that.
TEST_F(SupervisorTest, AFirstStartThatDiesTwiceFails) {
  Make();
  const int starts = env_->starts();
  env_->FailNextStarts({absl::UnavailableError("runner killed by signal 6 (SIGABRT) while starting"),
                        absl::UnavailableError("runner killed by signal 6 (SIGABRT) while starting")});
  ASSERT_FALSE(AcquireNow().ok());
  for (int i = 0; i < 4; ++i) {
    supervisor_->RunDueWorkForTest();
    env_->Advance(milliseconds(5'000));
  }
  EXPECT_EQ(supervisor_->Status().state, BackendState::kFailed);
  absl::StatusOr<BackendHandle> handle = AcquireNow();
  EXPECT_EQ(handle.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(handle.status().message().find("SIGABRT"), std::string::npos) << handle.status();
  EXPECT_EQ(env_->starts() - starts, 2);
  // A reset gives the next first start its retry again.
  supervisor_->Reset();
  env_->FailNextStarts({absl::DeadlineExceededError("timed out waiting for a response")});
  ASSERT_FALSE(AcquireNow().ok());
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(supervisor_->Status().state, BackendState::kReady);
}

TEST_F(SupervisorTest, AFailedRestartCountsAsACrash) {
  Make();
  StartReady();
  env_->FailNextStarts({absl::DeadlineExceededError("handshake late"), absl::DeadlineExceededError("handshake late"),
                        absl::DeadlineExceededError("handshake late")});
  env_->Exit(Current(), kSegv);
  supervisor_->RunDueWorkForTest();  // immediate restart fails; the next waits 10 ms
  EXPECT_EQ(supervisor_->Status().state, BackendState::kRestarting);
  EXPECT_EQ(env_->starts(), 2);
  env_->Advance(milliseconds(10));
  supervisor_->RunDueWorkForTest();  // fails; the next waits 20 ms
  EXPECT_EQ(env_->starts(), 3);
  env_->Advance(milliseconds(20));
  supervisor_->RunDueWorkForTest();  // fails: four crashes in the window
  EXPECT_EQ(env_->starts(), 4);
  SupervisorStatus st = supervisor_->Status();
  EXPECT_EQ(st.state, BackendState::kQuarantined);
  EXPECT_NE(st.diagnostic.find("crashes or failed restarts"), std::string::npos) << st.diagnostic;
  EXPECT_NE(st.diagnostic.find("handshake late"), std::string::npos) << st.diagnostic;
}

}  // namespace
}  // namespace codecvisor
