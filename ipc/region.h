// File: ipc/region.h
//
// The channel's shared region: one sealed memfd, mapped MAP_SHARED by host
// and backend. This file owns the layout (ipc/README.md draws it) and the
// mapping's lifetime. SECURITY: the host computes every offset from the
// Geometry it chose and never re-reads the header the peer can write.

#ifndef CODECVISOR_IPC_REGION_H_
#define CODECVISOR_IPC_REGION_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ipc/doorbell.h"
#include "ipc/unique_fd.h"

namespace codecvisor::ipc {

inline constexpr uint64_t kRegionMagic = 0x314e4843'56434443;  // "CDCVCHN1"
inline constexpr uint32_t kRegionVersion = 7;
inline constexpr uint32_t kMaxSlots = 256;
// Caps on what a peer may ask the other side to map: 64 MiB per ring, and
// 8 GiB for the whole arena (two 8K RGB frames fit in 400 MiB).
inline constexpr uint64_t kMaxRingBytes = 64ull << 20;
inline constexpr uint64_t kMinRingBytes = 4096;
inline constexpr uint64_t kMaxArenaBytes = 8ull << 30;
// The most of a region's pages the host allocates when it creates it (4
// slots of 4K RGB fit); the backend's mapping allocates the rest.
inline constexpr uint64_t kHostPopulatedBytes = 128ull << 20;

// The sizes that define a region. Ring sizes are powers of two; slot sizes
// are multiples of the page size.
// Slack after each frame in its slot: a backend's converter may write this
// far past the frame's last byte (CV_BUFFER_PADDING in the SDK header; the
// runner checks the two agree), and the host's RGB converter may read this
// far past it (swscale loads whole blocks of pixels), never using what it
// reads there. The host refuses a frame that leaves less in its slot.
inline constexpr uint64_t kSlotPadding = 256;

struct Geometry {
  uint64_t request_ring_bytes = 64 << 10;
  uint64_t response_ring_bytes = 256 << 10;
  uint32_t slot_count = 8;
  uint64_t slot_bytes = 0;
  // The last `pool_slots` of the slot_count slots form the frame pool: the
  // backend may borrow them for its decoder's own pictures and lend one to
  // the host as a frame without copying it (ipc/README.md, "Frame pool").
  // Their pages are not made resident in advance: a decoder's own buffers
  // fault in as they are first written, in process or not. Less than
  // slot_count, so that at least one slot is for copies.
  uint32_t pool_slots = 0;

  // The slots a frame is copied into: [0, copy_slots()).
  uint32_t copy_slots() const { return slot_count - pool_slots; }

  // OK if every field is within the limits above.
  [[nodiscard]] absl::Status Validate() const;
  // `frame_bytes` plus kSlotPadding, rounded up to whole pages, for
  // slot_bytes; past kMaxArenaBytes for any frame_bytes past it (no wrap).
  static uint64_t SlotBytesFor(uint64_t frame_bytes);
};

// One ring's control words, each on its own cache line so that producer and
// consumer do not false-share.
struct RingControl {
  alignas(64) std::atomic<uint64_t> head;  // consumer's index, written by the consumer only
  alignas(64) std::atomic<uint64_t> tail;  // producer's index, written by the producer only
  alignas(64) DoorbellWord data_bell;      // rung by the producer after publishing `tail`
  alignas(64) DoorbellWord space_bell;     // rung by the consumer after advancing `head`
};

enum class SlotState : uint32_t { kFree = 0, kWriting = 1, kLent = 2 };

struct RegionHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t slot_count;
  uint64_t request_ring_bytes;
  uint64_t response_ring_bytes;
  uint64_t slot_bytes;
  uint64_t total_bytes;
  uint32_t pool_slots;
  RingControl request;
  RingControl response;
  alignas(64) DoorbellWord slot_bell;  // rung by the host after freeing a slot
  // Crash hints, written by the runner about itself and read by the host
  // only after the backend died, to tell which request killed it. A lying
  // backend can only get its own requests blamed.
  alignas(64) std::atomic<uint32_t> backend_in_call;       // a vendor call is running for this channel
  std::atomic<uint32_t> backend_fault_signal;              // the signal that call died of
  std::atomic<int32_t> backend_violation_syscall;          // for SIGSYS: the syscall the sandbox denied, +1
  std::atomic<uint64_t> backend_call_token;                // control channel: the open in that call (its file token)
  std::atomic<uint32_t> backend_exit_code;                 // the code that call passed to exit()/_exit(), +1
  // Control region only: a fault on a thread in no vendor call (a plugin's
  // own worker thread, the runner's code). It names no request.
  std::atomic<uint32_t> backend_stray_fault_signal;
  // Control region only: set by the fault handler when the process's
  // address space (RLIMIT_AS, the manifest's memory_mb) had less than an
  // eighth of it left: an allocation failing there is the likely cause.
  std::atomic<uint32_t> backend_address_space_full;
  // Control region only: set by the runner's close watchdog just before it
  // ends the process because a close_session ran past its limit.
  std::atomic<uint32_t> backend_close_hung;
  // Set by the runner when its side of a session channel is done with the
  // region for good (the vendor session is closed, nothing of it writes
  // here any more): the host may then give the region to the same
  // backend's next session (ipc/region_cache.h).
  std::atomic<uint32_t> backend_detached;
  alignas(64) std::atomic<uint32_t> slot_state[kMaxSlots];
};

// Byte offsets of each part, derived from a Geometry alone.
struct Layout {
  uint64_t request_ring = 0;
  uint64_t response_ring = 0;
  uint64_t arena = 0;
  uint64_t total = 0;
  static Layout For(const Geometry& g);
};

// A mapped region. Movable, not copyable; unmaps and closes on destruction.
// Thread-safe to read concurrently; it holds no mutable state of its own.
class Region {
 public:
  // Both sides make every page of the region resident at once, but the
  // frame pool's, so that no frame copied into a slot pays a first-touch
  // page fault.
  // Host side: creates, sizes, initialises and seals a memfd for `geometry`.
  [[nodiscard]] static absl::StatusOr<Region> Create(const Geometry& geometry);
  // Backend side: maps a region the host created, checking the header and
  // that the memfd is sealed and as large as the header claims.
  [[nodiscard]] static absl::StatusOr<Region> Map(UniqueFd memfd);

  // Host side: makes the header what Create wrote (indices, doorbells,
  // slot states and hints back to zero), for a region reused by another
  // session. The rings' and slots' bytes are left as they are.
  void Reset();

  Region(Region&& other) noexcept;
  Region& operator=(Region&& other) noexcept;
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  ~Region();

  const Geometry& geometry() const { return geometry_; }
  const Layout& layout() const { return layout_; }
  int fd() const { return memfd_.get(); }
  // Closes this process's descriptor of the memfd and keeps the mapping:
  // what a forked child does with its copy of a parent's region.
  void CloseDescriptor() { memfd_.reset(); }
  // Host side: kDataLoss if [offset, offset + bytes) of the region (inside
  // it) has a page past those the host populated itself that no one has
  // allocated: the backend's to allocate, against its own memory limit,
  // and a read of it here would allocate it against the host's. A backend
  // cannot free a page once allocated (its seccomp filter refuses
  // MADV_REMOVE and punching holes), so a check holds until the region
  // goes. OK without a descriptor (a forked child's copy, which reads no
  // frames).
  [[nodiscard]] absl::Status CheckAllocated(uint64_t offset, uint64_t bytes) const;
  RegionHeader* header() const { return reinterpret_cast<RegionHeader*>(base_); }
  uint8_t* base() const { return base_; }
  uint8_t* request_ring() const { return base_ + layout_.request_ring; }
  uint8_t* response_ring() const { return base_ + layout_.response_ring; }
  uint8_t* slot(uint32_t index) const { return base_ + layout_.arena + index * geometry_.slot_bytes; }

 private:
  Region(UniqueFd memfd, uint8_t* base, const Geometry& geometry, uint64_t populated);

  UniqueFd memfd_;
  uint8_t* base_ = nullptr;
  Geometry geometry_;
  Layout layout_;
  uint64_t populated_ = 0;  // the leading bytes this side's mapping populated
};

}  // namespace codecvisor::ipc

#endif  // CODECVISOR_IPC_REGION_H_
