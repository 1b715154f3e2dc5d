// Faults on the fake env of core/supervisor_test_fixture.h: hangs and
// missed heartbeats, which session is blamed for a fault, OOM kills, poison
// requests and the replay bound (judged by core/blame.h on the
// DeathRecords the supervisor writes), warm spares, shutdown.

#include <gtest/gtest.h>
#include <signal.h>

#include "core/blame.h"
#include "core/restart_policy.h"
#include "core/supervisor.h"
#include "core/supervisor_test_fixture.h"

namespace codecvisor {
namespace {

using supervisor_testing::SupervisorTest;
using supervisor_testing::kSegv;
using supervisor_testing::kSession;
using supervisor_testing::kOtherSession;
using std::chrono::milliseconds;

TEST_F(SupervisorTest, AHangKillsTheChildAndBlamesOnlyTheReportingSession) {
  Make();
  StartReady();
  absl::StatusOr<DeathRecord> record = ReportHang(1, kSession);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(env_->child(1)->kills(), 1);
  EXPECT_TRUE(record->killed_by_supervisor);
  EXPECT_EQ(record->Describe(), "killed by codecvisor: no answer within 30000 ms");
  EXPECT_TRUE(Judge(*record, {}, kSession).blamed);
  EXPECT_FALSE(Judge(*record, {}, kOtherSession).blamed);
  // The other session, reporting the same generation later, gets the same
  // record and kills nothing more.
  absl::StatusOr<DeathRecord> other =
      supervisor_->ReportFailure(1, kOtherSession, true, "hung up", ipc::Clock::now() + std::chrono::seconds(1));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->blamed_session, kSession);
  EXPECT_EQ(env_->child(1)->kills(), 1);
}

TEST_F(SupervisorTest, AChildThatDiedBeforeTheReportIsNotKilled) {
  Make();
  StartReady();
  env_->Exit(Current(), kSegv);
  absl::StatusOr<DeathRecord> record =
      supervisor_->ReportFailure(1, kSession, true, "malformed message", ipc::Clock::now() + std::chrono::seconds(1));
  ASSERT_TRUE(record.ok());
  EXPECT_FALSE(record->killed_by_supervisor);
  EXPECT_EQ(env_->child(1)->kills(), 0);
}

TEST_F(SupervisorTest, AMissedHeartbeatKillsTheChild) {
  Make(/*warm_spare=*/false, /*heartbeat=*/milliseconds(2'000));
  StartReady();
  Current()->SetPingStatus(absl::DeadlineExceededError("no pong"));
  env_->Advance(milliseconds(1'999));
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(Current()->kills(), 0);  // not due yet
  env_->Advance(milliseconds(1));
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(Current()->kills(), 1);
  env_->DeliverKills();
  SupervisorStatus st = supervisor_->Status();
  ASSERT_TRUE(st.last_exit.has_value());
  EXPECT_TRUE(st.last_exit->killed_by_supervisor);
  EXPECT_EQ(st.last_exit->blamed_session, 0u);  // no request is to blame
  EXPECT_EQ(st.last_exit->Describe(), "killed by codecvisor: no answer to a heartbeat: no pong");
}

TEST_F(SupervisorTest, AnAnsweredHeartbeatKillsNothing) {
  Make(/*warm_spare=*/false, /*heartbeat=*/milliseconds(2'000));
  StartReady();
  for (int i = 0; i < 5; ++i) {
    env_->Advance(milliseconds(2'000));
    supervisor_->RunDueWorkForTest();
  }
  EXPECT_EQ(Current()->kills(), 0);
  EXPECT_EQ(supervisor_->Status().state, BackendState::kReady);
}

// A backend with no decoder on it that keeps using CPU (a plugin whose
// threads run on after its sessions closed) is stopped once it has done so
// for IdleCpuWatch::kWindow; with a decoder on it, however busy, never.
TEST_F(SupervisorTest, ABackendUsingCpuWithNoDecoderOnItIsStopped) {
  Make(/*warm_spare=*/false, /*heartbeat=*/milliseconds(2'000));
  StartReady();
  std::chrono::nanoseconds cpu{0};
  auto heartbeat = [&](std::chrono::nanoseconds used) {
    cpu += used;
    Current()->SetCpuTime(cpu);
    env_->Advance(milliseconds(2'000));
    supervisor_->RunDueWorkForTest();
  };
  supervisor_->SessionOpened();
  for (int i = 0; i < 10; ++i) heartbeat(std::chrono::seconds(4));  // decoding on two cores
  EXPECT_EQ(Current()->kills(), 0);
  supervisor_->SessionClosed();
  for (int i = 0; i < 5; ++i) heartbeat(std::chrono::seconds(2));  // a core, idle: 8 s of the window
  EXPECT_EQ(Current()->kills(), 0);
  heartbeat(std::chrono::seconds(2));
  EXPECT_EQ(Current()->kills(), 1);
  env_->DeliverKills();
  SupervisorStatus st = supervisor_->Status();
  ASSERT_TRUE(st.last_exit.has_value());
  EXPECT_TRUE(st.last_exit->killed_by_supervisor);
  EXPECT_EQ(st.last_exit->blamed_session, 0u);
  EXPECT_EQ(st.last_exit->Describe(),
            "killed by codecvisor: used 10.0 s of CPU in 10.0 s with no decoder open on it (its threads kept running "
            "after its sessions closed): stopped");
}

TEST_F(SupervisorTest, AnIdleBackendUsingLittleCpuIsLeftRunning) {
  Make(/*warm_spare=*/false, /*heartbeat=*/milliseconds(2'000));
  StartReady();
  std::chrono::nanoseconds cpu{0};
  for (int i = 0; i < 30; ++i) {
    cpu += milliseconds(200);  // a tenth of a core: a driver's polling thread
    Current()->SetCpuTime(cpu);
    env_->Advance(milliseconds(2'000));
    supervisor_->RunDueWorkForTest();
  }
  EXPECT_EQ(Current()->kills(), 0);
  EXPECT_EQ(supervisor_->Status().state, BackendState::kReady);
}

// A warm spare never has a decoder: one whose plugin's threads spin from
// its start is stopped after the same window, and no spare is started
// again (its plugin would spin in each); the backend in use is left alone.
TEST_F(SupervisorTest, AWarmSpareUsingCpuIsStoppedAndNotReplaced) {
  FakeChild* spare = StartWithSpare();
  ASSERT_TRUE(supervisor_->Status().spare_ready);
  std::chrono::nanoseconds cpu{0};
  for (int i = 0; i < 5; ++i) HeartbeatUsing(spare, &cpu, std::chrono::seconds(2));  // a core
  EXPECT_EQ(spare->kills(), 0) << "after 8 s of the window";
  HeartbeatUsing(spare, &cpu, std::chrono::seconds(2));
  EXPECT_EQ(spare->kills(), 1);
  EXPECT_EQ(supervisor_->Status().spare_stopped,
            "its warm spare used 10.0 s of CPU in 10.0 s with no decoder open on it: stopped, and no spare is kept "
            "for it again");
  env_->DeliverKills();
  EXPECT_TRUE(spare->shut_down());
  EXPECT_FALSE(supervisor_->Status().spare_ready);
  for (int i = 0; i < 10; ++i) {
    env_->Advance(milliseconds(2'000));
    supervisor_->RunDueWorkForTest();
  }
  EXPECT_EQ(env_->starts(), 2);
  EXPECT_FALSE(supervisor_->Status().spare_ready);
  EXPECT_EQ(env_->child(1)->kills(), 0);  // the backend in use (idle, using no CPU)
  EXPECT_EQ(supervisor_->Status().state, BackendState::kReady);
  EXPECT_EQ(supervisor_->Status().restarts, 0u);
}

// The backend in use dying after the spare was killed and before its exit:
// the restart starts cold, it does not promote the dying spare (which came
// back as current, and its exit as a second crash).
TEST_F(SupervisorTest, AKilledSpareIsNeverPromoted) {
  FakeChild* spare = StartWithSpare();
  std::chrono::nanoseconds cpu{0};
  while (spare->kills() == 0 && cpu < std::chrono::seconds(60)) HeartbeatUsing(spare, &cpu, std::chrono::seconds(2));
  ASSERT_EQ(spare->kills(), 1);
  env_->Exit(env_->child(1), kSegv);  // before the spare's exit
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 3) << "the restart took the killed spare";
  EXPECT_EQ(supervisor_->Status().pid, 1000 + env_->child(3)->serial());
  env_->DeliverKills();
  EXPECT_TRUE(spare->shut_down());
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(supervisor_->Status().restarts, 1u);
  EXPECT_EQ(supervisor_->Status().state, BackendState::kReady);
}

// A spare using little CPU (a driver's polling thread) is kept.
TEST_F(SupervisorTest, AWarmSpareUsingLittleCpuIsKept) {
  FakeChild* spare = StartWithSpare();
  std::chrono::nanoseconds cpu{0};
  for (int i = 0; i < 30; ++i) HeartbeatUsing(spare, &cpu, milliseconds(200));
  EXPECT_EQ(spare->kills(), 0);
  EXPECT_TRUE(supervisor_->Status().spare_ready);
}

TEST_F(SupervisorTest, AFaultInAnOpenNamesItsCulprit) {
  Make();
  StartReady();
  ipc::CrashHints control;
  control.in_call = 1;
  control.fault_signal = SIGSEGV;
  Current()->SetControlCrashHints(control);
  env_->Exit(Current(), kSegv);  // a fault's signal is forced: even the init of a pid namespace dies of it
  DeathRecord death = *supervisor_->Status().last_exit;
  EXPECT_TRUE(death.culprit_recorded);
  EXPECT_EQ(death.suspects, 1);
  EXPECT_EQ(death.recorded_signal, static_cast<uint32_t>(SIGSEGV));
  EXPECT_EQ(death.Describe(), "killed by signal 11 (SIGSEGV)");
}

TEST_F(SupervisorTest, AStrayFaultNamesNoCulprit) {
  Make();
  StartReady();
  ipc::CrashHints control;
  control.stray_fault_signal = SIGSEGV;  // a plugin's own thread
  Current()->SetControlCrashHints(control);
  env_->Exit(Current(), kSegv);
  DeathRecord death = *supervisor_->Status().last_exit;
  EXPECT_FALSE(death.culprit_recorded);
  EXPECT_EQ(death.suspects, 0);
  EXPECT_EQ(death.recorded_signal, static_cast<uint32_t>(SIGSEGV));
}

TEST_F(SupervisorTest, AnOomKillIsNamedAndBlamesNobody) {
  Make();
  StartReady();
  Current()->SetOomKilled(true);
  env_->Exit(Current(), ExitStatus{true, SIGKILL});
  DeathRecord death = *supervisor_->Status().last_exit;
  EXPECT_TRUE(death.oom_killed);
  EXPECT_NE(death.Describe().find("out of memory"), std::string::npos) << death.Describe();
  ipc::CrashHints in_call;
  in_call.in_call = 1;
  EXPECT_FALSE(Judge(death, in_call, kSession).blamed);
}

// Poison: a request whose hang kills the backend twice fails with kAborted;
// the restarts go on for everyone else.
TEST_F(SupervisorTest, ARequestThatHangsTheBackendTwiceIsPoison) {
  Make();
  StartReady();
  Replays replays(milliseconds(30'000));
  const Replays::Words words{"frame indices [3]", "serving frame indices [3]", "; poison"};
  for (uint64_t generation = 1; generation <= 2; ++generation) {
    absl::StatusOr<DeathRecord> death = ReportHang(generation, kSession);
    ASSERT_TRUE(death.ok()) << death.status();
    absl::Status verdict = replays.AfterDeath(Judge(*death, {}, kSession), *death, words, env_->Now());
    if (generation == 1) {
      EXPECT_TRUE(verdict.ok()) << verdict;
      supervisor_->RunDueWorkForTest();
    } else {
      EXPECT_EQ(verdict.code(), absl::StatusCode::kAborted);
      EXPECT_EQ(verdict.message(),
                "frame indices [3] killed the backend twice (killed by codecvisor: no answer within 30000 ms; "
                "then killed by codecvisor: no answer within 30000 ms); poison");
    }
  }
  env_->Advance(milliseconds(10));
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(supervisor_->Status().state, BackendState::kReady);
}

// Bystanders: a fault on a plugin thread with two requests inside vendor
// code blames neither; each replays alone, and the one that is then alone
// at the next such death is blamed.
TEST_F(SupervisorTest, SuspectsOfAStrayFaultReplayAloneAndOnlyALoneOneIsBlamed) {
  Make();
  StartReady();
  env_->Exit(Current(), kSegv);
  DeathRecord shared = *supervisor_->Status().last_exit;
  shared.suspects = 2;  // what two session channels inside vendor code would add
  ipc::CrashHints inside;
  inside.in_call = 1;
  const RequestBlame first = Judge(shared, inside, kSession);
  EXPECT_FALSE(first.blamed);
  EXPECT_TRUE(first.replay_alone);
  DeathRecord alone = shared;
  alone.suspects = 1;
  const RequestBlame second = Judge(alone, inside, kSession);
  EXPECT_TRUE(second.blamed);
  EXPECT_TRUE(second.replay_alone);
  EXPECT_FALSE(Judge(alone, {}, kOtherSession).blamed);  // not inside: a bystander
}

// The replay bound: deaths that blame nobody are replayed, but one request
// gives up four of its timeouts after the first death, even while other
// sessions' successes (enough in a row between deaths) keep the restart
// budget whole.
TEST_F(SupervisorTest, ARequestWhoseBackendKeepsBeingKilledGivesUpAtTheBound) {
  Make();
  StartReady();
  Replays replays(milliseconds(1'000));
  const Replays::Words words{"frame indices [0]", "serving frame indices [0]", ""};
  absl::Status verdict;
  int deaths = 0;
  while (verdict.ok() && deaths < 100) {
    env_->Exit(Current(), ExitStatus{true, SIGKILL});  // from outside
    ++deaths;
    DeathRecord death = *supervisor_->Status().last_exit;
    verdict = replays.AfterDeath(Judge(death, {}, kSession), death, words, env_->Now());
    env_->Advance(milliseconds(500));
    supervisor_->RunDueWorkForTest();
    ASSERT_EQ(supervisor_->Status().state, BackendState::kReady);
    Served(RestartLimits{}.heal_after_successes);  // other sessions' requests
  }
  EXPECT_EQ(deaths, 9);  // deaths at 0, 0.5, ..., 4 s: the one at 4 s is past the bound
  EXPECT_EQ(verdict.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(verdict.message().find("the backend died 9 times in 4000 ms while serving frame indices [0]"),
            std::string::npos)
      << verdict;
}

// With a spare started beside it, a warm failover's replay came twice as
// late: a spare waits for the child it would replace to serve a request...
TEST_F(SupervisorTest, AWarmSpareStartsOnceTheBackendHasServedARequest) {
  Make(/*warm_spare=*/true);
  StartReady();
  EXPECT_EQ(env_->starts(), 1);
  EXPECT_FALSE(supervisor_->Status().spare_ready);
  Served();
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 2);
  EXPECT_TRUE(supervisor_->Status().spare_ready);
  EXPECT_EQ(env_->watches(), 2);
}

// ...or for 250 ms after it started, whichever comes first.
TEST_F(SupervisorTest, AWarmSpareTakesOverWithoutAColdStart) {
  Make(/*warm_spare=*/true);
  StartReady();
  env_->Advance(milliseconds(249));
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 1);  // not due yet
  env_->Advance(milliseconds(1));
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 2);
  EXPECT_TRUE(supervisor_->Status().spare_ready);
  FakeChild* spare = env_->child(2);
  env_->Exit(env_->child(1), kSegv);
  supervisor_->RunDueWorkForTest();  // the spare becomes current
  absl::StatusOr<BackendHandle> handle = AcquireNow();
  ASSERT_TRUE(handle.ok());
  EXPECT_EQ(handle->process->pid(), 1000 + spare->serial());
  EXPECT_EQ(handle->generation, 2u);
  EXPECT_EQ(env_->starts(), 2);  // the next spare waits for the replay
  EXPECT_FALSE(supervisor_->Status().spare_ready);
  supervisor_->RecordSuccess(1);  // a late word from the dead child
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 2);
  Served();  // the replay
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 3);
  EXPECT_TRUE(supervisor_->Status().spare_ready);
}

TEST_F(SupervisorTest, ADeadSpareIsReplacedUntilThreeFail) {
  Make(/*warm_spare=*/true);
  StartReady();
  Served();
  supervisor_->RunDueWorkForTest();
  env_->Exit(env_->child(2), kSegv);  // the spare dies
  EXPECT_EQ(supervisor_->Status().state, BackendState::kReady);  // the backend is untouched
  EXPECT_TRUE(env_->child(2)->shut_down());
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 3);
  env_->FailNextStarts({absl::InternalError("spare 1"), absl::InternalError("spare 2")});
  env_->Exit(env_->child(3), kSegv);  // one failure...
  supervisor_->RunDueWorkForTest();   // ...and two failed starts: no more spares
  EXPECT_EQ(env_->starts(), 5);
  EXPECT_FALSE(supervisor_->Status().spare_ready);
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 5);
}

// A spare whose exit cannot be watched is not kept, and counts as a failed
// spare: three in a row end spares, where each was started again at once.
TEST_F(SupervisorTest, SparesWhoseExitCannotBeWatchedStopAfterThree) {
  Make(/*warm_spare=*/true);
  StartReady();
  Served();
  env_->FailNextWatches(10);
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 4);  // three spares, each shut down
  EXPECT_FALSE(supervisor_->Status().spare_ready);
  EXPECT_TRUE(env_->child(2)->shut_down() && env_->child(3)->shut_down() && env_->child(4)->shut_down());
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 4);
  EXPECT_EQ(supervisor_->Status().state, BackendState::kReady);
}

TEST_F(SupervisorTest, ShutdownStopsEveryChildAndEveryWatch) {
  Make(/*warm_spare=*/true);
  StartReady();
  Served();
  supervisor_->RunDueWorkForTest();
  supervisor_->Shutdown();
  EXPECT_TRUE(env_->child(1)->shut_down());
  EXPECT_TRUE(env_->child(2)->shut_down());
  EXPECT_EQ(env_->watches(), 0);
  EXPECT_EQ(AcquireNow().status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace codecvisor
