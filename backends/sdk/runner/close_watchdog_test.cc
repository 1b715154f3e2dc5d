#include "backends/sdk/runner/close_watchdog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace codecvisor::runner {
namespace {

using std::chrono::milliseconds;

// What OnLate was told, for a test to wait on.
struct Reports {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> late;

  CloseWatchdog::OnLate Recorder() {
    return [this](const char* what) {
      std::lock_guard<std::mutex> lock(mu);
      late.push_back(what);
      cv.notify_all();
    };
  }
  size_t WaitFor(size_t n, milliseconds at_most) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, at_most, [&] { return late.size() >= n; });
    return late.size();
  }
  std::vector<std::string> Late() {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<std::string> sorted = late;
    std::sort(sorted.begin(), sorted.end());
    return sorted;
  }
};

TEST(CloseWatchdogTest, ACloseStillRunningPastItsLimitIsReportedOnce) {
  Reports reports;
  CloseWatchdog watchdog(milliseconds(50), reports.Recorder());
  CloseWatchdog::Watch hung = watchdog.Start("close_session of session 3");
  ASSERT_EQ(reports.WaitFor(1, milliseconds(30'000)), 1u);
  EXPECT_EQ(reports.Late(), (std::vector<std::string>{"close_session of session 3"}));
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(reports.WaitFor(2, milliseconds(0)), 1u);  // once, not at every wake
}

TEST(CloseWatchdogTest, ACloseThatReturnsIsNotReported) {
  Reports reports;
  CloseWatchdog watchdog(milliseconds(1000), reports.Recorder());
  { CloseWatchdog::Watch quick = watchdog.Start("close_session of session 1"); }
  // A later close that hangs is still caught, and alone.
  CloseWatchdog::Watch hung = watchdog.Start("close_session of session 2");
  ASSERT_EQ(reports.WaitFor(1, milliseconds(30'000)), 1u);
  EXPECT_EQ(reports.Late(), (std::vector<std::string>{"close_session of session 2"}));
  std::this_thread::sleep_for(milliseconds(1200));
  EXPECT_EQ(reports.WaitFor(2, milliseconds(0)), 1u);
}

TEST(CloseWatchdogTest, EachLateCloseIsReportedAndAMovedWatchStillEnds) {
  Reports reports;
  CloseWatchdog watchdog(milliseconds(50), reports.Recorder());
  CloseWatchdog::Watch a = watchdog.Start("a");
  CloseWatchdog::Watch b = watchdog.Start("b");
  CloseWatchdog::Watch moved(std::move(b));
  ASSERT_EQ(reports.WaitFor(2, milliseconds(30'000)), 2u);
  EXPECT_EQ(reports.Late(), (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace codecvisor::runner
