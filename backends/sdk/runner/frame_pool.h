// File: backends/sdk/runner/frame_pool.h
//
// The runner's side of the SDK's frame pool (cv_frame_pool in
// codecvisor_backend.h): the C callbacks a vendor's decoder borrows arena
// slots through, over the session channel's ipc::BackendArena, and the
// buffer one decode_frame call writes into (FrameTarget), which a lent
// pool slot becomes. Runs in the sandboxed child.
//
// Thread-safety: borrow and give_back come from any of the vendor's
// threads (a decoder's frame threads); lend comes from decode_frame on the
// session thread. Attach happens once, before the session thread starts.

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_FRAME_POOL_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_FRAME_POOL_H_

#include <atomic>
#include <cstddef>
#include <optional>
#include <type_traits>

#include "absl/status/status.h"
#include "backends/sdk/codecvisor_backend.h"
#include "ipc/channel.h"
#include "ipc/frame_arena.h"

namespace codecvisor::runner {

// The buffer one decode_frame call writes into, and the slot behind it:
// claimed before the call, or by the backend through `buffer.acquire`
// (late buffers) or the pool's `lend`. `buffer` comes first, so the
// callbacks find the rest from its address.
struct FrameTarget {
  cv_frame_buffer buffer{};
  ipc::BackendChannel* channel = nullptr;
  std::optional<ipc::BackendArena::Slot> slot;
  absl::Status acquire_failure;  // why acquire() could not lend a slot
};
static_assert(std::is_standard_layout_v<FrameTarget> && offsetof(FrameTarget, buffer) == 0);

// Makes `slot` the target's buffer.
void PointAt(FrameTarget* target, const ipc::BackendArena::Slot& slot);

class FramePool {
 public:
  FramePool();
  FramePool(const FramePool&) = delete;
  FramePool& operator=(const FramePool&) = delete;

  // What the vendor is given (cv_open_options.frame_pool).
  cv_frame_pool* abi() { return &abi_; }
  // From now on borrow lends `arena`'s pool slots (none before).
  void Attach(ipc::BackendArena* arena) { arena_.store(arena, std::memory_order_release); }
  // After close_session: says on stderr (relayed by the host, and failed
  // by the conformance suite's frame_pool check) if borrows are still open.
  // A slot given back that was not borrowed (twice, or never) is said as
  // it happens, once per session.
  void ReportMisuseAtClose();

 private:
  static uint8_t* Borrow(cv_frame_pool* self, uint64_t* capacity);
  static void GiveBack(cv_frame_pool* self, uint8_t* data);
  static cv_status Lend(cv_frame_pool* self, cv_frame_buffer* buffer, uint8_t* data, cv_error* error);
  static FramePool* From(cv_frame_pool* self) { return reinterpret_cast<FramePool*>(self); }

  cv_frame_pool abi_;  // first: the callbacks find `this` from it
  std::atomic<ipc::BackendArena*> arena_{nullptr};
  std::atomic<bool> gave_back_unborrowed_{false};
};

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_FRAME_POOL_H_
