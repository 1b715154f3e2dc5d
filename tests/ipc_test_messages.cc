// File: tests/ipc_test_messages.cc
//
// Frame layouts, the frame byte pattern and the round-trip script declared
// in ipc_test_messages.h.

#include "tests/ipc_test_messages.h"

#include <utility>

#include "tests/ipc_test_support.h"

namespace codecvisor::ipc::test {
namespace {

FrameLayout TestLayout() {
  FrameLayout l;
  l.width = 640;
  l.height = 360;
  l.format = OutputFormat::kRgb24Planar;
  l.pixel_format = "gbrp";
  l.planes = {{0, 640, 360}, {640 * 360, 640, 360}, {2 * 640 * 360, 640, 360}};
  l.size = 3 * 640 * 360;
  return l;
}

// Request ids of the round trip, in order.
enum RoundTripId : uint64_t {
  kHelloId = 1,
  kOpenId,
  kAttachId,
  kMetadataId,
  kIndexListId,
  kIndexRangeId,
  kPtsListId,
  kPtsRangeId,
  kBadFrameId,
  kPingId,
  kCancelId,
  kCloseId,
};

// The frames answering FrameRequest `id` (slots are chosen when lent).
FrameBatch RoundTripFrames(uint64_t id) {
  FrameBatch batch;
  switch (id) {
    case kIndexListId:  // interleaved RGB, tightly packed
      for (int i = 0; i < 3; ++i) batch.frames.push_back(Rgb24Frame(16, 8, 0, 48));
      break;
    case kIndexRangeId:  // planar RGB with padded rows, not at the slot's start
      for (int i = 0; i < 2; ++i) batch.frames.push_back(PlanarFrame(16, 8, 128, 20));
      break;
    case kPtsListId:  // native NV12, two planes
      for (int i = 0; i < 3; ++i) batch.frames.push_back(Nv12Frame(32, 16, 64));
      break;
    case kPtsRangeId:  // a frame that ends exactly where the slot's padding starts
      batch.frames.push_back(Rgb24Frame(20, 10, 4096 - kSlotPadding - 64 * 10, 64));
      batch.final = true;
      break;
  }
  for (size_t i = 0; i < batch.frames.size(); ++i) {
    FrameRef& f = batch.frames[i];
    f.pts_seconds = 0.5 * static_cast<double>(id) + 0.04 * static_cast<double>(i);
    f.duration_seconds = 0.04;
    f.pts = static_cast<int64_t>(id * 1000 + i);
    f.key_frame = i == 0;
    f.index = static_cast<int64_t>(id * 10 + i);
    f.request_position = static_cast<uint32_t>(i);
  }
  return batch;
}

}  // namespace

Geometry SmallGeometry(uint32_t slots, uint64_t ring_bytes) {
  Geometry g;
  g.request_ring_bytes = ring_bytes;
  g.response_ring_bytes = ring_bytes;
  g.slot_count = slots;
  g.slot_bytes = slots == 0 ? 0 : 4096;
  return g;
}

FrameRef Rgb24Frame(uint32_t w, uint32_t h, uint64_t offset, uint32_t stride) {
  FrameRef f;
  f.offset = offset;
  f.size = uint64_t{stride} * h;
  f.width = w;
  f.height = h;
  f.format = OutputFormat::kRgb24;
  f.pixel_format = "rgb24";
  f.planes = {{offset, stride, h}};
  return f;
}

FrameRef PlanarFrame(uint32_t w, uint32_t h, uint64_t offset, uint32_t stride) {
  FrameRef f;
  f.offset = offset;
  f.size = uint64_t{stride} * h * 3;
  f.width = w;
  f.height = h;
  f.format = OutputFormat::kRgb24Planar;
  f.pixel_format = "gbrp";
  for (uint64_t p = 0; p < 3; ++p) f.planes.push_back({offset + p * stride * h, stride, h});
  return f;
}

FrameRef Nv12Frame(uint32_t w, uint32_t h, uint64_t offset) {
  FrameRef f;
  f.offset = offset;
  f.size = uint64_t{w} * h * 3 / 2;
  f.width = w;
  f.height = h;
  f.format = OutputFormat::kNative;
  f.pixel_format = "nv12";
  f.planes = {{offset, w, h}, {offset + uint64_t{w} * h, w, h / 2}};
  return f;
}

uint8_t PatternByte(uint64_t seed, uint64_t i) {
  return static_cast<uint8_t>((seed * 0x9E37u) ^ (i * 31) ^ (i >> 7) ^ (seed >> 3));
}

bool FrameBytesMatch(std::span<const uint8_t> bytes, uint64_t seed) {
  for (uint64_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != PatternByte(seed, i)) return false;
  }
  return true;
}

void LendFrames(BackendChannel& b, FrameBatch& batch, uint64_t seed_base) {
  for (size_t i = 0; i < batch.frames.size(); ++i) {
    FrameRef& ref = batch.frames[i];
    BackendArena::Slot slot = CHILD_VALUE(b.AcquireSlot(In(kGenerous)));
    CHILD_CHECK(ref.offset + ref.size <= slot.bytes.size());
    for (uint64_t k = 0; k < ref.size; ++k) slot.bytes[ref.offset + k] = PatternByte(seed_base + i, k);
    ref.slot = slot.index;
    b.arena().Lend(slot.index);
  }
}

StreamMetadata TestMetadata(std::string codec) {
  StreamMetadata m;
  m.stream_index = 3;
  m.codec = std::move(codec);
  m.width = 1920;
  m.height = 1080;
  m.pixel_format = "yuv420p10le";
  m.num_frames_from_header = 1234;
  m.num_frames_from_scan = 1235;
  m.average_fps = 29.97;
  m.duration_seconds = 41.2;
  m.begin_stream_seconds = -0.033;
  m.end_stream_seconds = 41.167;
  m.bit_rate = 8'000'000;
  m.rotation_degrees = -90;
  m.color_space = "bt709";
  m.color_range = "tv";
  m.color_primaries = "bt2020";
  m.color_transfer = "smpte2084";
  m.time_base = {1001, 30000};
  m.num_video_streams = 2;
  m.header_times = HeaderTimes{41.3, 0};
  m.pixel_aspect_ratio = Rational{64, 45};
  return m;
}

std::vector<Request> RoundTripRequests() {
  OpenSession open;
  open.file_token = kFileToken;
  open.file_label = "clip \xE2\x80\x94 take 2.mp4";
  open.stream_index = 3;
  open.seek_mode = SeekMode::kApproximate;
  open.output_format = OutputFormat::kRgb24Planar;
  open.decoder_threads = 4;
  open.device = "cuda:1";
  open.output_width = 640;
  open.output_height = 360;
  AttachSession attach;
  attach.session_id = kSessionId;
  attach.token = kAttachToken;
  Close close;
  close.session_id = kSessionId;
  return {
      {kHelloId, Hello{kProtocolVersion, "codecvisor-test 1.2.3"}},
      {kOpenId, open},
      {kAttachId, attach},
      {kMetadataId, MetadataRequest{}},
      {kIndexListId, FrameRequest{IndexList{{3, 1, int64_t{1} << 40}}}},
      {kIndexRangeId, FrameRequest{IndexRange{-5, 10, 5}}},
      {kPtsListId, FrameRequest{PtsList{{0.5, 1.25, 1e9}}}},
      {kPtsRangeId, FrameRequest{PtsRange{1.0, 2.5}}},
      {kBadFrameId, FrameRequest{IndexList{{999}}}},
      {kPingId, Ping{0xDEADBEEFCAFEF00Dull}},
      {kCancelId, Cancel{}},
      {kCloseId, close},
  };
}

uint64_t FrameSeed(uint64_t id) { return id * 100; }

Response RoundTripResponse(uint64_t id, const std::string& file_content) {
  switch (id) {
    case kHelloId: {
      HelloReply h;
      h.backend_name = "test-backend";
      h.backend_version = "9.8.7";
      h.devices = {"cpu", "cuda:0", "cuda:1"};
      h.capabilities.exact_cpu_output = true;
      h.capabilities.psnr_threshold_db = 42.5;
      h.capabilities.seek_modes = {SeekMode::kExact, SeekMode::kApproximate};
      h.capabilities.output_formats = {OutputFormat::kRgb24, OutputFormat::kRgb24Planar,
                                       OutputFormat::kNative};
      h.capabilities.max_sessions = 16;
      return {id, h};
    }
    case kOpenId: {
      SessionOpened opened;
      opened.session_id = kSessionId;
      opened.metadata = TestMetadata(file_content);
      opened.layout = TestLayout();
      return {id, opened};
    }
    case kAttachId:
      return {id, Attached{}};
    case kMetadataId:
      return {id, TestMetadata("hevc")};
    case kIndexListId:
    case kIndexRangeId:
    case kPtsListId:
    case kPtsRangeId:
      return {id, RoundTripFrames(id)};
    case kBadFrameId:
      return {id, Error{ErrorCode::kOutOfRange, "frame 999 is past the end (10 frames)"}};
    case kPingId:
      return {id, Pong{0xDEADBEEFCAFEF00Dull}};
    case kCancelId:  // a runner answers nothing; this test's backend answers every request
      return {id, FrameBatch{{}, true}};
    case kCloseId:
      return {id, Closed{}};
  }
  return {};
}

}  // namespace codecvisor::ipc::test
