#include "core/exit_watcher.h"

#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/thread_count_for_test.h"
#include "base/mutex.h"
#include "ipc/unique_fd.h"

namespace codecvisor {
namespace {

void Signal(int fd) {
  uint64_t one = 1;
  ASSERT_EQ(write(fd, &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
}

// Waits, without a deadline that a slow machine could miss, for `flag`.
void AwaitTrue(Mutex* mu, CondVar* cv, const bool* flag) {
  MutexLock lock(mu);
  while (!*flag) cv->Wait(mu);
}

TEST(ExitWatcherTest, NoThreadUntilTheFirstWatch) {
  const int before = ThreadCountForTest();
  ExitWatcher watcher;
  EXPECT_FALSE(watcher.StartedForTest());
  EXPECT_EQ(ThreadCountForTest(), before);
}

TEST(ExitWatcherTest, OneThreadWatchesAHundredDescriptors) {
  ExitWatcher watcher;
  std::vector<ipc::UniqueFd> fds;
  std::vector<uint64_t> ids;
  for (int i = 0; i < 100; ++i) {
    fds.emplace_back(eventfd(0, EFD_CLOEXEC));
    absl::StatusOr<uint64_t> id = watcher.Add(fds.back().get(), [] {});
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
  }
  EXPECT_EQ(ThreadCountForTest(kExitWatcherThreadName), 1);
  for (uint64_t id : ids) watcher.Remove(id);
}

TEST(ExitWatcherTest, CallsBackOnceWhenReadable) {
  ExitWatcher watcher;
  ipc::UniqueFd a(eventfd(0, EFD_CLOEXEC)), b(eventfd(0, EFD_CLOEXEC));
  Mutex mu;
  CondVar cv;
  int a_calls = 0, b_calls = 0;
  bool a_called = false;
  ASSERT_TRUE(watcher.Add(a.get(), [&] {
    MutexLock lock(&mu);
    ++a_calls;
    a_called = true;
    cv.NotifyAll();
  }).ok());
  absl::StatusOr<uint64_t> b_id = watcher.Add(b.get(), [&] {
    MutexLock lock(&mu);
    ++b_calls;
  });
  ASSERT_TRUE(b_id.ok());
  Signal(a.get());
  AwaitTrue(&mu, &cv, &a_called);
  Signal(a.get());  // readable again: no second call
  watcher.Remove(*b_id);
  Signal(b.get());  // removed: never called
  // By the time a third watch has fired, the watcher has had every chance
  // to call `a` again or `b` at all.
  ipc::UniqueFd c(eventfd(0, EFD_CLOEXEC));
  bool c_called = false;
  ASSERT_TRUE(watcher.Add(c.get(), [&] {
    MutexLock lock(&mu);
    c_called = true;
    cv.NotifyAll();
  }).ok());
  Signal(c.get());
  AwaitTrue(&mu, &cv, &c_called);
  MutexLock lock(&mu);
  EXPECT_EQ(a_calls, 1);
  EXPECT_EQ(b_calls, 0);
}

TEST(ExitWatcherTest, SeesAChildDieThroughItsPidfd) {
  ExitWatcher watcher;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    pause();
    _exit(0);
  }
  ipc::UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  ASSERT_TRUE(pidfd.valid());
  Mutex mu;
  CondVar cv;
  bool died = false;
  ASSERT_TRUE(watcher.Add(pidfd.get(), [&] {
    MutexLock lock(&mu);
    died = true;
    cv.NotifyAll();
  }).ok());
  {
    MutexLock lock(&mu);
    EXPECT_FALSE(died);  // alive: nothing yet
  }
  kill(pid, SIGKILL);
  AwaitTrue(&mu, &cv, &died);
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
}

TEST(ExitWatcherTest, RemoveWaitsForARunningCallback) {
  ExitWatcher watcher;
  ipc::UniqueFd fd(eventfd(0, EFD_CLOEXEC));
  Mutex mu;
  CondVar cv;
  bool entered = false, release = false;
  std::atomic<bool> finished{false};
  absl::StatusOr<uint64_t> id = watcher.Add(fd.get(), [&] {
    MutexLock lock(&mu);
    entered = true;
    cv.NotifyAll();
    while (!release) cv.Wait(&mu);
    finished = true;
  });
  ASSERT_TRUE(id.ok());
  Signal(fd.get());
  AwaitTrue(&mu, &cv, &entered);
  std::thread releaser([&] {
    MutexLock lock(&mu);
    release = true;
    cv.NotifyAll();
  });
  watcher.Remove(*id);
  EXPECT_TRUE(finished.load());
  releaser.join();
}

}  // namespace
}  // namespace codecvisor
