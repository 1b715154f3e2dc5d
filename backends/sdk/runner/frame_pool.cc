#include "backends/sdk/runner/frame_pool.h"

#include <cstdio>
#include <string>

namespace codecvisor::runner {

static_assert(CV_BUFFER_PADDING <= ipc::kSlotPadding, "slots must have the padding the SDK promises");

void PointAt(FrameTarget* target, const ipc::BackendArena::Slot& slot) {
  target->slot = slot;
  target->buffer.data = slot.bytes.data();
  target->buffer.capacity = slot.bytes.size();
}

FramePool::FramePool() : abi_{&FramePool::Borrow, &FramePool::GiveBack, &FramePool::Lend} {
  static_assert(std::is_standard_layout_v<FramePool> && offsetof(FramePool, abi_) == 0);
}

uint8_t* FramePool::Borrow(cv_frame_pool* self, uint64_t* capacity) {
  ipc::BackendArena* arena = From(self)->arena_.load(std::memory_order_acquire);
  std::optional<ipc::BackendArena::Slot> slot = arena != nullptr ? arena->Borrow() : std::nullopt;
  if (!slot.has_value()) return nullptr;
  if (capacity != nullptr) *capacity = slot->bytes.size();
  return slot->bytes.data();
}

void FramePool::GiveBack(cv_frame_pool* self, uint8_t* data) {
  FramePool* pool = From(self);
  ipc::BackendArena* arena = pool->arena_.load(std::memory_order_acquire);
  if (arena == nullptr) return;
  const std::optional<uint32_t> index = arena->PoolSlotAt(data);
  // Said at once, once per session: the session may never be closed.
  if ((!index.has_value() || !arena->GiveBack(*index)) && !pool->gave_back_unborrowed_.exchange(true)) {
    std::fprintf(stderr, "codecvisor-backend: frame pool: give_back() of an address that was not a borrowed slot "
                         "(a slot given back twice, or never borrowed)\n");
  }
}

void FramePool::ReportMisuseAtClose() {
  ipc::BackendArena* arena = arena_.load(std::memory_order_acquire);
  if (arena == nullptr) return;
  if (const uint32_t open = arena->borrowed_count(); open > 0) {
    std::fprintf(stderr, "codecvisor-backend: frame pool: %u slot(s) still borrowed when close_session returned; "
                         "every borrow must end before it returns\n", open);
  }
}

cv_status FramePool::Lend(cv_frame_pool* self, cv_frame_buffer* buffer, uint8_t* data, cv_error* error) {
  auto fail = [&](const std::string& why) {
    if (error != nullptr) std::snprintf(error->message, sizeof(error->message), "frame pool: %s", why.c_str());
    return CV_ERROR_INVALID_ARGUMENT;
  };
  ipc::BackendArena* arena = From(self)->arena_.load(std::memory_order_acquire);
  if (arena == nullptr || buffer == nullptr) return fail("no arena is attached, or no buffer was given");
  std::optional<uint32_t> index = arena->PoolSlotAt(data);
  if (!index.has_value()) return fail("lend() was given an address that is not a pool slot's start");
  auto* target = reinterpret_cast<FrameTarget*>(buffer);
  if (target->slot.has_value() && target->slot->index == *index) return CV_OK;  // lent again: the same slot
  const bool acquired_copy_slot =
      target->slot.has_value() && target->slot->index < arena->region_geometry().copy_slots();
  if (target->slot.has_value() && !acquired_copy_slot) {
    return fail("decode_frame already lent another pool slot for this frame");
  }
  absl::StatusOr<ipc::BackendArena::Slot> slot = arena->TakeBorrowed(*index);
  if (!slot.ok()) return fail(std::string(slot.status().message()));
  // The copy slot taken before the call (or by acquire) is not needed.
  if (acquired_copy_slot) arena->Abandon(target->slot->index);
  PointAt(target, *slot);
  return CV_OK;
}

}  // namespace codecvisor::runner
