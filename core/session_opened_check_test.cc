// File: core/session_opened_check_test.cc

#include "core/session_opened_check.h"

#include <cmath>
#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace codecvisor {
namespace {

// An honest answer for a 64x48 stream as RGB24.
ipc::SessionOpened Opened() {
  ipc::SessionOpened o;
  o.layout.width = 64;
  o.layout.height = 48;
  o.layout.format = ipc::OutputFormat::kRgb24;
  o.layout.planes = {{0, 64 * 3, 48}};
  o.layout.size = 64 * 3 * 48;
  o.metadata.width = 64;
  o.metadata.height = 48;
  o.metadata.num_frames_from_header = 30;
  o.metadata.num_frames_from_scan = 30;
  o.metadata.average_fps = 25;
  o.metadata.duration_seconds = 1.2;
  o.metadata.begin_stream_seconds = 0;
  o.metadata.end_stream_seconds = 1.2;
  o.metadata.time_base = {1, 12800};
  return o;
}

// What backend_process does: the layout (a lie replaces the backend), then
// the numbers (the open fails).
absl::Status Accept(ipc::SessionOpened o, const ipc::OpenSession& asked) {
  if (absl::Status s = CheckSessionLayout(o, asked); !s.ok()) return s;
  return AcceptStreamNumbers(&o.metadata);
}

// An open that asks for the decoder's own pixels.
const ipc::OpenSession kAskedNative{.output_format = ipc::OutputFormat::kNative};

void ExpectRefused(const ipc::SessionOpened& o, const std::string& text, const ipc::OpenSession& asked = {}) {
  const absl::Status s = Accept(o, asked);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
}

TEST(SessionOpenedCheckTest, HonestAnswersPass) {
  EXPECT_TRUE(Accept(Opened(), {}).ok());
  // Planar RGB; native 4:2:0 with chroma rows rounded up; rows padded to 64.
  ipc::SessionOpened planar = Opened();
  planar.layout.format = ipc::OutputFormat::kRgb24Planar;
  planar.layout.planes = {{0, 64, 48}, {64 * 48, 64, 48}, {2 * 64 * 48, 64, 48}};
  EXPECT_TRUE(Accept(planar, {}).ok());
  ipc::SessionOpened native = Opened();
  native.metadata.width = native.layout.width = 63;
  native.metadata.height = native.layout.height = 47;
  native.layout.format = ipc::OutputFormat::kNative;
  native.layout.planes = {{0, 64, 47}, {64 * 47, 64, 24}, {64 * 47 + 64 * 24, 64, 24}};
  native.layout.size = 64 * 47 + 2 * 64 * 24;
  EXPECT_TRUE(Accept(native, kAskedNative).ok());
  // An output size asked for: the layout's differs from the stream's.
  ipc::SessionOpened resized = Opened();
  resized.layout.width = 32;
  resized.layout.planes = {{0, 32 * 3, 48}};
  resized.layout.size = 32 * 3 * 48;
  EXPECT_TRUE(Accept(resized, {.output_width = 32}).ok());
  // Unknown counts, negative start times, an unknown time base.
  ipc::SessionOpened unknown = Opened();
  unknown.metadata.num_frames_from_header = unknown.metadata.num_frames_from_scan = -1;
  unknown.metadata.begin_stream_seconds = -0.5;
  unknown.metadata.time_base = {0, 25};
  EXPECT_TRUE(Accept(unknown, {}).ok());
  ASSERT_TRUE(AcceptStreamNumbers(&unknown.metadata).ok());
  EXPECT_EQ(unknown.metadata.time_base, (ipc::Rational{0, 1}));  // shown as unknown, not 0/25
  // A time base no container has is shown as unknown; the open goes on.
  for (const ipc::Rational& tb : {ipc::Rational{INT64_MIN, 1}, ipc::Rational{INT64_MAX, 1}, ipc::Rational{1, 0},
                                  ipc::Rational{1, -25}, ipc::Rational{-1, 25}}) {
    ipc::StreamMetadata m = Opened().metadata;
    m.time_base = tb;
    ASSERT_TRUE(AcceptStreamNumbers(&m).ok()) << tb.num << "/" << tb.den;
    EXPECT_EQ(m.time_base, (ipc::Rational{0, 1})) << tb.num << "/" << tb.den;
  }
}

// A 64x48 stream whose layout claims 1 GiB a frame would have the host
// commit 4 GiB of arena for each decoder.
TEST(SessionOpenedCheckTest, ALayoutLargerThanItsPlanesIsRefused) {
  ipc::SessionOpened o = Opened();
  o.layout.size = uint64_t{1} << 30;
  ExpectRefused(o, "its planes, with their rows padded, need at most");
  // Room for the decoder's padded pictures: 192 x (2 x 48 + 128) + 64 KiB.
  o = Opened();
  o.layout.size = kMaxLayoutSlack + 192 * (2 * 48 + kMaxPaddingRows);
  EXPECT_TRUE(Accept(o, {}).ok());
  o.layout.size += 1;
  ExpectRefused(o, "need at most 108544 bytes");
}

// An in-place layout of a 638x360 H.264 stream, as the cpu backend's
// picture pool makes them: strides and rows aligned, a tail after each plane.
TEST(SessionOpenedCheckTest, ADecodersPaddedPicturesPass) {
  ipc::SessionOpened o = Opened();
  o.metadata.width = o.layout.width = 638;
  o.metadata.height = o.layout.height = 360;
  o.layout.format = ipc::OutputFormat::kNative;
  o.layout.planes = {{0, 640, 360}, {241664, 320, 180}, {306176, 320, 180}};
  o.layout.size = 370944;
  EXPECT_TRUE(Accept(o, kAskedNative).ok());
}

TEST(SessionOpenedCheckTest, PlanesMustFitTheFrameAndItsSize) {
  ipc::SessionOpened o = Opened();
  o.layout.planes[0].stride = 64 * 3 - 1;  // short of a row
  ExpectRefused(o, "plane 0 of 48 rows of 191 bytes: a row of 64 pixels takes at least 192 bytes");
  o = Opened();
  o.layout.planes[0].rows = 47;  // RGB covers every row
  ExpectRefused(o, "plane 0 of 47 rows of 192 bytes: RGB has 48 rows");
  o = Opened();
  o.layout.format = ipc::OutputFormat::kNative;
  o.layout.planes[0].stride = 64 * kMaxBytesPerPixel + kMaxRowPadding + 1;  // rows of a wider frame
  o.layout.size = uint64_t{o.layout.planes[0].stride} * 48;
  ExpectRefused(o, "bytes, padding included");
  o = Opened();
  o.layout.planes[0].offset = 1;  // ends past the frame
  ExpectRefused(o, "ends past the frame");
  o = Opened();
  o.layout.planes.push_back(o.layout.planes[0]);
  ExpectRefused(o, "2 planes for its format");
  o = Opened();
  o.layout.width = o.metadata.width = 0;
  ExpectRefused(o, "1 to 32768 pixels each way");
}

// A native format the host knows has planes of known rows and row lengths
// (a QA plugin's 64x48 yuv420p layout with chroma rows of 8 bytes, or of 2
// rows, or in 2 planes, passed, and then every frame failed as a corrupt
// video), and RGB frames are named as RGB.
TEST(SessionOpenedCheckTest, AKnownNativeFormatsPlanesMustHoldIt) {
  ipc::SessionOpened o = Opened();
  o.layout.format = ipc::OutputFormat::kNative;
  o.layout.pixel_format = o.metadata.pixel_format = "yuv420p";
  o.layout.planes = {{0, 64, 48}, {64 * 48, 32, 24}, {64 * 48 + 32 * 24, 32, 24}};
  o.layout.size = 64 * 48 + 2 * 32 * 24;
  EXPECT_TRUE(Accept(o, kAskedNative).ok());
  ipc::SessionOpened narrow = o;
  narrow.layout.planes[1].stride = 8;
  ExpectRefused(narrow, "plane 1 of 24 rows of 8 bytes: yuv420p has 24 rows of at least 32 bytes there");
  ipc::SessionOpened few_rows = o;
  few_rows.layout.planes[2].rows = 2;
  ExpectRefused(few_rows, "plane 2 of 2 rows of 32 bytes: yuv420p has 24 rows");
  ipc::SessionOpened luma_rows = o;
  luma_rows.layout.planes[0].rows = 2;
  ExpectRefused(luma_rows, "plane 0 of 2 rows of 64 bytes: yuv420p has 48 rows");
  ipc::SessionOpened two = o;
  two.layout.planes.pop_back();
  ExpectRefused(two, "2 planes for yuv420p, which has 3");
  ipc::SessionOpened misnamed = Opened();
  misnamed.layout.pixel_format = "yuv420p";
  ExpectRefused(misnamed, "rgb24 frames named 'yuv420p'");
  misnamed.layout.pixel_format = "rgb24";
  EXPECT_TRUE(Accept(misnamed, {}).ok());
  // A format the host does not convert keeps the generic checks alone.
  ipc::SessionOpened vendor = o;
  vendor.layout.pixel_format = vendor.metadata.pixel_format = "vendor-tiled";
  vendor.layout.planes = {{0, 64, 48}, {64 * 48, 8, 2}};
  EXPECT_TRUE(Accept(vendor, kAskedNative).ok());
}

// Native frames in place of RGB are the decoder's pictures, converted by
// the host as the metadata describes the stream: a layout in another format (a hostile
// plugin's 'gray' for an 'rgb24' stream had every frame fail with the
// host's converter's internal message, blamed on the file), or, where RGB
// was asked for, one the host did not offer, of a rotated stream, or with
// an output size asked for, is the backend's lie.
TEST(SessionOpenedCheckTest, ANativeLayoutIsTheStreamsOfferedFormat) {
  ipc::SessionOpened o = Opened();
  o.layout.format = ipc::OutputFormat::kNative;
  o.layout.pixel_format = o.metadata.pixel_format = "gray";
  o.layout.planes = {{0, 64, 48}};
  o.layout.size = 64 * 48;
  const ipc::OpenSession offered{.native_formats = {"yuv420p", "gray"}};
  EXPECT_TRUE(Accept(o, offered).ok());
  EXPECT_TRUE(Accept(o, kAskedNative).ok());
  ipc::SessionOpened other = o;
  other.metadata.pixel_format = "rgb24";
  ExpectRefused(other, "describes a rgb24 stream but lays its frames out natively as gray", offered);
  EXPECT_TRUE(Accept(other, kAskedNative).ok());  // no conversion: the caller takes them as they come
  ExpectRefused(o, "gray where RGB was asked for and that format was not offered", {});
  ExpectRefused(o, "that format was not offered", {.native_formats = {"yuv420p"}});
  ipc::SessionOpened rotated = o;
  rotated.metadata.rotation_degrees = 90;
  ExpectRefused(rotated, "the stream is rotated", offered);
  EXPECT_TRUE(Accept(rotated, kAskedNative).ok());
  ipc::OpenSession sized = offered;
  sized.output_width = 64;
  ExpectRefused(o, "an output size was asked for", sized);
}

TEST(SessionOpenedCheckTest, TheLayoutIsTheStreamsSizeUnlessAnotherWasAsked) {
  ipc::SessionOpened o = Opened();
  o.metadata.width = 4294967295u;
  o.metadata.height = 4294967295u;
  ExpectRefused(o, "describes a 4294967295x4294967295 stream but lays its frames out at 64x48");
  EXPECT_TRUE(Accept(o, {.output_width = 64, .output_height = 48}).ok());
  ExpectRefused(o, "lays its frames out", {.output_width = 64});
}

TEST(SessionOpenedCheckTest, StreamNumbersMustBeOnesAStreamCanHave) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  struct Case {
    void (*lie)(ipc::StreamMetadata&, double nan, double inf);
    const char* text;
  };
  const Case cases[] = {
      {[](ipc::StreamMetadata& m, double, double inf) { m.average_fps = inf; }, "average_fps inf is not a finite"},
      {[](ipc::StreamMetadata& m, double, double) { m.average_fps = -25; }, "average_fps -25 is negative"},
      {[](ipc::StreamMetadata& m, double, double inf) { m.duration_seconds = inf; }, "duration_seconds inf"},
      {[](ipc::StreamMetadata& m, double, double) { m.duration_seconds = -1; }, "duration_seconds -1 is negative"},
      {[](ipc::StreamMetadata& m, double, double inf) { m.end_stream_seconds = -inf; }, "end_stream_seconds -inf"},
      {[](ipc::StreamMetadata& m, double, double) { m.end_stream_seconds = -1; }, "is before begin_stream_seconds"},
      {[](ipc::StreamMetadata& m, double nan, double) { m.rotation_degrees = nan; }, "rotation_degrees nan"},
      {[](ipc::StreamMetadata& m, double, double) { m.rotation_degrees = 1e300; }, "is past a turn"},
      {[](ipc::StreamMetadata& m, double, double) { m.num_frames_from_scan = INT64_MAX; }, "num_frames_from_scan"},
      {[](ipc::StreamMetadata& m, double, double) { m.num_frames_from_header = -2; }, "num_frames_from_header -2"},
      {[](ipc::StreamMetadata& m, double, double) { m.bit_rate = -1; }, "bit_rate -1 is negative"},
      // Finite times whose span is not: a caller's duration would be inf.
      {[](ipc::StreamMetadata& m, double, double) {
         m.begin_stream_seconds = -1.7e308;
         m.end_stream_seconds = 1.7e308;
       },
       "begin_stream_seconds -1.7e+308 is more than 1e+10 s either way"},
      {[](ipc::StreamMetadata& m, double, double) { m.duration_seconds = 1e300; }, "duration_seconds 1e+300 is more"},
      {[](ipc::StreamMetadata& m, double, double) { m.average_fps = 5e-324; }, "average_fps 4.94066e-324 is neither"},
      {[](ipc::StreamMetadata& m, double, double) {
         m.header_times = ipc::HeaderTimes{-3, 0};
       },
       "the header's duration_seconds -3 is negative"},
      {[](ipc::StreamMetadata& m, double nan, double) {
         m.header_times = ipc::HeaderTimes{1, nan};
       },
       "the header's begin_stream_seconds nan is not a finite"},
      {[](ipc::StreamMetadata& m, double, double) {
         m.pixel_aspect_ratio = ipc::Rational{4, 0};
       },
       "pixel_aspect_ratio of 4/0, which is not two positive 32-bit integers"},
      {[](ipc::StreamMetadata& m, double, double) {
         m.pixel_aspect_ratio = ipc::Rational{int64_t{1} << 40, 3};
       },
       "pixel_aspect_ratio of 1099511627776/3"},
      {[](ipc::StreamMetadata& m, double, double) {
         m.pixel_aspect_ratio = ipc::Rational{-1, 1};
       },
       "pixel_aspect_ratio of -1/1"},
  };
  for (const Case& c : cases) {
    ipc::SessionOpened o = Opened();
    c.lie(o.metadata, nan, inf);
    ExpectRefused(o, c.text);
  }
  // A NaN rate is av_q2d of an unknown 0/0: the host's unknown, 0.
  ipc::SessionOpened unknown_rate = Opened();
  unknown_rate.metadata.average_fps = nan;
  ASSERT_TRUE(AcceptStreamNumbers(&unknown_rate.metadata).ok());
  EXPECT_EQ(unknown_rate.metadata.average_fps, 0);
  ipc::SessionOpened most = Opened();
  most.metadata.num_frames_from_scan = kMaxStreamFrames;
  most.metadata.rotation_degrees = -270;
  most.metadata.header_times = ipc::HeaderTimes{0, -2.5};  // a header may start a stream before 0
  EXPECT_TRUE(Accept(most, {}).ok());
}

}  // namespace
}  // namespace codecvisor
