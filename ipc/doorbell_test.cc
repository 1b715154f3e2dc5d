// File: ipc/doorbell_test.cc
//
// The doorbell's wake-up rules for a batching producer: a publish that only
// advances the doorbell is not lost on a waiter already asleep (it sees it at
// its liveness slice), and WakeDoorbell wakes a sleeper.

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
 protected:
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
  int fds_[2];
};

TEST_F(DoorbellTest, AdvanceWithoutWakeIsSeenAtTheLivenessSlice) {
  absl::Status waited = absl::UnknownError("not run");
  std::thread waiter([&] { waited = WaitForFlag(); });
  AwaitSleeper();
  flag_.store(true, std::memory_order_release);
  AdvanceDoorbell(&bell_);
  waiter.join();  // a lost publish would keep it asleep until its 30 s deadline
  EXPECT_TRUE(waited.ok()) << waited;
  EXPECT_EQ(bell_.seq.load(), 1u);
}

// A raw sleeper (one 30 s futex wait, no liveness slices) is woken by
// WakeDoorbell after an AdvanceDoorbell, not by its timeout.
TEST_F(DoorbellTest, WakeAfterAdvanceWakesTheSleeper) {
  std::thread sleeper([&] {
    bell_.waiters.fetch_add(1);
    FutexWait(&bell_.seq, 0, 30s);
    bell_.waiters.fetch_sub(1);
  });
  AwaitSleeper();
  std::this_thread::sleep_for(20ms);  // into FUTEX_WAIT (had it not got there, seq 1 ends its wait at once)
  AdvanceDoorbell(&bell_);
  const auto woken_at = Clock::now();
  WakeDoorbell(&bell_);
  sleeper.join();
  EXPECT_LT(Clock::now() - woken_at, 10s) << "the sleeper ran into its timeout: WakeDoorbell did not wake it";
}

// A peer ringing the bell in a loop without publishing anything would make
// the wait a busy loop. After kMaxFruitlessWakes such rings in a liveness
// slice the waiter stops listening and checks after timed sleeps: at most
// once a kDeafSleep from then on, however fast the bell rings, and it still
// sees the condition when it holds.
TEST_F(DoorbellTest, ABellRungForNothingInALoopDoesNotMakeTheWaitABusyLoop) {
  std::atomic<bool> stop{false};
  std::thread ringer([&] {
    while (!stop.load()) RingDoorbell(&bell_);
  });
  std::atomic<uint64_t> checks{0};
  const auto start = Clock::now();
  const absl::Status waited = WaitFor(
      &bell_, [&] { return ++checks, false; }, start + 300ms, PeerLiveness(fds_[0], -1, false), nullptr, "nothing");
  const auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  EXPECT_TRUE(absl::IsDeadlineExceeded(waited)) << waited;
  // Two checks a listened sleep, then one a timed sleep (and one before):
  // at most 2 x 64 + 4, then one a millisecond. The count of early wakes
  // starts again when the waiter, still listening, was held off the CPU a
  // liveness slice (a loaded machine): 2 x 64 more for each such slice.
  static_assert(kMaxFruitlessWakes <= 64 && kDeafSleep >= 1ms && kLivenessSlice >= 10ms);
  EXPECT_LE(checks.load(), 132 + elapsed_ms + 128 * (elapsed_ms / 10)) << "in " << elapsed_ms << " ms";
  // Once the condition holds, the deaf waiter sees it.
  std::thread setter([&] {
    std::this_thread::sleep_for(50ms);
    flag_.store(true, std::memory_order_release);
  });
  EXPECT_TRUE(WaitForFlag().ok());
  setter.join();
  stop.store(true);
  ringer.join();
}

}  // namespace
}  // namespace codecvisor::ipc
