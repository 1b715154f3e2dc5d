#include "ipc/doorbell.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <thread>

#include "absl/strings/str_cat.h"
#include "ipc/idle_cores.h"

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

namespace {

// Checks `ready` in a loop until `until`; false if it never held or the
// peer was interrupted.
bool PollUntil(absl::FunctionRef<bool()> ready, Clock::time_point until, bool yield, const PeerLiveness& peer) {
  for (uint32_t i = 1;; ++i) {
    if (yield) {
      sched_yield();
    } else {
      CpuRelax();
    }
    if (ready()) return true;
    if ((yield || (i & 63) == 0) && (Clock::now() >= until || peer.interrupted())) return false;
  }
}

// One futex sleep on `bell` for at most `timeout`, registered as a waiter
// so that a ring ends it. True if `ready` held before or after it.
bool SleepOnce(DoorbellWord* bell, absl::FunctionRef<bool()> ready, const PeerLiveness& peer,
               std::chrono::nanoseconds timeout) {
  bell->waiters.fetch_add(1, std::memory_order_seq_cst);
  const uint32_t seq = bell->seq.load(std::memory_order_seq_cst);
  bool done = ready();
  // Interrupt() sets its flag before ringing: once registered as a waiter
  // we either see the flag here or are woken by the ring.
  if (!done && !peer.interrupted() && timeout.count() > 0) {
    FutexWait(&bell->seq, seq, timeout);
    done = ready();
  }
  bell->waiters.fetch_sub(1, std::memory_order_relaxed);
  return done;
}

}  // namespace

absl::Status WaitFor(DoorbellWord* bell, absl::FunctionRef<bool()> ready, Deadline deadline,
                     const PeerLiveness& peer, WaitPolicy* policy, absl::string_view what) {
  if (peer.interrupted()) {
    // kUnavailable after a hang-up (PeerLiveness::HungUp), else kCancelled.
    const absl::Status why = peer.Check();
    return absl::Status(why.ok() ? absl::StatusCode::kCancelled : why.code(),
                        absl::StrCat(why.ok() ? "channel interrupted" : why.message(), " before waiting for ", what));
  }
  if (ready()) return absl::OkStatus();
  const auto start = Clock::now();
  bool poll_missed = false;
  auto done = [&] {
    if (policy != nullptr) policy->RecordWait(Clock::now() - start, poll_missed);
    return absl::OkStatus();
  };
  // A wait expected longer than any nap sleeps whatever the cores do: no
  // /proc read for it.
  const WaitPlan plan =
      policy == nullptr ? WaitPlan{}
      : policy->expected_wait() > WaitPolicy::kMaxNapWait ? policy->Plan({.idle_cores = 0})
                                                          : policy->Plan({.idle_cores = IdleCores()});
  if (plan.spin.count() > 0 && PollUntil(ready, std::min(deadline, start + plan.spin), plan.yield, peer)) {
    return done();
  }
  if (const auto nap_end = start + plan.nap; plan.nap.count() > 0 && nap_end < deadline && !peer.interrupted()) {
    // In slices of kLivenessSlice, checking the peer between them, like the
    // sleep below: a nap may be longer than one slice.
    bool answered = false;
    for (auto now = Clock::now(); !answered && now < nap_end && !peer.interrupted(); now = Clock::now()) {
      answered = SleepOnce(bell, ready, peer, std::min<std::chrono::nanoseconds>(nap_end - now, kLivenessSlice));
      if (!answered && !peer.Check().ok()) break;  // reported by the loop below
    }
    // Running again only past the nap's end: whatever woke it, a timed
    // wake-up takes at least this long. (Before it, a ring ended the nap.)
    const auto woke = Clock::now();
    if (woke >= nap_end) policy->RecordOversleep(woke - nap_end);
    if (answered) return done();
    if (plan.poll.count() > 0 && PollUntil(ready, std::min(deadline, woke + plan.poll), plan.yield, peer)) {
      return done();
    }
    poll_missed = true;
  }
  // Sleeps the bell ended early with nothing ready, since `window`: a
  // signal or a ring for another reader does that now and then; a peer
  // ringing in a loop, kMaxFruitlessWakes times within a liveness slice.
  uint32_t fruitless = 0;
  auto window = Clock::now();
  for (;;) {
    // A watched peer's hang-up rings this bell (PeerLiveness::HungUp):
    // sleep until the deadline. Otherwise poll its socket every slice.
    const std::chrono::nanoseconds left = deadline - Clock::now();
    const std::chrono::nanoseconds slice =
        peer.hangups_watched() ? left : std::min<std::chrono::nanoseconds>(left, kLivenessSlice);
    if (fruitless < kMaxFruitlessWakes) {
      const auto slept_at = Clock::now();
      if (SleepOnce(bell, ready, peer, slice)) return done();
      const auto woke = Clock::now();
      if (woke - slept_at >= slice || woke - window > kLivenessSlice) {
        fruitless = 0;  // slept it out, or the last early ones were a slice ago
        window = woke;
      }
      if (woke - slept_at < slice) ++fruitless;
    } else {
      // The peer rings without publishing (a hostile plugin's loop of
      // wake-ups would make this a busy loop): the bell is no longer
      // listened to; the condition is checked after each short timed sleep.
      std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(slice, kDeafSleep));
      if (ready()) return done();
    }
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
