// File: ipc/idle_cores.h
//
// How many cores have nothing to run, for WaitPolicy: from the kernel's
// count of runnable threads (/proc/loadavg) and the cores this process may
// use. Thread-safe.

#ifndef CODECVISOR_IPC_IDLE_CORES_H_
#define CODECVISOR_IPC_IDLE_CORES_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>

#include "absl/strings/string_view.h"

namespace codecvisor::ipc {

// The runnable count in /proc/loadavg's text ("0.50 0.40 0.30 2/191 4242"
// gives 2); nullopt when the text is not in that form.
std::optional<int> RunnableFromLoadavg(absl::string_view text);

// Cores minus runnable threads, the caller not counted as runnable (it is
// about to wait), at least 0.
int IdleCoresFrom(int cores, int runnable);

// A value read by `read` (negative: cannot be read), kept for `refresh_ns`
// of `now_ns`'s clock: one thread refreshes, the others take the value it
// last read. A failed read is final: -1 from then on, `read` not called
// again. Thread-safe.
class CachedIdleCores {
 public:
  CachedIdleCores(std::function<int64_t()> now_ns, std::function<int()> read, int64_t refresh_ns);

  int Get();

 private:
  const std::function<int64_t()> now_ns_;
  const std::function<int()> read_;
  const int64_t refresh_ns_;
  std::atomic<int> cached_{0};
  std::atomic<bool> ever_read_{false};
  std::atomic<int64_t> read_at_{0};  // INT64_MAX once `read_` failed
};

// IdleCoresFrom this moment's figures, read at most once per 10 ms by the
// whole process (the value is that old at worst; a read costs ~10 us). -1 when /proc
// cannot be read (a sandboxed runner), without trying again.
int IdleCores();

}  // namespace codecvisor::ipc

#endif  // CODECVISOR_IPC_IDLE_CORES_H_
