#include "ipc/idle_cores.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <utility>
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

CachedIdleCores::CachedIdleCores(std::function<int64_t()> now_ns, std::function<int()> read, int64_t refresh_ns)
    : now_ns_(std::move(now_ns)), read_(std::move(read)), refresh_ns_(refresh_ns) {}

int CachedIdleCores::Get() {
  const int64_t now = now_ns_();
  int64_t last = read_at_.load(std::memory_order_acquire);
  if (last == INT64_MAX) return -1;
  const bool due = !ever_read_.load(std::memory_order_acquire) || now - last >= refresh_ns_;
  if (due && read_at_.compare_exchange_strong(last, now, std::memory_order_acq_rel)) {
    const int idle = read_();
    if (idle < 0) {
      read_at_.store(INT64_MAX, std::memory_order_release);
      return -1;
    }
    cached_.store(idle, std::memory_order_relaxed);
    ever_read_.store(true, std::memory_order_release);
    return idle;
  }
  return cached_.load(std::memory_order_relaxed);
}

int IdleCores() {
  static CachedIdleCores cache(
      [] {
        return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
      },
      ReadIdleCores, 10'000'000);
  return cache.Get();
}

}  // namespace codecvisor::ipc
