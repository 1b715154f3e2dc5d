// The public API's value types and their conversions, without processes.

#include <string>
#include <vector>

#include "api/convert.h"
#include "codecvisor/codecvisor.h"
#include "gtest/gtest.h"

namespace codecvisor {
namespace {

TEST(StatusTest, OkByDefaultAndNamedOtherwise) {
  EXPECT_TRUE(Status().ok());
  EXPECT_EQ(Status().ToString(), "OK");
  Status s(StatusCode::kOutOfRange, "frame 9 of 5");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s.ToString(), "OUT_OF_RANGE: frame 9 of 5");
  // An OK status carries no message, so two OKs are equal.
  EXPECT_EQ(Status(StatusCode::kOk, "ignored"), Status());
}

TEST(StatusTest, EveryCodeHasItsAbslNameAndNumber) {
  for (int c = 0; c <= static_cast<int>(StatusCode::kUnauthenticated); ++c) {
    const absl::Status internal(static_cast<absl::StatusCode>(c), "m");
    const Status public_status = api::FromAbsl(internal);
    EXPECT_EQ(static_cast<int>(public_status.code()), c);
    EXPECT_EQ(std::string(StatusCodeName(public_status.code())), absl::StatusCodeToString(internal.code()));
    EXPECT_EQ(api::ToAbsl(public_status), internal);
  }
}

TEST(ResultTest, HoldsAValueOrAnError) {
  Result<std::string> value(std::string("frame"));
  ASSERT_TRUE(value.ok());
  EXPECT_TRUE(value.status().ok());
  EXPECT_EQ(*value, "frame");
  EXPECT_EQ(value->size(), 5u);

  Result<std::string> error(Status(StatusCode::kNotFound, "no device 'acme'"));
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.status().code(), StatusCode::kNotFound);
}

TEST(ResultTest, AnOkStatusWithoutAValueIsAnInternalError) {
  Result<int> r{Status()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(ResultDeathTest, ValueOfAnErrorNamesTheError) {
  Result<int> r(Status(StatusCode::kDataLoss, "corrupt.mp4: invalid data"));
  EXPECT_DEATH((void)r.value(), "DATA_LOSS: corrupt.mp4: invalid data");
}

TEST(FrameSelectionTest, EachKindBecomesItsRequest) {
  struct Case {
    FrameSelection selection;
    ipc::FrameRequest request;
    std::string text;
  };
  const std::vector<Case> cases = {
      {FrameSelection::AtIndices({3, -1}), {ipc::IndexList{{3, -1}}}, "frame indices [3, -1]"},
      {FrameSelection::InRange(0, 10, 2), {ipc::IndexRange{0, 10, 2}}, "frames [0, 10) step 2"},
      {FrameSelection::PlayedAtSeconds({0.5}), {ipc::PtsList{{0.5}}}, "frames played at [0.5] s"},
      {FrameSelection::PlayedInSeconds(1, 2), {ipc::PtsRange{1, 2}}, "frames played in [1, 2) s"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(api::ToIpc(c.selection), c.request) << c.text;
    EXPECT_EQ(c.selection.ToString(), c.text);
  }
}

TEST(ConvertTest, EnumsRoundTrip) {
  for (SeekMode m : {SeekMode::kExact, SeekMode::kApproximate}) EXPECT_EQ(api::FromIpc(api::ToIpc(m)), m);
  for (OutputFormat f : {OutputFormat::kRgb24, OutputFormat::kRgb24Planar, OutputFormat::kNative}) {
    EXPECT_EQ(api::FromIpc(api::ToIpc(f)), f);
  }
  EXPECT_STREQ(SeekModeName(SeekMode::kApproximate), "approximate");
  EXPECT_STREQ(OutputFormatName(OutputFormat::kRgb24Planar), "rgb24-planar");
  // A cast integer outside the enums is no other value's name.
  EXPECT_STREQ(SeekModeName(static_cast<SeekMode>(7)), "unknown");
  EXPECT_STREQ(OutputFormatName(static_cast<OutputFormat>(7)), "unknown");
}

TEST(ConvertTest, DecoderOptionsKeepEveryField) {
  DecoderOptions o;
  o.device = "acme:1";
  o.stream_index = 2;
  o.seek_mode = SeekMode::kApproximate;
  o.output_format = OutputFormat::kNative;
  o.decoder_threads = 3;
  o.output_width = 64;
  o.output_height = 48;
  o.arena_slots = 7;
  o.request_timeout = std::chrono::milliseconds(1234);
  o.open_timeout = std::chrono::milliseconds(5678);
  const internal::DecoderOptions i = api::ToInternal(o);
  EXPECT_EQ(i.device, "acme:1");
  EXPECT_EQ(i.stream_index, 2);
  EXPECT_EQ(i.seek_mode, ipc::SeekMode::kApproximate);
  EXPECT_EQ(i.output_format, ipc::OutputFormat::kNative);
  EXPECT_EQ(i.decoder_threads, 3u);
  EXPECT_EQ(i.output_width, 64u);
  EXPECT_EQ(i.output_height, 48u);
  EXPECT_EQ(i.arena_slots, 7u);
  EXPECT_EQ(i.request_timeout, std::chrono::milliseconds(1234));
  EXPECT_EQ(i.open_timeout, std::chrono::milliseconds(5678));
}

TEST(StreamMetadataTest, NumFramesFallsBackToTheEstimate) {
  StreamMetadata m;
  m.average_fps = 25;
  m.duration_seconds = 1.2;
  EXPECT_EQ(m.num_frames(), 30);  // no scan, no header count: duration x rate
  m.num_frames_from_header = 31;
  EXPECT_EQ(m.num_frames(), 31);
  m.num_frames_from_scan = 29;
  EXPECT_EQ(m.num_frames(), 29);
  StreamMetadata unknown;
  unknown.average_fps = 25;
  EXPECT_EQ(unknown.num_frames(), -1);
}

TEST(ConvertTest, MetadataKeepsEveryField) {
  ipc::StreamMetadata m;
  m.stream_index = 1;
  m.codec = "vp9";
  m.width = 640;
  m.height = 360;
  m.pixel_format = "yuv420p";
  m.num_frames_from_header = 100;
  m.num_frames_from_scan = 99;
  m.average_fps = 25;
  m.duration_seconds = 4;
  m.begin_stream_seconds = 0.04;
  m.end_stream_seconds = 4.04;
  m.bit_rate = 12345;
  m.rotation_degrees = 90;
  m.color_space = "bt709";
  m.color_range = "tv";
  m.color_primaries = "bt709";
  m.color_transfer = "bt709";
  m.time_base = {1, 1000};
  m.num_video_streams = 2;
  m.streams = {{0, ipc::StreamType::kVideo, "vp9", 640, 360, 0, 0},
               {1, ipc::StreamType::kAudio, "opus", 0, 0, 48000, 2},
               {2, ipc::StreamType::kSubtitle, "webvtt", 0, 0, 0, 0},
               {3, ipc::StreamType::kData, "", 0, 0, 0, 0},
               {4, ipc::StreamType::kAttachment, "ttf", 0, 0, 0, 0},
               {5, ipc::StreamType::kUnknown, "", 0, 0, 0, 0}};
  m.header_times = ipc::HeaderTimes{4.5, 0.5};
  const StreamMetadata p = api::FromIpc(m);
  EXPECT_EQ(p.stream_index, 1);
  EXPECT_EQ(p.codec, "vp9");
  EXPECT_EQ(p.width, 640u);
  EXPECT_EQ(p.height, 360u);
  EXPECT_EQ(p.pixel_format, "yuv420p");
  EXPECT_EQ(p.num_frames_from_header, 100);
  EXPECT_EQ(p.num_frames_from_scan, 99);
  EXPECT_EQ(p.num_frames(), 99);
  EXPECT_EQ(p.average_fps, 25);
  EXPECT_EQ(p.duration_seconds, 4);
  EXPECT_EQ(p.begin_stream_seconds, 0.04);
  EXPECT_EQ(p.end_stream_seconds, 4.04);
  EXPECT_EQ(p.bit_rate, 12345);
  EXPECT_EQ(p.rotation_degrees, 90);
  EXPECT_EQ(p.color_space, "bt709");
  EXPECT_EQ(p.color_range, "tv");
  EXPECT_EQ(p.color_primaries, "bt709");
  EXPECT_EQ(p.color_transfer, "bt709");
  EXPECT_EQ(p.time_base, (Rational{1, 1000}));
  EXPECT_EQ(p.num_video_streams, 2u);
  EXPECT_EQ(p.header_times, (HeaderTimes{4.5, 0.5}));
  m.header_times.reset();
  EXPECT_FALSE(api::FromIpc(m).header_times.has_value());
  EXPECT_EQ(p.streams, (std::vector<StreamInfo>{{0, StreamType::kVideo, "vp9", 640, 360, 0, 0},
                                                {1, StreamType::kAudio, "opus", 0, 0, 48000, 2},
                                                {2, StreamType::kSubtitle, "webvtt", 0, 0, 0, 0},
                                                {3, StreamType::kData, "", 0, 0, 0, 0},
                                                {4, StreamType::kAttachment, "ttf", 0, 0, 0, 0},
                                                {5, StreamType::kUnknown, "", 0, 0, 0, 0}}));
}

TEST(ConvertTest, StreamTypesHaveTheirNames) {
  EXPECT_STREQ(StreamTypeName(StreamType::kUnknown), "unknown");
  EXPECT_STREQ(StreamTypeName(StreamType::kVideo), "video");
  EXPECT_STREQ(StreamTypeName(StreamType::kAudio), "audio");
  EXPECT_STREQ(StreamTypeName(StreamType::kSubtitle), "subtitle");
  EXPECT_STREQ(StreamTypeName(StreamType::kData), "data");
  EXPECT_STREQ(StreamTypeName(StreamType::kAttachment), "attachment");
}

TEST(ConvertTest, AnOlderBackendsMetadataHasNoStreams) {
  ipc::StreamMetadata m;
  m.stream_index = 0;
  EXPECT_TRUE(api::FromIpc(m).streams.empty());
}

TEST(FrameTest, AnEmptyOrMovedFromFrameHasNoBytes) {
  Frame f;
  EXPECT_EQ(f.num_planes(), 0u);
  EXPECT_TRUE(f.data().empty());
  EXPECT_FALSE(f.shared());
  Frame g = std::move(f);
  EXPECT_EQ(f.num_planes(), 0u);  // NOLINT(bugprone-use-after-move): moved-from reads as empty
  EXPECT_TRUE(f.data().empty());  // NOLINT(bugprone-use-after-move)
  f.Detach();                     // NOLINT(bugprone-use-after-move): harmless
  EXPECT_EQ(f.CopyOut().num_planes(), 0u);
}

TEST(VersionTest, TheLibraryReportsTheHeadersVersion) {
  EXPECT_EQ(std::string(Version()), std::to_string(kVersionMajor) + "." + std::to_string(kVersionMinor) + "." +
                                        std::to_string(kVersionPatch));
}

}  // namespace
}  // namespace codecvisor
