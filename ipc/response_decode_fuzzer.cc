// Fuzzes the host's decode edge: everything a backend can put in a response
// record, as the host would process it (decode, then validate each frame
// reference against a fixed arena geometry).

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ipc/frame_arena.h"
#include "ipc/messages.h"
#include "kj/array.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace codecvisor::ipc;
  // The ring hands the decoder whole, word-aligned records.
  auto words = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
  std::memcpy(words.begin(), data, words.size() * sizeof(capnp::word));
  auto response = DecodeResponse(words);
  if (response.ok()) {
    const Geometry geometry{65536, 65536, 8, 1 << 20};
    if (auto* batch = std::get_if<FrameBatch>(&response->body)) {
      for (const FrameRef& ref : batch->frames) (void)ValidateFrameRef(ref, geometry);
    }
  }
  (void)DecodeRequest(words);
  return 0;
}
