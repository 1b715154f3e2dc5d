// File: backends/testing/forger.cc

#include "backends/testing/forger.h"

#include <unistd.h>

#include <cstring>
#include <optional>
#include <variant>
#include <vector>

#include "ipc/messages.h"
#include "ipc/region.h"
#include "ipc/ring.h"

namespace codecvisor::testing {
namespace {

constexpr uint64_t kPage = 4096;

ipc::RegionHeader* FindHeader(uint8_t* inside) {
  auto page = reinterpret_cast<uintptr_t>(inside) & ~(kPage - 1);
  for (int i = 0; i < (1 << 20); ++i, page -= kPage) {
    uint64_t magic;
    std::memcpy(&magic, reinterpret_cast<void*>(page), sizeof(magic));
    if (magic == ipc::kRegionMagic) return reinterpret_cast<ipc::RegionHeader*>(page);
  }
  return nullptr;
}

void CopyFromRing(const uint8_t* ring, uint64_t capacity, uint64_t at, uint8_t* to, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) to[i] = ring[(at + i) & (capacity - 1)];
}

void CopyToRing(uint8_t* ring, uint64_t capacity, uint64_t at, const uint8_t* from, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) ring[(at + i) & (capacity - 1)] = from[i];
}

// The last frame batch among the records in [0, tail) of the response ring.
std::optional<ipc::Response> LastFrameBatch(const uint8_t* ring, uint64_t capacity, uint64_t tail) {
  std::optional<ipc::Response> last;
  for (uint64_t at = tail > capacity ? tail - capacity : 0; at < tail;) {
    uint32_t header[2];
    CopyFromRing(ring, capacity, at, reinterpret_cast<uint8_t*>(header), 8);
    if (header[1] != ~header[0]) return last;
    std::vector<capnp::word> words((header[0] + 7) / 8);
    CopyFromRing(ring, capacity, at + 8, reinterpret_cast<uint8_t*>(words.data()), header[0]);
    absl::StatusOr<ipc::Response> r = ipc::DecodeResponse(kj::ArrayPtr<const capnp::word>(words.data(), words.size()));
    if (r.ok() && std::holds_alternative<ipc::FrameBatch>(r->body)) last = *r;
    at += ipc::RecordBytes(header[0]);
  }
  return last;
}

// Appends `response` to the response ring and rings the host; false if it
// cannot be encoded or the ring has no room.
bool Append(ipc::RegionHeader* header, uint8_t* ring, uint64_t capacity, const ipc::Response& response) {
  absl::StatusOr<kj::Array<capnp::word>> words = ipc::EncodeResponse(response);
  if (!words.ok()) return false;
  const auto bytes = words->asBytes();
  const uint32_t len = static_cast<uint32_t>(bytes.size());
  const uint64_t tail = header->response.tail.load();
  if (tail + ipc::RecordBytes(len) - header->response.head.load() > capacity) return false;
  const uint32_t record_header[2] = {len, ~len};
  CopyToRing(ring, capacity, tail, reinterpret_cast<const uint8_t*>(record_header), 8);
  CopyToRing(ring, capacity, tail + 8, bytes.begin(), len);
  header->response.tail.store(tail + ipc::RecordBytes(len));
  ipc::RingDoorbell(&header->response.data_bell);
  return true;
}

}  // namespace

bool ForgeFrameRecords(uint8_t* inside, Forgery forgery) {
  ipc::RegionHeader* header = FindHeader(inside);
  if (header == nullptr) return false;
  ipc::Geometry g;
  g.request_ring_bytes = header->request_ring_bytes;
  g.response_ring_bytes = header->response_ring_bytes;
  g.slot_count = header->slot_count;
  g.slot_bytes = header->slot_bytes;
  const ipc::Layout layout = ipc::Layout::For(g);
  auto* base = reinterpret_cast<uint8_t*>(header);
  uint8_t* ring = base + layout.response_ring;
  const uint64_t tail = header->response.tail.load();
  std::optional<ipc::Response> last = LastFrameBatch(ring, g.response_ring_bytes, tail);
  if (!last) return false;
  auto& batch = std::get<ipc::FrameBatch>(last->body);
  if (batch.frames.empty()) return false;
  ipc::FrameRef ref = batch.frames.back();
  const auto slot = static_cast<uint32_t>((inside - base - layout.arena) / g.slot_bytes);
  ref.slot = slot;
  ref.request_position += 1;
  std::vector<ipc::FrameRef> forged;
  if (forgery == Forgery::kWrongIndex) {
    ref.index = 1000;
    forged.push_back(ref);
  } else {
    ref.index += 1;
    forged.push_back(ref);
    ref.slot = (slot + 1) % g.slot_count;  // a slot the host does not hold
    ref.request_position += 1;
    ref.index += 1;
    forged.push_back(ref);
  }
  if (forgery == Forgery::kEmptyBatches) {
    for (int i = 0; i < 600; ++i) {
      if (!Append(header, ring, g.response_ring_bytes, {last->id, ipc::FrameBatch{{}, false}})) return false;
      usleep(200'000);
    }
    return true;
  }
  if (!Append(header, ring, g.response_ring_bytes, {last->id, ipc::FrameBatch{forged, true}})) return false;
  // Stay inside the vendor call, so that the host reads the forgery before
  // the runner's true record lands behind it.
  usleep(200'000);
  return true;
}

}  // namespace codecvisor::testing
