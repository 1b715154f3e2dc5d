#include "tools/bench/cpu_time.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace codecvisor::bench {
namespace {

TEST(CpuTimeTest, CountsThisProcessThisThreadAndAnother) {
  const double before = SelfCpuSeconds();
  const double thread_before = ThreadCpuSeconds();
  volatile uint64_t spin = 0;
  for (uint64_t i = 0; i < 200'000'000; ++i) spin = spin + i;
  EXPECT_GT(SelfCpuSeconds(), before);
  const double thread_spent = ThreadCpuSeconds() - thread_before;
  EXPECT_GT(thread_spent, 0);
  // Another thread's spinning is this process's time, not this thread's.
  const double thread_mark = ThreadCpuSeconds();
  const double process_mark = SelfCpuSeconds();
  std::thread([] {
    volatile uint64_t other = 0;
    for (uint64_t i = 0; i < 200'000'000; ++i) other = other + i;
  }).join();
  EXPECT_GT(SelfCpuSeconds() - process_mark, 0.5 * thread_spent);
  EXPECT_LT(ThreadCpuSeconds() - thread_mark, 0.5 * thread_spent);
}

TEST(CpuTimeTest, ThreadTimeslicesCountsEveryWakeUp) {
  const int64_t before = ThreadTimeslices();
  ASSERT_GE(before, 0);
  for (int i = 0; i < 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GE(ThreadTimeslices() - before, 5) << "each sleep ends in one more timeslice";
}

// Each thread is listed by name with its own CPU time: a named thread that
// spins shows it; the waiting caller does not take it on.
TEST(CpuTimeTest, ThreadsCpuNamesEachThreadWithItsOwnTime) {
  std::atomic<pid_t> spinner_tid{0};
  std::atomic<bool> spun{false}, listed{false};
  std::thread spinner([&] {
    pthread_setname_np(pthread_self(), "cv-test-spin");
    spinner_tid = static_cast<pid_t>(syscall(SYS_gettid));
    volatile uint64_t n = 0;
    for (uint64_t i = 0; i < 200'000'000; ++i) n = n + i;
    spun = true;
    while (!listed) std::this_thread::yield();
  });
  while (!spun) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto threads = ThreadsCpu(getpid());
  listed = true;
  spinner.join();
  ASSERT_TRUE(threads.ok()) << threads.status();
  const ThreadCpu* spin = nullptr;
  const ThreadCpu* self = nullptr;
  for (const ThreadCpu& t : *threads) {
    if (t.tid == spinner_tid) spin = &t;
    if (t.tid == static_cast<pid_t>(syscall(SYS_gettid))) self = &t;
  }
  ASSERT_NE(spin, nullptr);
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(spin->name, "cv-test-spin");
  EXPECT_GT(spin->seconds, 0.05);  // 200 M additions
  EXPECT_LT(spin->seconds, 60);
  EXPECT_GT(self->seconds, 0);  // this thread has run (it spawned the spinner and read /proc)
  EXPECT_FALSE(ThreadsCpu(-1).ok());
}

}  // namespace
}  // namespace codecvisor::bench
