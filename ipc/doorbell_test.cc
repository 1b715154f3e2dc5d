// File: ipc/doorbell_test.cc
//
// The doorbell's wake-up rules: a ring wakes a sleeper; a publish that only
// advances the doorbell (a batching producer) is never lost, whether the
// waiter is already asleep (seen at its liveness slice); WakeDoorbell wakes it.

#include "ipc/doorbell.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace codecvisor::ipc {
namespace {

using namespace std::chrono_literals;

class DoorbellTest : public ::testing::Test {
 public:
  void SetUp() override { ASSERT_EQ(pipe(fds_), 0); }
  void TearDown() override {
    close(fds_[0]);
    close(fds_[1]);
  }

  // Waits (no spinning) until `flag` is set; the status WaitFor returned.
  absl::Status WaitForFlag() {
    return WaitFor(&bell_, [&] { return flag_.load(std::memory_order_acquire); }, Clock::now() + 30s,
                   PeerLiveness(fds_[0], -1, false), nullptr, "the flag");
  }
  // Blocks until the waiter thread has registered as a sleeper.
  void AwaitSleeper() {
    while (bell_.waiters.load() == 0) std::this_thread::sleep_for(100us);
  }

  DoorbellWord bell_{};
  std::atomic<bool> flag_{false};

 private:
  int fds_[2];
};

// Starts a waiter, lets it fall asleep, publishes the flag (waking it only
// if `wake`) and returns what its wait returned: a lost publish would keep
// it asleep until its 30 s deadline.
absl::Status PublishToSleeper(DoorbellTest& t, bool wake) {
  absl::Status waited = absl::UnknownError("not run");
  std::thread waiter([&] { waited = t.WaitForFlag(); });
  t.AwaitSleeper();
  t.flag_.store(true, std::memory_order_release);
  AdvanceDoorbell(&t.bell_);
  if (wake) WakeDoorbell(&t.bell_);
  waiter.join();
  return waited;
}

TEST_F(DoorbellTest, AdvanceWithoutWakeIsSeenAtTheLivenessSlice) {
  absl::Status waited = PublishToSleeper(*this, /*wake=*/false);
  EXPECT_TRUE(waited.ok()) << waited;
  EXPECT_EQ(bell_.seq.load(), 1u);
}

TEST_F(DoorbellTest, WakeAfterAdvanceWakesTheSleeper) {
  absl::Status waited = PublishToSleeper(*this, /*wake=*/true);
  EXPECT_TRUE(waited.ok()) << waited;
}

}  // namespace
}  // namespace codecvisor::ipc
