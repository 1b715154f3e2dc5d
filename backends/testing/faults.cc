#include "backends/testing/faults.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

#include "backends/testing/forger.h"

namespace codecvisor::testing {
namespace {

constexpr uint64_t kRegionMagic = 0x314e4843'56434443;  // ipc/region.h; test code may not depend on ipc/
constexpr uint64_t kPage = 4096;

// The channel region's first byte: the arena lies in the same mapping as the
// header, so walk back page by page to the magic.
uint8_t* FindRegion(uint8_t* inside) {
  auto page = reinterpret_cast<uintptr_t>(inside) & ~(kPage - 1);
  for (int i = 0; i < (1 << 20); ++i, page -= kPage) {
    uint64_t magic;
    std::memcpy(&magic, reinterpret_cast<void*>(page), sizeof(magic));
    if (magic == kRegionMagic) return reinterpret_cast<uint8_t*>(page);
  }
  return nullptr;
}

// Offsets in RegionHeader (ipc/region.h): magic(8) version(4) slots(4)
// request_ring_bytes(8) response_ring_bytes(8) slot_bytes(8) total(8), then
// two 256-byte RingControls (head at +0, tail at +64, the data doorbell's
// sequence word at +128).
constexpr size_t kResponseRingBytesAt = 24;
constexpr size_t kRequestControlAt = 64;
constexpr size_t kResponseControlAt = kRequestControlAt + 256;

void WriteGarbage(uint8_t* region, bool oversized) {
  uint64_t request_ring, response_ring;
  std::memcpy(&request_ring, region + 16, 8);
  std::memcpy(&response_ring, region + kResponseRingBytesAt, 8);
  auto* tail = reinterpret_cast<std::atomic<uint64_t>*>(region + kResponseControlAt + 64);
  const uint64_t at = tail->load();
  uint8_t* ring = region + 4096 + request_ring;  // rings start at the first page after the header
  uint32_t header[2];
  if (oversized) {
    header[0] = 0x7fffff00;  // far beyond the 1 MiB limit
    header[1] = ~header[0];
  } else {
    header[0] = 64;
    header[1] = ~header[0];
  }
  std::memcpy(ring + (at & (response_ring - 1)), header, 8);
  for (int i = 0; i < 64; ++i) ring[(at + 8 + i) & (response_ring - 1)] = static_cast<uint8_t>(0xa5 ^ i * 31);
  tail->store(at + 72);
  // Ring the host's doorbell, as the runner would: a host asleep until its
  // deadline reads the record now. Then stay inside the vendor call, so
  // that the runner does not write its own reply over the record before
  // the host has read it.
  auto* bell = reinterpret_cast<std::atomic<uint32_t>*>(region + kResponseControlAt + 128);
  bell->fetch_add(1);
  syscall(SYS_futex, bell, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  usleep(200'000);
}

}  // namespace

void InjectFault(const std::string& fault, cv_frame_buffer* buffer) {
  if (fault == "segfault") {
    volatile int* null = nullptr;
    *null = 1;
  } else if (fault == "segfault_thread") {
    // On a thread of the plugin's own, in no vendor call (as FFmpeg's frame
    // threads are): the runner cannot tell whose request it served.
    std::thread([] {
      volatile int* null = nullptr;
      *null = 1;
    }).join();
  } else if (fault == "abort") {
    std::abort();
  } else if (fault == "exit") {
    std::memset(buffer->data, 0xee, buffer->capacity / 2);  // half a frame, then gone
    _exit(3);
  } else if (fault == "hang") {
    for (;;) pause();
  } else if (fault == "take_threads") {
    // Threads that wait for ever, started until the process may have no
    // more (its task limit, or its address space): a decoder leaking its
    // threads. The frame itself is sound.
    for (;;) {
      try {
        std::thread([] {
          for (;;) pause();
        }).detach();
      } catch (const std::system_error&) {
        break;
      }
    }
  } else if (fault == "alloc") {
    // Until the address-space limit (or the OOM killer) stops it.
    std::vector<void*> blocks;
    for (;;) {
      auto* p = static_cast<uint8_t*>(std::malloc(64 << 20));
      if (p == nullptr) std::abort();
      for (size_t i = 0; i < (64 << 20); i += 4096) p[i] = 1;  // make it resident
      blocks.push_back(p);
    }
  } else if (fault == "memfd_hog") {
    // Memory no mapping accounts for: memfds filled with fallocate, up to
    // 2 GiB (RLIMIT_AS never sees them; a memory cgroup charges every
    // page). Stopped by the kernel, it dies here or fails the frame.
    for (int i = 0; i < 32; ++i) {
      const int fd = memfd_create("hog", MFD_CLOEXEC);
      if (fd < 0 || fallocate(fd, 0, 0, off_t{64} << 20) != 0) return;  // refused: the frame goes on
      // the descriptor stays open: the memory stays held
    }
    _exit(42);  // held it all: the limit did not hold
  } else if (fault == "garbage" || fault == "oversized") {
    if (uint8_t* region = FindRegion(buffer->data)) WriteGarbage(region, fault == "oversized");
  } else if (fault == "forge_index") {
    ForgeFrameRecords(buffer->data, Forgery::kWrongIndex);
  } else if (fault == "forge_count") {
    ForgeFrameRecords(buffer->data, Forgery::kExtraFrame);
  } else if (fault == "forge_empty") {
    ForgeFrameRecords(buffer->data, Forgery::kEmptyBatches);
  } else if (fault == "scribble") {
    if (uint8_t* region = FindRegion(buffer->data)) {
      // Everything after the magic and geometry: ring indices, doorbells,
      // slot states. The host never re-reads the geometry.
      for (size_t i = kRequestControlAt; i < 4096; ++i) region[i] = static_cast<uint8_t>(i * 131 + 7);
    }
  }
}

void StartSpinningThreads(int count, const std::atomic<bool>* until) {
  for (int i = 0; i < count; ++i) {
    std::thread([until] {
      for (volatile uint64_t n = 0; until == nullptr || !until->load(std::memory_order_relaxed); n = n + 1) {
      }
    }).detach();
  }
}

}  // namespace codecvisor::testing
