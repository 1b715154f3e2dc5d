#include "ipc/idle_cores.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace codecvisor::ipc {

std::optional<int> RunnableFromLoadavg(absl::string_view text) {
  std::vector<absl::string_view> fields = absl::StrSplit(text, ' ', absl::SkipEmpty());
  if (fields.size() < 4) return std::nullopt;
  std::vector<absl::string_view> counts = absl::StrSplit(fields[3], '/');
  int runnable = 0;
  if (counts.size() != 2 || !absl::SimpleAtoi(counts[0], &runnable) || runnable < 0) return std::nullopt;
  return runnable;
}

int IdleCoresFrom(int cores, int runnable) { return std::max(0, cores - std::max(0, runnable - 1)); }

namespace {

int ReadIdleCores() {
  const int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[128];
  const ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  if (n <= 0) return -1;
  std::optional<int> runnable = RunnableFromLoadavg(absl::string_view(buf, static_cast<size_t>(n)));
  cpu_set_t set;
  if (!runnable.has_value() || sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
  return IdleCoresFrom(CPU_COUNT(&set), *runnable);
}

}  // namespace

int IdleCores() {
  constexpr int64_t kRefreshNs = 10'000'000;
  static std::atomic<int> cached{0};
  static std::atomic<int64_t> read_at{-kRefreshNs};  // steady-clock ns; INT64_MAX once /proc failed
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = read_at.load(std::memory_order_acquire);
  if (last == INT64_MAX) return -1;
  // One thread refreshes; the others use the value it last read.
  if (now - last >= kRefreshNs && read_at.compare_exchange_strong(last, now, std::memory_order_acq_rel)) {
    const int idle = ReadIdleCores();
    if (idle < 0) {
      read_at.store(INT64_MAX, std::memory_order_release);
      return -1;
    }
    cached.store(idle, std::memory_order_relaxed);
    return idle;
  }
  return cached.load(std::memory_order_relaxed);
}

}  // namespace codecvisor::ipc
