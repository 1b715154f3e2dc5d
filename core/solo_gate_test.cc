#include "core/solo_gate.h"

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace codecvisor {
namespace {

using Clock = SoloGate::Clock;
using std::chrono::milliseconds;

constexpr auto kLong = std::chrono::seconds(30);  // a limit no test reaches

// Whether `f` is still waiting after `wait`.
template <typename F>
bool StillWaiting(const std::future<F>& f, milliseconds wait = milliseconds(150)) {
  return f.wait_for(wait) == std::future_status::timeout;
}

TEST(SoloGateTest, SharedPassesGoInTogether) {
  SoloGate gate;
  SoloGate::Pass a = gate.Enter();
  auto b = std::async(std::launch::async, [&] {
    SoloGate::Pass p = gate.Enter();
    return gate.inside();
  });
  EXPECT_EQ(b.get(), 2);
  EXPECT_FALSE(a.solo());
  EXPECT_EQ(gate.inside(), 1);
}

TEST(SoloGateTest, ASoloPassWaitsForTheOthersAndHoldsNewOnesOut) {
  SoloGate gate;
  std::promise<void> release_shared;
  std::promise<void> shared_in;
  std::thread shared([&] {
    SoloGate::Pass p = gate.Enter();
    shared_in.set_value();
    release_shared.get_future().wait();
  });
  shared_in.get_future().wait();

  std::promise<void> release_solo;
  auto solo = std::async(std::launch::async, [&] {
    SoloGate::Pass p = gate.EnterSolo(Clock::now() + kLong, Clock::now() + kLong);
    const bool alone = p.solo() && gate.inside() == 1;
    release_solo.get_future().wait();
    return alone;
  });
  EXPECT_TRUE(StillWaiting(solo)) << "a solo pass went in beside a shared one";
  for (auto until = Clock::now() + kLong; gate.solo_waiting() == 0 && Clock::now() < until;) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_EQ(gate.solo_waiting(), 1);
  // A newcomer waits behind the solo waiter, not beside the shared pass.
  std::atomic<bool> late_in{false};
  auto late = std::async(std::launch::async, [&] {
    SoloGate::Pass p = gate.Enter();
    late_in = true;
  });
  EXPECT_TRUE(StillWaiting(late));

  release_shared.set_value();
  shared.join();
  // The solo pass is in alone; the newcomer still waits.
  for (auto until = Clock::now() + kLong; !gate.held_solo() && Clock::now() < until;) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_TRUE(gate.held_solo());
  EXPECT_TRUE(StillWaiting(late));
  EXPECT_FALSE(late_in);
  release_solo.set_value();
  EXPECT_TRUE(solo.get());
  late.get();
  EXPECT_TRUE(late_in);
  EXPECT_EQ(gate.inside(), 0);
}

TEST(SoloGateTest, ASoloPassThatCannotGetInAloneGoesInBesideTheOthers) {
  SoloGate gate;
  SoloGate::Pass held = gate.Enter();  // never leaves during the test
  auto solo = std::async(std::launch::async, [&] {
    SoloGate::Pass p = gate.EnterSolo(Clock::now() + milliseconds(100), Clock::now() + kLong);
    return std::make_pair(p.solo(), gate.inside());
  });
  const auto [was_solo, inside] = solo.get();
  EXPECT_FALSE(was_solo);
  EXPECT_EQ(inside, 2);
  // Its wait is over: shared passes go in again.
  auto again = std::async(std::launch::async, [&] {
    SoloGate::Pass p = gate.Enter();
    return gate.inside();
  });
  EXPECT_EQ(again.get(), 2);
  EXPECT_EQ(gate.inside(), 1);
}

TEST(SoloGateTest, ASoloPassHoldsTheOthersOutOnlyUntilItsHoldLimit) {
  SoloGate gate;
  SoloGate::Pass solo = gate.EnterSolo(Clock::now() + kLong, Clock::now() + milliseconds(2000));
  ASSERT_TRUE(solo.solo());
  auto other = std::async(std::launch::async, [&] {
    SoloGate::Pass p = gate.Enter();
    return gate.inside();
  });
  EXPECT_TRUE(StillWaiting(other, milliseconds(50)));
  // Past the hold limit it goes in while the solo pass is still held.
  EXPECT_EQ(other.get(), 2);
  EXPECT_FALSE(gate.held_solo());
}

TEST(SoloGateTest, AThreadInsideReentersWithoutWaitingOnItself) {
  SoloGate gate;
  // A sink that decodes from another session of the same backend, while a
  // solo pass waits for this thread to leave: without re-entry, this thread
  // would wait for the solo waiter, which waits for this thread.
  SoloGate::Pass outer = gate.Enter();
  auto solo = std::async(std::launch::async, [&] {
    SoloGate::Pass p = gate.EnterSolo(Clock::now() + kLong, Clock::now() + kLong);
    return p.solo();
  });
  ASSERT_TRUE(StillWaiting(solo));
  {
    SoloGate::Pass inner = gate.Enter();
    EXPECT_EQ(gate.inside(), 2);
    // And a solo pass asked for from inside goes in at once, not alone.
    SoloGate::Pass inner_solo = gate.EnterSolo(Clock::now() + kLong, Clock::now() + kLong);
    EXPECT_FALSE(inner_solo.solo());
    EXPECT_EQ(gate.inside(), 3);
  }
  outer = SoloGate::Pass();
  EXPECT_TRUE(solo.get());
  EXPECT_EQ(gate.inside(), 0);
}

TEST(SoloGateTest, SoloPassesGoInOneAtATime) {
  SoloGate gate;
  std::atomic<int> alone_at_once{0};
  std::atomic<int> most{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      SoloGate::Pass p = gate.EnterSolo(Clock::now() + kLong, Clock::now() + kLong);
      EXPECT_TRUE(p.solo());
      const int now = ++alone_at_once;
      most = std::max(most.load(), now);
      std::this_thread::sleep_for(milliseconds(20));
      --alone_at_once;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(most.load(), 1);
  EXPECT_EQ(gate.inside(), 0);
}

}  // namespace
}  // namespace codecvisor
