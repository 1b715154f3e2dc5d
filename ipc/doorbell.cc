#include "ipc/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"

namespace codecvisor::ipc {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout) {
  timespec ts{static_cast<time_t>(timeout.count() / 1'000'000'000),
              static_cast<long>(timeout.count() % 1'000'000'000)};
  // Not FUTEX_PRIVATE_FLAG: the word is shared with another process.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void FutexWake(std::atomic<uint32_t>* word, int count) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, count, nullptr, nullptr, 0);
}

void RingDoorbell(DoorbellWord* bell) {
  // seq_cst pairs with the waiter's seq_cst increment of `waiters`: either the
  // waiter sees the new seq (and the data published before it), or we see it
  // registered and wake it.
  AdvanceDoorbell(bell);
  WakeDoorbell(bell);
}

void AdvanceDoorbell(DoorbellWord* bell) { bell->seq.fetch_add(1, std::memory_order_seq_cst); }

void WakeDoorbell(DoorbellWord* bell) {
  if (bell->waiters.load(std::memory_order_seq_cst) != 0) FutexWake(&bell->seq, INT_MAX);
}

void SpinPolicy::Record(std::chrono::nanoseconds waited) {
  if (waited <= kMaxSpin) {
    budget_ = std::clamp(std::max(budget_, waited * 2), kMinSpin, kMaxSpin);
  } else {
    budget_ = budget_ / 2 < kMinSpin ? std::chrono::nanoseconds(0) : budget_ / 2;
  }
}

absl::Status WaitFor(DoorbellWord* bell, absl::FunctionRef<bool()> ready, Deadline deadline,
                     const PeerLiveness& peer, SpinPolicy* spin, absl::string_view what) {
  if (peer.interrupted()) {
    // kUnavailable after a hang-up (PeerLiveness::HungUp), else kCancelled.
    const absl::Status why = peer.Check();
    return absl::Status(why.ok() ? absl::StatusCode::kCancelled : why.code(),
                        absl::StrCat(why.ok() ? "channel interrupted" : why.message(), " before waiting for ", what));
  }
  if (ready()) return absl::OkStatus();
  const auto start = Clock::now();
  auto record = [&] {
    if (spin != nullptr) spin->Record(Clock::now() - start);
    return absl::OkStatus();
  };
  // Adaptive spin: most answers from a busy peer arrive within microseconds.
  if (spin != nullptr && spin->budget().count() > 0) {
    const auto spin_until = std::min(deadline, start + spin->budget());
    for (uint32_t i = 1;; ++i) {
      CpuRelax();
      if (ready()) return record();
      if ((i & 63) == 0 && (Clock::now() >= spin_until || peer.interrupted())) break;
    }
  }
  for (;;) {
    bell->waiters.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seq = bell->seq.load(std::memory_order_seq_cst);
    bool done = ready();
    // Interrupt() sets its flag before ringing: once registered as a waiter
    // we either see the flag here or are woken by the ring.
    if (!done && !peer.interrupted()) {
      const auto now = Clock::now();
      if (now < deadline) {
        // A watched peer's hang-up rings this bell (PeerLiveness::HungUp):
        // sleep until the deadline. Otherwise poll its socket every slice.
        const std::chrono::nanoseconds left = deadline - now;
        FutexWait(&bell->seq, seq, peer.hangups_watched() ? left : std::min<std::chrono::nanoseconds>(left, kLivenessSlice));
      }
      done = ready();
    }
    bell->waiters.fetch_sub(1, std::memory_order_relaxed);
    if (done) return record();
    if (absl::Status alive = peer.Check(); !alive.ok()) {
      return absl::Status(alive.code(), absl::StrCat(alive.message(), " while waiting for ", what));
    }
    if (Clock::now() >= deadline) {
      auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
      return absl::DeadlineExceededError(
          absl::StrCat("timed out after ", waited.count(), " ms waiting for ", what));
    }
  }
}

}  // namespace codecvisor::ipc
