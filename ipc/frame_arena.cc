#include "ipc/frame_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace codecvisor::ipc {
namespace {

absl::Status Bad(const FrameRef& ref, absl::string_view why) {
  return absl::DataLossError(absl::StrCat("frame reference (slot ", ref.slot, ", offset ", ref.offset,
                                          ", size ", ref.size, "): ", why));
}

// Allocates every page of `bytes` (a slot this side owns), against this
// process's memory: MADV_POPULATE_WRITE, or where the kernel lacks it
// (before 5.14) a write to each page.
void PopulateForWriting(std::span<uint8_t> bytes) {
  if (bytes.empty() || madvise(bytes.data(), bytes.size(), MADV_POPULATE_WRITE) == 0) return;
  for (size_t at = 0; at < bytes.size(); at += 4096) bytes[at] = 0;
}

std::atomic<uint32_t>& StateOf(const Region& region, uint32_t slot) {
  return region.header()->slot_state[slot];
}

}  // namespace

absl::Status ValidateFrameRef(const FrameRef& ref, const Geometry& geometry) {
  if (ref.slot >= geometry.slot_count) {
    return Bad(ref, absl::StrCat("slot out of range; the arena has ", geometry.slot_count));
  }
  if (ref.offset > geometry.slot_bytes || ref.size > geometry.slot_bytes - ref.offset) {
    return Bad(ref, absl::StrCat("extends past the slot's ", geometry.slot_bytes, " bytes"));
  }
  if (geometry.slot_bytes - ref.offset - ref.size < kSlotPadding) {
    return Bad(ref, absl::StrCat("leaves fewer than ", kSlotPadding, " bytes of the slot's ", geometry.slot_bytes,
                                 " after it"));
  }
  if (ref.width == 0 || ref.height == 0 || ref.width > kMaxFrameSide || ref.height > kMaxFrameSide) {
    return Bad(ref, absl::StrCat("impossible size ", ref.width, "x", ref.height));
  }
  const size_t want_planes = PlanesOf(ref.format);
  if (ref.planes.empty() || ref.planes.size() > kMaxPlanes ||
      (want_planes != 0 && ref.planes.size() != want_planes)) {
    return Bad(ref, absl::StrCat(ref.planes.size(), " planes for its format"));
  }
  const uint64_t min_stride = MinPlaneStride(ref.format, ref.width);
  const uint64_t end = ref.offset + ref.size;
  for (const Plane& p : ref.planes) {
    // stride * rows fits in 64 bits: both are 32-bit.
    const uint64_t plane_bytes = uint64_t{p.stride} * p.rows;
    if (p.offset < ref.offset || p.offset > end || plane_bytes > end - p.offset) {
      return Bad(ref, absl::StrCat("plane at ", p.offset, " of ", p.stride, "x", p.rows,
                                   " bytes lies outside the frame"));
    }
    if (p.rows == 0 || p.rows > ref.height || p.stride < min_stride ||
        (ref.format != OutputFormat::kNative && p.rows != ref.height)) {
      return Bad(ref, absl::StrCat("plane of ", p.stride, "x", p.rows, " does not fit a ", ref.width,
                                   "x", ref.height, " frame"));
    }
  }
  return absl::OkStatus();
}

HostArena::HostArena(std::shared_ptr<const Region> region)
    : region_(std::move(region)), held_(region_->geometry().slot_count, false) {}

absl::Status HostArena::Claim(const FrameRef& ref) {
  if (absl::Status s = ValidateFrameRef(ref, region_->geometry()); !s.ok()) return s;
  // Every byte the host may read of the frame: its range (a copy takes it
  // whole) and the padding after it that a converter's loads reach.
  // ValidateFrameRef has kept both inside the slot.
  const auto slot_at = static_cast<uint64_t>(region_->slot(ref.slot) - region_->base());
  if (absl::Status s = region_->CheckAllocated(slot_at + ref.offset, ref.size + kSlotPadding); !s.ok()) {
    return Bad(ref, s.message());
  }
  codecvisor::MutexLock lock(&mu_);
  if (held_[ref.slot]) return Bad(ref, "the host still holds this slot");
  held_[ref.slot] = true;
  return absl::OkStatus();
}

void HostArena::Release(uint32_t slot) {
  {
    codecvisor::MutexLock lock(&mu_);
    if (slot >= held_.size() || !held_[slot]) {
      ++misuse_;
      return;
    }
    held_[slot] = false;
  }
  StateOf(*region_, slot).store(static_cast<uint32_t>(SlotState::kFree), std::memory_order_release);
  RingDoorbell(&region_->header()->slot_bell);
}

size_t HostArena::held_count() const {
  codecvisor::MutexLock lock(&mu_);
  size_t n = 0;
  for (bool h : held_) n += h;
  return n;
}

size_t HostArena::held_copy_count() const {
  const uint32_t copies = region_->geometry().copy_slots();
  codecvisor::MutexLock lock(&mu_);
  size_t n = 0;
  for (uint32_t i = 0; i < copies; ++i) n += held_[i];
  return n;
}

uint64_t HostArena::misuse_count() const {
  codecvisor::MutexLock lock(&mu_);
  return misuse_;
}

FrameLease::FrameLease(std::shared_ptr<HostArena> arena, FrameRef ref)
    : arena_(std::move(arena)), ref_(std::move(ref)) {}

FrameLease& FrameLease::operator=(FrameLease&& other) noexcept {
  if (this != &other) {
    Reset();
    arena_ = std::move(other.arena_);
    ref_ = std::move(other.ref_);
  }
  return *this;
}

std::span<const uint8_t> FrameLease::bytes() const {
  if (arena_ == nullptr) return {};
  return {arena_->region().slot(ref_.slot) + ref_.offset, ref_.size};
}

void FrameLease::Reset() {
  if (arena_ != nullptr) {
    arena_->Release(ref_.slot);
    arena_.reset();
  }
}

bool BackendArena::TryClaim(uint32_t* index) {
  const uint32_t n = region_->geometry().copy_slots();
  for (uint32_t slot = 0; slot < n; ++slot) {
    uint32_t expected = static_cast<uint32_t>(SlotState::kFree);
    if (StateOf(*region_, slot).compare_exchange_strong(expected,
                                                        static_cast<uint32_t>(SlotState::kWriting),
                                                        std::memory_order_acq_rel)) {
      *index = slot;
      return true;
    }
  }
  return false;
}

absl::StatusOr<BackendArena::Slot> BackendArena::Acquire(Deadline deadline, const PeerLiveness& peer,
                                                         WaitPolicy* policy) {
  if (region_->geometry().slot_count == 0) return absl::FailedPreconditionError("channel has no arena");
  uint32_t index = 0;
  absl::Status waited = WaitFor(&region_->header()->slot_bell, [&] { return TryClaim(&index); },
                                deadline, peer, policy, "a free frame slot (the host holds them all)");
  if (!waited.ok()) {
    if (absl::IsDeadlineExceeded(waited)) return absl::ResourceExhaustedError(waited.message());
    return waited;
  }
  return SlotFor(index);
}

void BackendArena::Lend(uint32_t index) { Settle(index, SlotState::kLent); }

void BackendArena::Settle(uint32_t index, SlotState state) {
  const uint32_t first = region_->geometry().copy_slots();
  if (index < first) {
    StateOf(*region_, index).store(static_cast<uint32_t>(state), std::memory_order_release);
    return;
  }
  // A pool slot: settled under the lock, against a GiveBack on a decoder
  // thread; no longer taken. Freed, it is borrowable again unless still
  // borrowed (then the decoder's).
  codecvisor::MutexLock lock(&pool_mu_);
  if (index - first < taken_.size()) taken_[index - first] = false;
  StateOf(*region_, index).store(static_cast<uint32_t>(state), std::memory_order_release);
}

uint32_t BackendArena::FreeSlots() const {
  uint32_t free = 0;
  for (uint32_t slot = 0; slot < region_->geometry().copy_slots(); ++slot) {
    if (StateOf(*region_, slot).load(std::memory_order_acquire) == static_cast<uint32_t>(SlotState::kFree)) ++free;
  }
  return free;
}

void BackendArena::Abandon(uint32_t index) { Settle(index, SlotState::kFree); }

std::optional<BackendArena::Slot> BackendArena::Borrow() {
  const uint32_t first = region_->geometry().copy_slots();
  std::optional<Slot> slot;
  bool populate = false;
  {
    codecvisor::MutexLock lock(&pool_mu_);
    for (uint32_t i = 0; i < borrowed_.size(); ++i) {
      if (borrowed_[i]) continue;
      // Not borrowed: free, or lent to the host since its borrow ended.
      uint32_t expected = static_cast<uint32_t>(SlotState::kFree);
      if (StateOf(*region_, first + i)
              .compare_exchange_strong(expected, static_cast<uint32_t>(SlotState::kWriting),
                                       std::memory_order_acq_rel)) {
        borrowed_[i] = true;
        populate = !populated_[i];
        populated_[i] = true;
        slot = SlotFor(first + i);
        break;
      }
    }
  }
  // A pool slot's pages are allocated once, here, all of them: the host
  // refuses a frame on pages no one allocated (HostArena::Claim), and a
  // decoder need not write every byte of its frame's range. Outside the
  // lock: the first borrow of each slot pays its page faults, as the
  // decoder's first writes would.
  if (slot.has_value() && populate) PopulateForWriting(slot->bytes);
  return slot;
}

std::optional<uint32_t> BackendArena::BorrowedPoolIndex(uint32_t index) const {
  const uint32_t first = region_->geometry().copy_slots();
  if (index < first || index - first >= borrowed_.size() || !borrowed_[index - first]) return std::nullopt;
  return index - first;
}

bool BackendArena::GiveBack(uint32_t index) {
  codecvisor::MutexLock lock(&pool_mu_);
  const std::optional<uint32_t> i = BorrowedPoolIndex(index);
  if (!i.has_value()) return false;
  borrowed_[*i] = false;
  // Taken for a frame the session thread has yet to lend or abandon: it
  // settles the state then.
  if (taken_[*i]) return true;
  // Never lent, or abandoned: free again. Lent: the host frees it.
  uint32_t expected = static_cast<uint32_t>(SlotState::kWriting);
  StateOf(*region_, index).compare_exchange_strong(expected, static_cast<uint32_t>(SlotState::kFree),
                                                   std::memory_order_acq_rel);
  return true;
}

absl::StatusOr<BackendArena::Slot> BackendArena::TakeBorrowed(uint32_t index) {
  codecvisor::MutexLock lock(&pool_mu_);
  const std::optional<uint32_t> i = BorrowedPoolIndex(index);
  if (!i.has_value()) return absl::FailedPreconditionError(absl::StrCat("slot ", index, " is not borrowed"));
  std::atomic<uint32_t>& state = StateOf(*region_, index);
  if (state.load(std::memory_order_acquire) == static_cast<uint32_t>(SlotState::kLent)) {
    return absl::FailedPreconditionError(absl::StrCat("slot ", index, " is still lent to the host"));
  }
  // Free (the host let it go) or writing (never lent): this frame's now,
  // until Lend or Abandon, whatever GiveBack does meanwhile.
  state.store(static_cast<uint32_t>(SlotState::kWriting), std::memory_order_release);
  taken_[*i] = true;
  return SlotFor(index);
}

std::optional<uint32_t> BackendArena::PoolSlotAt(const uint8_t* data) const {
  const Geometry& g = region_->geometry();
  const auto address = reinterpret_cast<uintptr_t>(data);
  const auto pool = reinterpret_cast<uintptr_t>(region_->slot(g.copy_slots()));
  if (g.pool_slots == 0 || address < pool || (address - pool) % g.slot_bytes != 0) return std::nullopt;
  const uint64_t i = (address - pool) / g.slot_bytes;
  if (i >= g.pool_slots) return std::nullopt;
  return g.copy_slots() + static_cast<uint32_t>(i);
}

uint32_t BackendArena::borrowed_count() const {
  codecvisor::MutexLock lock(&pool_mu_);
  uint32_t n = 0;
  for (bool b : borrowed_) n += b ? 1 : 0;
  return n;
}

}  // namespace codecvisor::ipc
