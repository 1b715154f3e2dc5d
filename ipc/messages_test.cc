#include "ipc/messages.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <variant>

#include "capnp/message.h"
#include "capnp/serialize.h"
#include "ipc/protocol.capnp.h"

namespace codecvisor::ipc {
namespace {

StreamMetadata SampleMetadata() {
  StreamMetadata m;
  m.stream_index = 1;
  m.codec = "h264";
  m.width = 1920;
  m.height = 1080;
  m.pixel_format = "yuv420p";
  m.num_frames_from_header = 300;
  m.num_frames_from_scan = 299;
  m.average_fps = 29.97;
  m.duration_seconds = 10.01;
  m.begin_stream_seconds = 0.5;
  m.end_stream_seconds = 10.51;
  m.bit_rate = 4'000'000;
  m.rotation_degrees = -90;
  m.color_space = "bt709";
  m.color_range = "tv";
  m.color_primaries = "bt709";
  m.color_transfer = "bt709";
  m.time_base = {1, 90000};
  m.num_video_streams = 2;
  m.streams = {{0, StreamType::kVideo, "h264", 640, 360, 0, 0},
               {1, StreamType::kVideo, "h264", 1080, 1920, 0, 0},
               {2, StreamType::kAudio, "aac", 0, 0, 48000, 2},
               {3, StreamType::kSubtitle, "subrip", 0, 0, 0, 0},
               {4, StreamType::kAttachment, "", 0, 0, 0, 0}};
  m.header_times = HeaderTimes{10.5, 0.25};
  return m;
}

FrameRef SampleFrame(uint32_t slot) {
  FrameRef f;
  f.slot = slot;
  f.offset = 4096;
  f.size = 1920 * 1080 * 3;
  f.width = 1920;
  f.height = 1080;
  f.format = OutputFormat::kRgb24;
  f.pixel_format = "rgb24";
  f.planes = {{4096, 5760, 1080}};
  f.pts_seconds = 1.5;
  f.duration_seconds = 1 / 30.0;
  f.pts = 135000;
  f.key_frame = true;
  f.index = 45;
  f.request_position = 3;
  return f;
}

std::vector<Request> AllRequests() {
  OpenSession open;
  open.file_token = 77;
  open.file_label = "/data/clip.mp4";
  open.stream_index = 2;
  open.seek_mode = SeekMode::kApproximate;
  open.output_format = OutputFormat::kRgb24Planar;
  open.decoder_threads = 4;
  open.device = "acme:1";
  open.output_width = 640;
  open.output_height = 360;
  open.native_formats = {"yuv420p", "nv12"};
  return {
      {1, Hello{kProtocolVersion, "codecvisor test"}},
      {2, open},
      {3, MetadataRequest{}},
      {4, FrameRequest{IndexList{{5, 1, 5, 0}}}},
      {5, FrameRequest{IndexRange{10, 100, 7}}},
      {6, FrameRequest{PtsList{{0.5, 2.25, 0.0}}}},
      {7, FrameRequest{PtsRange{1.0, 3.5}}},
      {8, Ping{0xfeedface}},
      {9, Close{12}},
      {10, AttachSession{12, 99}},
      {11, Cancel{}},
  };
}

std::vector<Response> AllResponses() {
  HelloReply hello;
  hello.backend_name = "acme";
  hello.backend_version = "2.1";
  hello.devices = {"acme", "acme:1"};
  hello.capabilities.exact_cpu_output = false;
  hello.capabilities.psnr_threshold_db = 40;
  hello.capabilities.seek_modes = {SeekMode::kExact, SeekMode::kApproximate};
  hello.capabilities.output_formats = {OutputFormat::kRgb24, OutputFormat::kNative};
  hello.capabilities.max_sessions = 16;
  hello.sandbox_landlock_abi = 6;
  hello.sandbox_seccomp = true;
  return {
      {1, hello},
      {2, SessionOpened{12, SampleMetadata(),
                        {64, 48, OutputFormat::kNative, "yuv420p",
                         {{0, 64, 48}, {3072, 32, 24}, {3840, 32, 24}}, 4608}}},
      {3, SampleMetadata()},
      {4, FrameBatch{{SampleFrame(0), SampleFrame(5)}, true}},
      {5, Error{ErrorCode::kOutOfRange, "frame 400 is past the end (300 frames)"}},
      {6, Pong{0xfeedface}},
      {7, Closed{}},
      {8, Attached{}},
  };
}

TEST(MessagesTest, FrameTimesPossibleBoundsTimeAndDuration) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(FrameTimesPossible(0, 0));
  EXPECT_TRUE(FrameTimesPossible(-kMaxStreamSeconds, kMaxStreamSeconds));
  EXPECT_TRUE(FrameTimesPossible(kMaxStreamSeconds, 0.04));
  EXPECT_FALSE(FrameTimesPossible(std::nextafter(kMaxStreamSeconds, kInf), 0.04));
  EXPECT_FALSE(FrameTimesPossible(-std::nextafter(kMaxStreamSeconds, kInf), 0.04));
  EXPECT_FALSE(FrameTimesPossible(0, std::nextafter(kMaxStreamSeconds, kInf)));
  EXPECT_FALSE(FrameTimesPossible(0, -1e-9));
  for (double bad : {kInf, -kInf, kNan}) {
    EXPECT_FALSE(FrameTimesPossible(bad, 0.04)) << bad;
    EXPECT_FALSE(FrameTimesPossible(0, bad)) << bad;
  }
}

TEST(MessagesTest, EveryRequestKindRoundTrips) {
  for (const Request& r : AllRequests()) {
    auto words = EncodeRequest(r);
    ASSERT_TRUE(words.ok()) << words.status();
    auto back = DecodeRequest(*words);
    ASSERT_TRUE(back.ok()) << KindName(r) << ": " << back.status();
    EXPECT_EQ(*back, r) << KindName(r);
  }
}

TEST(MessagesTest, EveryResponseKindRoundTrips) {
  for (const Response& r : AllResponses()) {
    auto words = EncodeResponse(r);
    ASSERT_TRUE(words.ok()) << words.status();
    auto back = DecodeResponse(*words);
    ASSERT_TRUE(back.ok()) << KindName(r) << ": " << back.status();
    EXPECT_EQ(*back, r) << KindName(r);
  }
}

TEST(MessagesTest, GarbageIsDataLossNotACrash) {
  auto words = kj::heapArray<capnp::word>(64);
  for (size_t i = 0; i < words.size(); ++i) {
    uint64_t v = 0x9e3779b97f4a7c15ull * (i + 1);
    std::memcpy(&words[i], &v, 8);
  }
  auto r = DecodeResponse(words);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
}

TEST(MessagesTest, TruncatedMessageIsDataLoss) {
  auto words = EncodeResponse(AllResponses()[1]);
  ASSERT_TRUE(words.ok());
  for (size_t n = 0; n < words->size(); ++n) {
    auto r = DecodeResponse(kj::ArrayPtr<const capnp::word>(words->begin(), n));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << "prefix of " << n << " words";
  }
}

TEST(MessagesTest, TrailingWordsAreRejected) {
  auto words = EncodeResponse({1, Pong{3}});
  ASSERT_TRUE(words.ok());
  auto longer = kj::heapArray<capnp::word>(words->size() + 1);
  std::memset(longer.begin(), 0, longer.size() * sizeof(capnp::word));
  std::memcpy(longer.begin(), words->begin(), words->size() * sizeof(capnp::word));
  auto r = DecodeResponse(longer);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
}

TEST(MessagesTest, OversizedTextIsRejected) {
  Error e{ErrorCode::kInternal, std::string(kMaxTextBytes + 1, 'x')};
  auto words = EncodeResponse({1, e});
  ASSERT_TRUE(words.ok());
  auto r = DecodeResponse(*words);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("error message"), std::string::npos) << r.status();
}

TEST(MessagesTest, TooManyFramesInABatchAreRejected) {
  FrameBatch batch;
  batch.frames.assign(kMaxFramesPerBatch + 1, SampleFrame(0));
  auto words = EncodeResponse({1, batch});
  ASSERT_TRUE(words.ok());
  EXPECT_EQ(DecodeResponse(*words).status().code(), absl::StatusCode::kDataLoss);
}

TEST(MessagesTest, UnknownEnumValueIsRejected) {
  capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<wire::Response>();
  root.initError().setCode(static_cast<wire::ErrorCode>(999));
  auto words = capnp::messageToFlatArray(builder);
  auto r = DecodeResponse(words);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("unknown value 999"), std::string::npos) << r.status();
}

// A backend built before StreamMetadata.streams existed sends none: an
// empty list, not an error.
TEST(MessagesTest, MetadataWithoutAStreamListHasNoStreams) {
  capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<wire::Response>();
  root.setId(3);
  auto m = root.initMetadata();
  m.setStreamIndex(0);
  m.setCodec("h264");
  auto r = DecodeResponse(capnp::messageToFlatArray(builder));
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& decoded = std::get<StreamMetadata>(r->body);
  EXPECT_EQ(decoded.codec, "h264");
  EXPECT_TRUE(decoded.streams.empty());
  EXPECT_FALSE(decoded.header_times.has_value()) << "a backend that does not say has no header times";
}

TEST(MessagesTest, TooManyNativeFormatsAreRejected) {
  OpenSession open;
  open.native_formats.assign(kMaxNativeFormats + 1, "yuv420p");
  auto words = EncodeRequest({1, open});
  ASSERT_TRUE(words.ok()) << words.status();
  auto r = DecodeRequest(*words);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("nativeFormats has 17 entries; at most 16"), std::string::npos) << r.status();
  open.native_formats.resize(kMaxNativeFormats);
  words = EncodeRequest({1, open});
  ASSERT_TRUE(words.ok()) << words.status();
  EXPECT_TRUE(DecodeRequest(*words).ok());
}

TEST(MessagesTest, StreamListsBreakingLimitsAreRejected) {
  StreamMetadata many = SampleMetadata();
  many.streams.assign(kMaxStreams + 1, {0, StreamType::kData, "bin_data"});
  auto words = EncodeResponse({1, many});
  ASSERT_TRUE(words.ok()) << words.status();
  auto r = DecodeResponse(*words);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("streams has 1025 entries; at most 1024"), std::string::npos) << r.status();

  StreamMetadata long_name = SampleMetadata();
  long_name.streams[2].codec.assign(kMaxTextBytes + 1, 'a');
  words = EncodeResponse({1, long_name});
  ASSERT_TRUE(words.ok()) << words.status();
  r = DecodeResponse(*words);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("stream codec is"), std::string::npos) << r.status();

  capnp::MallocMessageBuilder builder;
  auto streams = builder.initRoot<wire::Response>().initMetadata().initStreams(1);
  streams[0].setType(static_cast<wire::StreamType>(6));
  r = DecodeResponse(capnp::messageToFlatArray(builder));
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("stream type: unknown value 6"), std::string::npos) << r.status();
}

TEST(MessagesTest, DeeplyNestedOrHugeListsHitReaderLimits) {
  // A list that claims far more elements than the traversal limit allows.
  capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<wire::Request>();
  root.initFrames().initIndices(kTraversalLimitWords + 10);
  auto words = capnp::messageToFlatArray(builder);
  auto r = DecodeRequest(words);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
}

TEST(MessagesTest, OversizedMessageIsNotEncoded) {
  FrameRequest req{IndexList{std::vector<int64_t>(200'000, 1)}};
  auto words = EncodeRequest({1, req});
  EXPECT_EQ(words.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(OutputFormatNameTest, NamesEveryFormatAndNoOther) {
  EXPECT_STREQ(OutputFormatName(OutputFormat::kRgb24), "rgb24");
  EXPECT_STREQ(OutputFormatName(OutputFormat::kRgb24Planar), "rgb24-planar");
  EXPECT_STREQ(OutputFormatName(OutputFormat::kNative), "native");
  EXPECT_STREQ(OutputFormatName(static_cast<OutputFormat>(7)), "unknown");
}

}  // namespace
}  // namespace codecvisor::ipc
