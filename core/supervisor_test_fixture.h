// File: core/supervisor_test_fixture.h
//
// The supervision state machine on a fake env (core/fake_supervisor_env.h):
// every child, death and tick of the clock is the test's, so each case is
// deterministic and takes microseconds. Shared by supervisor_test.cc
// (starts, restarts and their budget) and supervisor_fault_test.cc (hangs,
// heartbeats, culprits, poison, spares, shutdown).

#ifndef CODECVISOR_CORE_SUPERVISOR_TEST_FIXTURE_H_
#define CODECVISOR_CORE_SUPERVISOR_TEST_FIXTURE_H_

#include <signal.h>

#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/fake_supervisor_env.h"
#include "core/supervisor.h"

namespace codecvisor::supervisor_testing {

using std::chrono::milliseconds;

inline constexpr ExitStatus kSegv{true, SIGSEGV};
inline constexpr uint64_t kSession = 7;
inline constexpr uint64_t kOtherSession = 8;

class SupervisorTest : public ::testing::Test {
 protected:
  // max_restarts 3 in 60 s; backoff 10 ms doubling up to 40 ms.
  void Make(bool warm_spare = false, milliseconds heartbeat = milliseconds(0)) {
    BackendManifest manifest;
    manifest.name = "fake";
    manifest.path = "/backends/fake.toml";
    manifest.restart = {3, milliseconds(60'000), milliseconds(10), milliseconds(40)};
    SupervisorOptions options;
    options.heartbeat_interval = heartbeat;
    options.warm_spare = warm_spare;
    supervisor_ = std::make_unique<Supervisor>(manifest, env_, options);
  }

  // As Make(), allowing `max_poison_in_a_row` poison verdicts in a row.
  void MakeWithPoisonLimit(int max_poison_in_a_row) {
    BackendManifest manifest;
    manifest.name = "fake";
    manifest.path = "/backends/fake.toml";
    manifest.restart = {3, milliseconds(60'000), milliseconds(10), milliseconds(40), max_poison_in_a_row};
    supervisor_ = std::make_unique<Supervisor>(manifest, env_, SupervisorOptions{});
  }

  // The child dies `deaths` times, 40 ms apart, each restart run when
  // due; returns the generations that died.
  std::vector<uint64_t> Crashes(int deaths) {
    std::vector<uint64_t> generations;
    for (int death = 0; death < deaths; ++death) {
      generations.push_back(supervisor_->Status().generation);
      env_->Exit(Current(), kSegv);
      env_->Advance(milliseconds(40));
      supervisor_->RunDueWorkForTest();
    }
    return generations;
  }

  // The child dies twice, restarted each time, as under a poison request;
  // returns the generations that died (the verdict's, for RecordPoison).
  std::vector<uint64_t> KilledTwiceByARequest() { return Crashes(2); }

  // Acquire without waiting: the fake env runs no thread that could change
  // anything meanwhile.
  absl::StatusOr<BackendHandle> AcquireNow() { return supervisor_->Acquire(ipc::Clock::now()); }

  // Starts the backend as a first request would.
  void StartReady() {
    ASSERT_FALSE(AcquireNow().ok());  // first use: the start is now due
    supervisor_->RunDueWorkForTest();
    ASSERT_EQ(supervisor_->Status().state, BackendState::kReady);
  }

  // The current child served `requests` requests (RecordSuccess).
  void Served(int requests = 1) {
    for (int i = 0; i < requests; ++i) supervisor_->RecordSuccess(supervisor_->Status().generation);
  }

  // A supervisor with a warm spare kept and heartbeats every 2 s; returns
  // the spare.
  FakeChild* StartWithSpare() {
    Make(/*warm_spare=*/true, /*heartbeat=*/milliseconds(2'000));
    StartReady();
    Served();
    supervisor_->RunDueWorkForTest();
    return env_->child(2);
  }

  // Two seconds on, a heartbeat's interval, in which `child` used `used`
  // of CPU (its total in `*cpu`).
  void HeartbeatUsing(FakeChild* child, std::chrono::nanoseconds* cpu, std::chrono::nanoseconds used) {
    *cpu += used;
    child->SetCpuTime(*cpu);
    env_->Advance(milliseconds(2'000));
    supervisor_->RunDueWorkForTest();
  }

  // The current child, by the serial of the env's last start.
  FakeChild* Current() { return env_->child(env_->children()); }

  // Reports a failure from `session` on a separate thread (it waits for the
  // child to die), delivers the supervisor's kill, and returns the record.
  absl::StatusOr<DeathRecord> ReportHang(uint64_t generation, uint64_t session) {
    absl::StatusOr<DeathRecord> record = absl::UnknownError("not reported");
    FakeChild* child = Current();
    std::thread reporter([&] {
      record = supervisor_->ReportFailure(generation, session, true, "no answer within 30000 ms",
                                          ipc::Clock::now() + std::chrono::seconds(30));
    });
    while (child->kills() == 0) std::this_thread::yield();
    env_->DeliverKills();
    reporter.join();
    return record;
  }

  std::shared_ptr<FakeSupervisorEnv> env_ = std::make_shared<FakeSupervisorEnv>();
  std::unique_ptr<Supervisor> supervisor_;
};

}  // namespace codecvisor::supervisor_testing

#endif  // CODECVISOR_CORE_SUPERVISOR_TEST_FIXTURE_H_
