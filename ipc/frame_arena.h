// File: ipc/frame_arena.h
//
// The frame arena's two halves. The backend claims free slots and writes
// pixels into them (BackendArena); the host validates every frame reference
// against its own geometry, tracks which slots it holds, and frees them when
// the caller lets go (HostArena, FrameLease). Slot states live in shared
// memory, but the host decides nothing from them: its private `held_` set is
// the truth on its side. See ipc/README.md for the ownership cycle.

#ifndef CODECVISOR_IPC_FRAME_ARENA_H_
#define CODECVISOR_IPC_FRAME_ARENA_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "ipc/doorbell.h"
#include "ipc/messages.h"
#include "ipc/region.h"

namespace codecvisor::ipc {

// Largest frame side we accept from a backend (16K video is 15360 wide).
inline constexpr uint32_t kMaxFrameSide = 32768;

// The planes a frame of `format` has: 1 for RGB24, 3 for planar RGB, 0 for
// native (any count up to kMaxPlanes).
inline size_t PlanesOf(OutputFormat format) {
  return format == OutputFormat::kRgb24 ? 1 : format == OutputFormat::kRgb24Planar ? 3 : 0;
}
// The least stride a plane of a `width`-pixel frame of `format` can have: a
// row of samples for RGB (3 bytes each interleaved, 1 planar); 0 natively.
inline uint64_t MinPlaneStride(OutputFormat format, uint32_t width) {
  return format == OutputFormat::kRgb24 ? uint64_t{width} * 3 : format == OutputFormat::kRgb24Planar ? width : 0;
}

// OK if `ref` describes bytes wholly inside one slot of `geometry`, followed
// there by at least kSlotPadding more (region.h), with
// planes that fit in [offset, offset + size) and match its format. Pure
// arithmetic on private values, overflow-checked; kDataLoss otherwise.
[[nodiscard]] absl::Status ValidateFrameRef(const FrameRef& ref, const Geometry& geometry);

// Host side. Thread-safe: leases are released from caller threads.
class HostArena : public std::enable_shared_from_this<HostArena> {
 public:
  explicit HostArena(std::shared_ptr<const Region> region);

  // Validates `ref` and records its slot as held by the host. kDataLoss if
  // the reference is out of bounds, names a slot the host already holds,
  // or lies on pages past the host's populated share that no one allocated
  // (Region::CheckAllocated: the frame's bytes and the padding after them).
  [[nodiscard]] absl::Status Claim(const FrameRef& ref);
  // Frees a held slot for the backend and rings the slot doorbell. Releasing
  // a slot that is not held is a no-op (counted in misuse_count()).
  void Release(uint32_t slot);
  size_t held_count() const;
  // Held copy slots (Geometry::copy_slots): the backend waits for a copy
  // slot when the host holds them all, whatever it holds of the pool.
  size_t held_copy_count() const;
  uint64_t misuse_count() const;
  const Region& region() const { return *region_; }

 private:
  std::shared_ptr<const Region> region_;
  mutable codecvisor::Mutex mu_;
  std::vector<bool> held_ ABSL_GUARDED_BY(mu_);
  uint64_t misuse_ ABSL_GUARDED_BY(mu_) = 0;
};

// A claimed frame: a read-only view of its bytes in the arena. Releases the
// slot when destroyed, and keeps the mapping alive until then, even if the
// channel is gone. Movable, not copyable.
class FrameLease {
 public:
  FrameLease() = default;
  FrameLease(std::shared_ptr<HostArena> arena, FrameRef ref);
  FrameLease(FrameLease&& other) noexcept = default;
  FrameLease& operator=(FrameLease&& other) noexcept;
  FrameLease(const FrameLease&) = delete;
  FrameLease& operator=(const FrameLease&) = delete;
  ~FrameLease() { Reset(); }

  const FrameRef& ref() const { return ref_; }
  // The frame's bytes, [ref.offset, ref.offset + ref.size) of its slot.
  // SECURITY: the backend can still write them; copy out what must not change.
  std::span<const uint8_t> bytes() const;
  // Releases the slot now.
  void Reset();
  bool valid() const { return arena_ != nullptr; }

 private:
  std::shared_ptr<HostArena> arena_;
  FrameRef ref_;
};

// Backend side. One session thread per channel claims, lends and
// abandons; the frame pool's Borrow and GiveBack are thread-safe (a
// decoder's threads call them).
class BackendArena {
 public:
  explicit BackendArena(const Region* region)
      : region_(region),
        borrowed_(region->geometry().pool_slots, false),
        taken_(region->geometry().pool_slots, false),
        populated_(region->geometry().pool_slots, false) {}

  struct Slot {
    uint32_t index;
    std::span<uint8_t> bytes;
  };
  // Claims a free copy slot (Geometry::copy_slots), waiting on the slot
  // doorbell until `deadline` if all are lent (backpressure).
  // kResourceExhausted at the deadline.
  [[nodiscard]] absl::StatusOr<Slot> Acquire(Deadline deadline, const PeerLiveness& peer,
                                             WaitPolicy* policy);
  // Marks a claimed slot as lent, just before its FrameRef is sent.
  void Lend(uint32_t index);
  // Returns a claimed slot unused (e.g. the decode failed).
  void Abandon(uint32_t index);
  // True if Acquire would not wait now (only the backend claims slots, so
  // it stays true until the backend's next Acquire).
  bool HasFreeSlot() const { return FreeSlots() != 0; }
  // How many copy slots are free now (the host may free more at any moment).
  uint32_t FreeSlots() const;

  // The frame pool (ipc/README.md, "Frame pool"). Borrow claims a free
  // pool slot that no one borrows, for the backend's own use until
  // GiveBack; nullopt when there is none (it never waits). A borrowed
  // slot is never claimed by Acquire nor borrowed again, whatever the host
  // does with it. A slot's first borrow allocates all its pages (the
  // host reads frames only on pages allocated: HostArena::Claim).
  std::optional<Slot> Borrow();
  // Ends the borrow of `index`; false (and nothing done) for a slot not
  // borrowed. A slot the host holds stays the host's until it frees it.
  bool GiveBack(uint32_t index);
  // Makes borrowed slot `index` this frame's, as Acquire does a copy slot:
  // then Lend (or Abandon) it; a GiveBack before then leaves the slot to
  // that Lend or Abandon. The borrow goes on. FailedPrecondition if
  // the slot is not borrowed, or is still lent to the host (a decoder
  // that shows a picture twice while the caller holds the first).
  [[nodiscard]] absl::StatusOr<Slot> TakeBorrowed(uint32_t index);
  // The pool slot whose bytes start at `data`, if any.
  std::optional<uint32_t> PoolSlotAt(const uint8_t* data) const;
  const Geometry& region_geometry() const { return region_->geometry(); }
  uint32_t borrowed_count() const;

 private:
  // Claims the lowest-numbered free slot. With a host that lets each frame
  // go promptly, the backend then alternates between two slots that stay in
  // cache, and the others are never written (nor made resident). Round robin
  // over every slot would spread each frame's writes over the whole arena
  // (4 x 6.2 MB at 1080p RGB24, most of a shared L3).
  bool TryClaim(uint32_t* index);
  Slot SlotFor(uint32_t index) const { return Slot{index, {region_->slot(index), region_->geometry().slot_bytes}}; }
  // Stores `state` for slot `index` (Lend, Abandon); a pool slot is no
  // longer taken.
  void Settle(uint32_t index, SlotState state);
  // The borrowed pool slot `index`'s place in borrowed_ and taken_, or
  // nullopt if it is no such slot.
  std::optional<uint32_t> BorrowedPoolIndex(uint32_t index) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(pool_mu_);

  const Region* region_;
  mutable codecvisor::Mutex pool_mu_;
  std::vector<bool> borrowed_ ABSL_GUARDED_BY(pool_mu_);  // by pool slot, from copy_slots()
  std::vector<bool> taken_ ABSL_GUARDED_BY(pool_mu_);     // TakeBorrowed, not yet lent or abandoned
  std::vector<bool> populated_ ABSL_GUARDED_BY(pool_mu_);  // pages allocated at a borrow (PopulateForWriting)
};

}  // namespace codecvisor::ipc

#endif  // CODECVISOR_IPC_FRAME_ARENA_H_
