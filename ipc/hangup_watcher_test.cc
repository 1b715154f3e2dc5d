#include "ipc/hangup_watcher.h"

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "ipc/channel.h"
#include "ipc/socket.h"

namespace codecvisor::ipc {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Bounds a wait that must end; generous so that a loaded machine cannot fail it.
constexpr auto kMustHappen = seconds(20);

// Polls `done` until it holds or kMustHappen passes.
template <typename Fn>
bool Eventually(Fn done) {
  const auto until = Clock::now() + kMustHappen;
  while (!done()) {
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

// Voluntary plus involuntary context switches of thread `tid` of this process.
int64_t ContextSwitches(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/status");
  int64_t total = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find("ctxt_switches:") != std::string::npos) total += std::stoll(line.substr(line.find(':') + 1));
  }
  return total;
}

// Waits (at most 20 s) until thread `tid` sleeps and stays asleep for 50 ms:
// a waiter past its spinning and polling, in its last sleep.
void WaitUntilAsleep(pid_t tid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    const int64_t before = ContextSwitches(tid);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (ContextSwitches(tid) == before) return;
  }
  ADD_FAILURE() << "thread " << tid << " never slept 50 ms";
}

// A running watcher and one socketpair: `ours` is watched, `peer` hangs up.
class HangupWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto watcher = HangupWatcher::Start();
    ASSERT_TRUE(watcher.ok()) << watcher.status();
    watcher_ = *std::move(watcher);
    auto pair = MakeSocketPair();
    ASSERT_TRUE(pair.ok()) << pair.status();
    ours_ = std::move(pair->first);
    peer_ = std::move(pair->second);
  }

  HangupWatcher::Watch WatchOurs() { return watcher_->Add(ours_.get(), [this] { calls_.fetch_add(1); }); }
  bool CalledOnce() {
    return Eventually([&] { return calls_.load() == 1; });
  }

  std::unique_ptr<HangupWatcher> watcher_;
  UniqueFd ours_, peer_;
  std::atomic<int> calls_{0};
};

TEST_F(HangupWatcherTest, CallsBackOnceWhenThePeerHangsUp) {
  HangupWatcher::Watch watch = WatchOurs();
  EXPECT_EQ(watcher_->watched(), 1u);
  peer_.reset();
  ASSERT_TRUE(CalledOnce());
  // Fired watches are dropped: no second call, nothing left to poll.
  EXPECT_EQ(watcher_->watched(), 0u);
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(calls_.load(), 1);
}

TEST_F(HangupWatcherTest, DataOnTheSocketIsNotAHangup) {
  HangupWatcher::Watch watch = WatchOurs();
  const char byte = 'x';
  ASSERT_EQ(send(peer_.get(), &byte, 1, 0), 1);  // stays unread
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(calls_.load(), 0);
  peer_.reset();
  EXPECT_TRUE(CalledOnce());
}

TEST_F(HangupWatcherTest, AnAlreadyHungUpSocketFiresAtOnce) {
  peer_.reset();
  HangupWatcher::Watch watch = WatchOurs();
  EXPECT_TRUE(CalledOnce());
}

TEST_F(HangupWatcherTest, ADroppedWatchNeverCallsBack) {
  {
    HangupWatcher::Watch watch = WatchOurs();
    HangupWatcher::Watch moved = std::move(watch);  // the moved-from one drops nothing
    EXPECT_EQ(watcher_->watched(), 1u);
  }
  EXPECT_EQ(watcher_->watched(), 0u);
  // Its descriptor may now be closed and its number reused.
  ours_.reset();
  peer_.reset();
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(HangupWatcherTest, WatchesManySocketsAndFiresOnlyTheOneThatHungUp) {
  constexpr int kSockets = 16;
  std::vector<std::pair<UniqueFd, UniqueFd>> pairs;
  std::atomic<int> calls[kSockets] = {};
  std::vector<HangupWatcher::Watch> watches;
  for (int i = 0; i < kSockets; ++i) {
    auto pair = MakeSocketPair();
    ASSERT_TRUE(pair.ok()) << pair.status();
    pairs.push_back(*std::move(pair));
    watches.push_back(watcher_->Add(pairs.back().first.get(), [&calls, i] { calls[i].fetch_add(1); }));
  }
  pairs[7].second.reset();
  ASSERT_TRUE(Eventually([&] { return calls[7].load() == 1; }));
  std::this_thread::sleep_for(milliseconds(50));
  for (int i = 0; i < kSockets; ++i) EXPECT_EQ(calls[i].load(), i == 7 ? 1 : 0) << "socket " << i;
  EXPECT_EQ(watcher_->watched(), static_cast<size_t>(kSockets - 1));
}

// A backend channel end whose host hangs up, with and without the watcher.
class WatchedChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Geometry geometry;
    geometry.slot_count = 2;
    geometry.slot_bytes = Geometry::SlotBytesFor(4096);
    auto created = HostChannel::Create(geometry);
    ASSERT_TRUE(created.ok()) << created.status();
    host_ = std::move(created->first);
    auto backend = BackendChannel::Attach(std::move(created->second));
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = *std::move(backend);
  }

  // Lets a watcher report the host's hang-up on the backend's end.
  void Watch() {
    auto watcher = HangupWatcher::Start();
    ASSERT_TRUE(watcher.ok()) << watcher.status();
    watcher_ = *std::move(watcher);
    backend_->WatchHangups(watcher_.get());
  }

  // First: it must outlive the channel that holds a watch on it.
  std::unique_ptr<HangupWatcher> watcher_;
  std::unique_ptr<HostChannel> host_;
  std::unique_ptr<BackendChannel> backend_;
};

// The waiting thread's context switches over `idle` while it waits for a
// request that never comes, then the host hangs up; returns the switches
// and what the wait returned.
std::pair<int64_t, absl::Status> IdleThenHangUp(BackendChannel& backend, std::unique_ptr<HostChannel>& host,
                                                milliseconds idle, bool watched) {
  std::promise<pid_t> tid;
  auto waited = std::async(std::launch::async, [&] {
    tid.set_value(static_cast<pid_t>(syscall(SYS_gettid)));
    return backend.Receive(Clock::now() + std::chrono::hours(1)).status();
  });
  const pid_t waiter = tid.get_future().get();
  if (watched) {
    WaitUntilAsleep(waiter);  // in the futex
  } else {
    std::this_thread::sleep_for(milliseconds(50));  // it wakes every slice: never asleep for long
  }
  const int64_t before = ContextSwitches(waiter);
  std::this_thread::sleep_for(idle);
  const int64_t switches = ContextSwitches(waiter) - before;
  host.reset();  // unmaps its side and closes its socket end
  if (waited.wait_for(kMustHappen) != std::future_status::ready) {
    ADD_FAILURE() << "the wait did not end after the hang-up";
    std::abort();  // the async's destructor would block on it forever
  }
  return {switches, waited.get()};
}

TEST_F(WatchedChannelTest, AnIdleWatchedWaitSleepsUntilTheHangUpEndsIt) {
  ASSERT_NO_FATAL_FAILURE(Watch());
  auto [switches, status] = IdleThenHangUp(*backend_, host_, milliseconds(500), /*watched=*/true);
  // Unwatched, the wait wakes every 10 ms to poll the socket (about 50
  // times here); watched, it sleeps through.
  EXPECT_LE(switches, 3) << "the waiting thread was switched in " << switches << " times in 500 ms";
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_NE(status.message().find("hung up"), std::string::npos) << status;
  // A wait that starts after the hang-up says the same, at once.
  const absl::Status later = backend_->Receive(Clock::now() + std::chrono::hours(1)).status();
  EXPECT_TRUE(absl::IsUnavailable(later)) << later;
  const absl::Status send = backend_->Send({1, Pong{7}}, Clock::now() + std::chrono::hours(1));
  EXPECT_TRUE(absl::IsUnavailable(send)) << send;
}

TEST_F(WatchedChannelTest, AnUnwatchedWaitPollsTheSocketEverySlice) {
  // The baseline the watched test is measured against: what it saves.
  auto [switches, status] = IdleThenHangUp(*backend_, host_, milliseconds(500), /*watched=*/false);
  EXPECT_GE(switches, 10) << "the waiting thread was switched in " << switches << " times in 500 ms";
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
}

TEST_F(WatchedChannelTest, AHangUpWakesAWaitForAFreeSlot) {
  ASSERT_NO_FATAL_FAILURE(Watch());
  // Lend both slots to the host, which never frees them.
  for (int i = 0; i < 2; ++i) {
    auto slot = backend_->AcquireSlot(Clock::now() + seconds(1));
    ASSERT_TRUE(slot.ok()) << slot.status();
    backend_->arena().Lend(slot->index);
  }
  auto waited = std::async(std::launch::async, [&] {
    return backend_->AcquireSlot(Clock::now() + std::chrono::hours(1)).status();
  });
  std::this_thread::sleep_for(milliseconds(50));
  host_.reset();
  ASSERT_EQ(waited.wait_for(kMustHappen), std::future_status::ready) << "the slot wait did not end";
  const absl::Status status = waited.get();
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
}

}  // namespace
}  // namespace codecvisor::ipc
