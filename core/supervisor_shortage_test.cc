// The host out of descriptors (`ulimit -n` reached by the caller's own
// decoders) as it starts or restarts a backend, on the fake env of
// core/supervisor_test_fixture.h: the shortage is the host's, never the
// backend's crash or failure, and the call waiting for the start hears of
// it at once.

#include <gtest/gtest.h>
#include <signal.h>

#include <thread>
#include <vector>

#include "core/supervisor.h"
#include "core/supervisor_test_fixture.h"

namespace codecvisor {
namespace {

using std::chrono::milliseconds;

class SupervisorShortageTest : public supervisor_testing::SupervisorTest {
 protected:
  // A first use that waits (on a thread of its own) while the start it
  // asked for runs, and what it got.
  absl::StatusOr<BackendHandle> AcquireWhileItStarts() {
    absl::StatusOr<BackendHandle> waited = absl::UnknownError("not acquired");
    std::thread waiter([&] { waited = supervisor_->Acquire(ipc::Clock::now() + std::chrono::seconds(60)); });
    while (supervisor_->Status().state != BackendState::kSpawning) std::this_thread::yield();
    supervisor_->RunDueWorkForTest();
    waiter.join();
    return waited;
  }
};
using supervisor_testing::kSegv;

// The host out of descriptors as it starts the backend for the first time
// (`ulimit -n` reached by the caller's own decoders): the opens waiting for
// that start fail with the shortage, the backend is not failed for the
// life of the process, and the next Acquire starts it again.
TEST_F(SupervisorShortageTest, AFirstStartShortOfTheHostsDescriptorsFailsOnlyItsWaiters) {
  Make();
  const absl::Status shortage = HostShortage(absl::ResourceExhaustedError("socketpair: Too many open files"));
  env_->FailNextStarts({shortage});
  absl::StatusOr<BackendHandle> waited = AcquireWhileItStarts();
  ASSERT_FALSE(waited.ok());
  EXPECT_TRUE(IsHostShortage(waited.status())) << waited.status();
  EXPECT_NE(waited.status().message().find("Too many open files"), std::string::npos) << waited.status();
  SupervisorStatus st = supervisor_->Status();
  EXPECT_EQ(st.state, BackendState::kDiscovered);
  EXPECT_NE(st.diagnostic.find("Too many open files"), std::string::npos) << st.diagnostic;
  EXPECT_EQ(env_->starts(), 1);
  // Nothing retries on its own; the next open starts it again.
  env_->Advance(milliseconds(60'000));
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 1);
  StartReady();
  EXPECT_EQ(env_->starts(), 2);
  EXPECT_TRUE(supervisor_->Status().diagnostic.empty());
}

// A restart failing for the host's descriptors is retried every 0.5 s and
// never counted: ten of them in a minute whose budget is three crashes do
// not quarantine the backend.
TEST_F(SupervisorShortageTest, ARestartShortOfTheHostsDescriptorsIsRetriedUncounted) {
  Make();
  StartReady();
  const absl::Status shortage = HostShortage(absl::ResourceExhaustedError("pipe2: Too many open files"));
  env_->FailNextStarts(std::vector<absl::Status>(10, shortage));
  env_->Exit(Current(), kSegv);
  supervisor_->RunDueWorkForTest();  // the first crash of a quiet period restarts at once
  EXPECT_EQ(env_->starts(), 2);
  for (int i = 0; i < 9; ++i) {
    env_->Advance(milliseconds(499));
    supervisor_->RunDueWorkForTest();
    EXPECT_EQ(env_->starts(), 2 + i) << "retried before 0.5 s";
    env_->Advance(milliseconds(1));
    supervisor_->RunDueWorkForTest();
    EXPECT_EQ(env_->starts(), 3 + i);
    EXPECT_EQ(supervisor_->Status().state, BackendState::kRestarting);
  }
  env_->Advance(milliseconds(500));
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 12);
  EXPECT_EQ(supervisor_->Status().state, BackendState::kReady);
  EXPECT_TRUE(AcquireNow().ok());
}

// An open waiting for a restart that fails for the host's descriptors
// hears of the shortage as soon as the restart fails, not at its deadline:
// it may hold the descriptors the restart lacks (a caller at its `ulimit -n`
// whose backend crashed). An open that comes while the retry waits has it
// made at once and gets its outcome, so one made after the caller closed
// some files finds the backend restarted.
TEST_F(SupervisorShortageTest, AnOpenWaitingForARestartShortOfTheHostsDescriptorsGetsTheShortage) {
  Make();
  StartReady();
  const absl::Status shortage = HostShortage(absl::ResourceExhaustedError("socketpair: Too many open files"));
  env_->FailNextStarts({shortage, shortage});
  env_->Exit(Current(), kSegv);
  supervisor_->RunDueWorkForTest();  // the restart fails short; its retry is 0.5 s away
  ASSERT_EQ(supervisor_->Status().state, BackendState::kRestarting);
  ASSERT_EQ(env_->starts(), 2);
  // Each Acquire below runs on a thread while this one runs whatever work is
  // due (none, on this clock, until an Acquire makes the retry due).
  auto acquire = [&] {
    std::atomic<bool> done{false};
    absl::StatusOr<BackendHandle> got = absl::UnknownError("not acquired");
    std::thread waiter([&] {
      got = supervisor_->Acquire(ipc::Clock::now() + std::chrono::seconds(60));
      done = true;
    });
    while (!done) {
      supervisor_->RunDueWorkForTest();
      std::this_thread::yield();
    }
    waiter.join();
    return got;
  };
  absl::StatusOr<BackendHandle> waited = acquire();
  ASSERT_FALSE(waited.ok());
  EXPECT_TRUE(IsHostShortage(waited.status())) << waited.status();
  EXPECT_NE(waited.status().message().find("Too many open files"), std::string::npos) << waited.status();
  EXPECT_EQ(env_->starts(), 3) << "the open did not have the retry made";
  EXPECT_EQ(supervisor_->Status().state, BackendState::kRestarting);
  waited = acquire();
  EXPECT_TRUE(waited.ok()) << waited.status();
  EXPECT_EQ(env_->starts(), 4);
  EXPECT_EQ(supervisor_->Status().state, BackendState::kReady);
  EXPECT_EQ(supervisor_->Status().restarts, 1u);
}

// The first start after a reset (of a quarantine) that runs short of the
// host's descriptors is a first start's shortage: its waiters get it and
// the backend stays startable, where before it was failed for the process.
TEST_F(SupervisorShortageTest, AStartAfterAResetShortOfTheHostsDescriptorsLeavesItStartable) {
  Make();
  StartReady();
  for (int crash = 1; crash <= 4; ++crash) {
    env_->Exit(Current(), kSegv);
    env_->Advance(milliseconds(40));
    supervisor_->RunDueWorkForTest();
  }
  ASSERT_EQ(supervisor_->Status().state, BackendState::kQuarantined);
  supervisor_->Reset();
  env_->FailNextStarts({HostShortage(absl::ResourceExhaustedError("pipe2: Too many open files"))});
  absl::StatusOr<BackendHandle> waited = AcquireWhileItStarts();
  ASSERT_FALSE(waited.ok());
  EXPECT_TRUE(IsHostShortage(waited.status())) << waited.status();
  EXPECT_EQ(supervisor_->Status().state, BackendState::kDiscovered);
  StartReady();
  EXPECT_EQ(supervisor_->Status().state, BackendState::kReady);
}

// A warm spare refused for want of the host's descriptors is not the
// spare's failure: it neither counts toward the three failures that end
// spares for the process nor is retried at once in a loop; it is tried
// again 0.5 s later, then 1 s, 2 s, ... (each try takes descriptors), and
// the backend itself is untouched.
TEST_F(SupervisorShortageTest, ASpareShortOfTheHostsDescriptorsIsRetriedLaterUncounted) {
  Make(/*warm_spare=*/true);
  StartReady();
  Served();
  env_->FailNextStarts(
      std::vector<absl::Status>(4, HostShortage(absl::ResourceExhaustedError("socketpair: Too many open files"))));
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 2);  // one try, not a loop
  EXPECT_FALSE(supervisor_->Status().spare_ready);
  EXPECT_EQ(supervisor_->Status().state, BackendState::kReady);
  milliseconds wait(500);
  for (int shortage = 2; shortage <= 4; ++shortage, wait *= 2) {
    env_->Advance(wait - milliseconds(1));
    supervisor_->RunDueWorkForTest();
    EXPECT_EQ(env_->starts(), shortage);  // not due yet
    env_->Advance(milliseconds(1));
    supervisor_->RunDueWorkForTest();
    EXPECT_EQ(env_->starts(), shortage + 1);
  }
  // Four shortages later the descriptors are back: the spare starts.
  env_->Advance(wait);
  supervisor_->RunDueWorkForTest();
  EXPECT_EQ(env_->starts(), 6);
  EXPECT_TRUE(supervisor_->Status().spare_ready);
  EXPECT_EQ(supervisor_->Status().restarts, 0u);
}

}  // namespace
}  // namespace codecvisor
