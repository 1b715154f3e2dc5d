// File: ipc/doorbell.h
//
// Futex doorbells in shared memory and the one waiting loop every blocking
// call in ipc/ goes through. A doorbell lives in the channel region, so the
// peer can write it: a corrupt doorbell can only cause a spurious or a missed
// wake-up, and every wait is bounded by a deadline and a liveness check, so
// neither can hang the host.

#ifndef CODECVISOR_IPC_DOORBELL_H_
#define CODECVISOR_IPC_DOORBELL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include "absl/strings/string_view.h"

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "ipc/socket.h"
#include "ipc/unique_fd.h"
#include "ipc/wait_policy.h"

namespace codecvisor::ipc {

// Lives in shared memory; both words are plain atomics (address-free).
struct DoorbellWord {
  std::atomic<uint32_t> seq;      // bumped on every ring
  std::atomic<uint32_t> waiters;  // sleepers registered; 0 lets Ring() skip the syscall
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

// Wakes every sleeper after the caller has published what they wait for.
void RingDoorbell(DoorbellWord* bell);
// RingDoorbell in two halves. AdvanceDoorbell publishes without waking: a
// waiter about to sleep sees the change and does not, but one already
// asleep stays asleep until WakeDoorbell (or its liveness slice, at most
// kLivenessSlice later). For a producer that batches wake-ups.
void AdvanceDoorbell(DoorbellWord* bell);
void WakeDoorbell(DoorbellWord* bell);

// Longest single futex sleep: how stale a liveness check can get.
inline constexpr std::chrono::milliseconds kLivenessSlice{10};
// A wait whose sleeps the bell ends this many times within a liveness
// slice with nothing ready stops listening to the bell (a peer ringing in
// a loop would make it a busy loop) and checks after timed sleeps of
// kDeafSleep instead, until it ends.
inline constexpr uint32_t kMaxFruitlessWakes = 64;
inline constexpr std::chrono::milliseconds kDeafSleep{1};

// Waits until `ready()` is true, as `policy` plans it (ipc/wait_policy.h:
// spin, nap until the answer is about due, poll), then sleeping on `bell`
// in slices of at most kLivenessSlice, checking `peer` between them; in one
// sleep until woken or `deadline` when `peer.hangups_watched()` (its
// hang-up then rings `bell`: BackendChannel::WatchHangups); after
// kMaxFruitlessWakes rings within a slice with nothing ready, in timed
// sleeps of kDeafSleep, checking `peer`'s flag and socket as before. Feeds the
// wait's length (and a nap's oversleep) back to `policy`; with no policy
// it sleeps at once.
// Returns OK when ready; kDeadlineExceeded at `deadline`, naming `what`;
// the liveness error when the peer is gone. `ready` must be cheap and must
// read shared memory with acquire loads.
[[nodiscard]] absl::Status WaitFor(DoorbellWord* bell, absl::FunctionRef<bool()> ready,
                                   Deadline deadline, const PeerLiveness& peer,
                                   WaitPolicy* policy, absl::string_view what);

// One futex wait on `word` while it still holds `expected`, for at most
// `timeout`. Spurious returns are allowed.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout);
// Wakes up to `count` waiters on `word`.
void FutexWake(std::atomic<uint32_t>* word, int count);

}  // namespace codecvisor::ipc

#endif  // CODECVISOR_IPC_DOORBELL_H_
