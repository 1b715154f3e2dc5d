// File: tests/ipc_test_messages.h
//
// What the cross-process channel suites send: small channel geometries,
// frame references of each layout, the byte pattern frames carry (so the
// host can tell a frame's bytes from any other's), and the scripted
// conversation that uses every request and response kind once.
//
// Pure values, except LendFrames, which runs in the forked backend and
// reports failure with the CHILD_* checks of ipc_test_support.h.

#ifndef CODECVISOR_TESTS_IPC_TEST_MESSAGES_H_
#define CODECVISOR_TESTS_IPC_TEST_MESSAGES_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ipc/channel.h"
#include "ipc/messages.h"

namespace codecvisor::ipc::test {

// ---- frames -----------------------------------------------------------------------

// Request and response rings of `ring_bytes` each, and `slots` arena slots
// of 4 KiB (none if `slots` is 0).
Geometry SmallGeometry(uint32_t slots = 4, uint64_t ring_bytes = 16 << 10);

// A w x h interleaved RGB frame at `offset` in its slot, rows `stride` apart.
FrameRef Rgb24Frame(uint32_t w, uint32_t h, uint64_t offset, uint32_t stride);
// A w x h planar RGB ("gbrp") frame: three planes of h rows `stride` apart.
FrameRef PlanarFrame(uint32_t w, uint32_t h, uint64_t offset, uint32_t stride);
// A w x h native NV12 frame: a luma plane and a half-height chroma plane.
FrameRef Nv12Frame(uint32_t w, uint32_t h, uint64_t offset);

// Byte `i` of the pattern for `seed`.
uint8_t PatternByte(uint64_t seed, uint64_t i);

// Whether `bytes` hold exactly the pattern for `seed`.
bool FrameBytesMatch(std::span<const uint8_t> bytes, uint64_t seed);

// Backend: claims a slot for every frame of `batch`, writes the pattern for
// seed `seed_base + i` into it, fills in the slot and lends it.
void LendFrames(BackendChannel& b, FrameBatch& batch, uint64_t seed_base);

// ---- the round-trip script --------------------------------------------------------

// The file descriptor the script's OpenSession refers to.
inline constexpr uint64_t kFileToken = 0x0F11E70CE2ull;
// The two descriptors (memfd, socket) of the session the script attaches.
inline constexpr uint64_t kAttachToken = 0xA77AC4ull;
// The session the script opens, attaches and closes.
inline constexpr uint64_t kSessionId = 12;

// Stream metadata with every field set to something other than its default.
StreamMetadata TestMetadata(std::string codec);

// The script's requests, in order: one of every kind, frame requests of
// every selector, and a request for a frame past the end.
std::vector<Request> RoundTripRequests();

// The pattern seed of frame 0 of the reply to FrameRequest `id` (frame i
// carries seed + i).
uint64_t FrameSeed(uint64_t id);

// What the backend answers to request `id` of the script (FrameBatch slots
// left at 0). The reply to OpenSession carries `file_content` as its codec,
// so the host can see what the backend read from the file. Id 1 is the
// HelloReply.
Response RoundTripResponse(uint64_t id, const std::string& file_content);

}  // namespace codecvisor::ipc::test

#endif  // CODECVISOR_TESTS_IPC_TEST_MESSAGES_H_
