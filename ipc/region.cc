#include "ipc/region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <utility>

#include "absl/strings/str_cat.h"

namespace codecvisor::ipc {
namespace {

constexpr uint64_t kPage = 4096;

// backends/testing/faults.cc attacks the region by these offsets (a test
// backend may not include ipc/); keep them, or update it with them.
static_assert(offsetof(RegionHeader, request_ring_bytes) == 16);
static_assert(offsetof(RegionHeader, response_ring_bytes) == 24);
static_assert(offsetof(RegionHeader, request) == 64);
static_assert(offsetof(RegionHeader, response) == 320);
static_assert(sizeof(RingControl) == 256 && offsetof(RingControl, tail) == 64);
static_assert(offsetof(RegionHeader, pool_slots) + sizeof(uint32_t) <= offsetof(RegionHeader, request),
              "Map reads the geometry from the bytes before the rings' control words");
static_assert(sizeof(RegionHeader) <= kPage, "the rings start on the second page");
constexpr uint64_t RoundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }
constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

absl::Status CheckRing(const char* name, uint64_t bytes) {
  if (bytes < kMinRingBytes || bytes > kMaxRingBytes || !std::has_single_bit(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(name, " of ", bytes,
                                                   " bytes: must be a power of two in [",
                                                   kMinRingBytes, ", ", kMaxRingBytes, "]"));
  }
  return absl::OkStatus();
}

// The leading bytes of the region MapPopulated(..., most) makes resident.
uint64_t PopulatedBytes(const Geometry& g, const Layout& layout, uint64_t most) {
  const uint64_t before_pool =
      g.pool_slots == 0 ? layout.total : layout.arena + uint64_t{g.copy_slots()} * g.slot_bytes;
  return std::min(before_pool, most) / 4096 * 4096;
}

// Maps the whole region with every page but the frame pool's in place:
// the host's mapping allocates the memfd's pages, the backend's maps them,
// so no frame pays a first-touch page fault (about 10 us each on a VM; a
// 1080p slot has 1,500 pages). Costs that time once, when the session
// opens. The pool's pages fault in as the backend's decoder first writes
// them (and the host's mapping as it first reads them), as a decoder's
// own picture buffers do in process; where the kernel cannot populate a
// range with MADV_POPULATE_WRITE (Linux 5.14+) the part before the pool is
// mapped again with MAP_POPULATE. At most `most` bytes are populated: the
// host allocates no more than kHostPopulatedBytes of a session's pages,
// whose memory counts against it; the backend's mapping allocates the rest
// when it attaches, against its own cgroup's memory_mb (a backend claiming
// frames of 8192x8192 costs the host at most kHostPopulatedBytes a session,
// since it reads a frame on the rest only once CheckAllocated finds its
// pages allocated).
void* MapPopulated(int fd, const Geometry& g, const Layout& layout, uint64_t most) {
  const uint64_t populate = PopulatedBytes(g, layout, most);
  if (populate == layout.total) {
    return mmap(nullptr, layout.total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  }
  void* base = mmap(nullptr, layout.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base != MAP_FAILED && populate > 0 && madvise(base, populate, MADV_POPULATE_WRITE) != 0) {
    // A kernel before 5.14: the same pages mapped again over the first
    // part, populated as the whole region used to be.
    if (mmap(base, populate, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0) == MAP_FAILED) {
      munmap(base, layout.total);
      return MAP_FAILED;
    }
  }
  return base;
}

}  // namespace

absl::Status Geometry::Validate() const {
  if (absl::Status s = CheckRing("request ring", request_ring_bytes); !s.ok()) return s;
  if (absl::Status s = CheckRing("response ring", response_ring_bytes); !s.ok()) return s;
  if (slot_count > kMaxSlots) {
    return absl::InvalidArgumentError(absl::StrCat(slot_count, " arena slots: at most ", kMaxSlots));
  }
  if (pool_slots != 0 && pool_slots >= slot_count) {
    return absl::InvalidArgumentError(
        absl::StrCat(pool_slots, " frame pool slots of ", slot_count, ": at least one slot must be for copies"));
  }
  if (slot_bytes % kPage != 0 || (slot_count > 0 && slot_bytes == 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("slot size ", slot_bytes, ": must be a positive multiple of ", kPage));
  }
  if (slot_bytes > kMaxArenaBytes || slot_count * slot_bytes > kMaxArenaBytes) {
    return absl::InvalidArgumentError(absl::StrCat("arena of ", slot_count, " x ", slot_bytes,
                                                   " bytes exceeds ", kMaxArenaBytes));
  }
  return absl::OkStatus();
}

uint64_t Geometry::SlotBytesFor(uint64_t frame_bytes) {
  // The size may come from the backend: one past the limit stays past it
  // (Validate rejects it) instead of wrapping to a small slot.
  frame_bytes = std::min<uint64_t>(frame_bytes, kMaxArenaBytes + 1);
  return RoundUp(std::max<uint64_t>(frame_bytes, 1) + kSlotPadding, kPage);
}

Layout Layout::For(const Geometry& g) {
  Layout l;
  l.request_ring = RoundUp(sizeof(RegionHeader), kPage);
  l.response_ring = l.request_ring + g.request_ring_bytes;
  l.arena = RoundUp(l.response_ring + g.response_ring_bytes, kPage);
  l.total = l.arena + g.slot_count * g.slot_bytes;
  return l;
}

Region::Region(UniqueFd memfd, uint8_t* base, const Geometry& geometry, uint64_t populated)
    : memfd_(std::move(memfd)),
      base_(base),
      geometry_(geometry),
      layout_(Layout::For(geometry)),
      populated_(populated) {}

Region::Region(Region&& other) noexcept
    : memfd_(std::move(other.memfd_)),
      base_(std::exchange(other.base_, nullptr)),
      geometry_(other.geometry_),
      layout_(other.layout_),
      populated_(other.populated_) {}

Region& Region::operator=(Region&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) munmap(base_, layout_.total);
    memfd_ = std::move(other.memfd_);
    base_ = std::exchange(other.base_, nullptr);
    geometry_ = other.geometry_;
    layout_ = other.layout_;
    populated_ = other.populated_;
  }
  return *this;
}

Region::~Region() {
  if (base_ != nullptr) munmap(base_, layout_.total);
}

absl::StatusOr<Region> Region::Create(const Geometry& geometry) {
  if (absl::Status s = geometry.Validate(); !s.ok()) return s;
  const Layout layout = Layout::For(geometry);
  UniqueFd fd(memfd_create("codecvisor-channel", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return ErrnoStatus("memfd_create(codecvisor-channel)");
  if (absl::Status s = SetMemfdSize(fd.get(), layout.total, "the channel's memfd"); !s.ok()) return s;
  // SECURITY: without these seals the backend could shrink the memfd and make
  // the host's next access to the arena raise SIGBUS.
  if (fcntl(fd.get(), F_ADD_SEALS, kSeals) != 0) return ErrnoStatus("fcntl(F_ADD_SEALS)");
  void* base = MapPopulated(fd.get(), geometry, layout, kHostPopulatedBytes);
  if (base == MAP_FAILED) return ErrnoStatus("mmap(channel memfd)");
  Region region(std::move(fd), static_cast<uint8_t*>(base), geometry,
                PopulatedBytes(geometry, layout, kHostPopulatedBytes));
  region.Reset();
  return region;
}

void Region::Reset() {
  // Every index, doorbell, slot state and hint starts at 0.
  auto* header = new (base_) RegionHeader{};
  header->magic = kRegionMagic;
  header->version = kRegionVersion;
  header->slot_count = geometry_.slot_count;
  header->request_ring_bytes = geometry_.request_ring_bytes;
  header->response_ring_bytes = geometry_.response_ring_bytes;
  header->slot_bytes = geometry_.slot_bytes;
  header->total_bytes = layout_.total;
  header->pool_slots = geometry_.pool_slots;
}

absl::StatusOr<Region> Region::Map(UniqueFd memfd) {
  struct stat st;
  if (fstat(memfd.get(), &st) != 0) return ErrnoStatus("fstat(channel memfd)");
  if (static_cast<uint64_t>(st.st_size) < sizeof(RegionHeader)) {
    return absl::DataLossError("channel memfd is smaller than its header");
  }
  int seals = fcntl(memfd.get(), F_GET_SEALS);
  if (seals < 0 || (seals & kSeals) != kSeals) {
    return absl::DataLossError("channel memfd is not sealed against resizing");
  }
  RegionHeader copy;
  if (RetryEintr([&] { return pread(memfd.get(), &copy, offsetof(RegionHeader, request), 0); }) !=
      static_cast<ssize_t>(offsetof(RegionHeader, request))) {
    return ErrnoStatus("pread(channel header)");
  }
  if (copy.magic != kRegionMagic || copy.version != kRegionVersion) {
    return absl::DataLossError(absl::StrCat("channel region has magic ", copy.magic, " version ",
                                            copy.version, "; expected version ", kRegionVersion));
  }
  Geometry g{copy.request_ring_bytes, copy.response_ring_bytes, copy.slot_count, copy.slot_bytes,
             copy.pool_slots};
  if (absl::Status s = g.Validate(); !s.ok()) return absl::DataLossError(s.message());
  const Layout layout = Layout::For(g);
  if (layout.total != copy.total_bytes || layout.total != static_cast<uint64_t>(st.st_size)) {
    return absl::DataLossError(absl::StrCat("channel memfd is ", st.st_size,
                                            " bytes; its geometry needs ", layout.total));
  }
  void* base = MapPopulated(memfd.get(), g, layout, UINT64_MAX);
  if (base == MAP_FAILED) return ErrnoStatus("mmap(channel memfd)");
  return Region(std::move(memfd), static_cast<uint8_t*>(base), g, layout.total);
}

absl::Status Region::CheckAllocated(uint64_t offset, uint64_t bytes) const {
  const uint64_t end = offset + bytes;
  uint64_t from = std::max(offset, populated_) / kPage * kPage;
  if (from >= end || !memfd_.valid()) return absl::OkStatus();
  // mincore() of this side's mapping, a chunk at a time, bounded by the
  // range (lseek(SEEK_HOLE) would scan on to the first hole: to the end of
  // a region whose pages are all there). A page it finds in memory is
  // allocated; one it does not is asked of the memfd (SEEK_DATA), for which
  // a page in swap is data too: only a hole, a page no one allocated, fails.
  constexpr uint64_t kChunkPages = 512;
  unsigned char resident[kChunkPages];
  while (from < end) {
    const uint64_t pages = std::min(kChunkPages, (end - from + kPage - 1) / kPage);
    if (mincore(base_ + from, pages * kPage, resident) != 0) return ErrnoStatus("mincore(channel region)");
    for (uint64_t i = 0; i < pages; ++i) {
      if (resident[i] & 1) continue;
      const auto page = static_cast<off_t>(from + i * kPage);
      if (lseek(memfd_.get(), page, SEEK_DATA) != page) {
        return absl::DataLossError(absl::StrCat("bytes [", offset, ", ", end, ") of the region hold a page at ", page,
                                                " the backend never wrote: reading it would allocate it in this "
                                                "process"));
      }
    }
    from += pages * kPage;
  }
  return absl::OkStatus();
}

}  // namespace codecvisor::ipc
