// File: backends/cpu/cpu_backend_options_test.cc
//
// The cpu backend's metadata and open options, through its C ABI in process:
// header fields, colour tags and rotation, a non-zero start time, stream
// selection, resizing (against the CLI's scale filter), decoder threads, and
// independent concurrent sessions.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/session.h"
#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

using testing::CliFrame;
using testing::FindTestVideo;
using testing::MakeVideo;
using testing::TestSession;
using testing::TestVideoPath;

TEST(CpuBackendTest, MetadataOfAnH264File) {
  TestSession s(TestVideoPath(FindTestVideo("h264.mp4")));
  ASSERT_TRUE(s.ok()) << s.open_message();
  cv_stream_metadata m = s.Metadata();
  EXPECT_EQ(m.stream_index, 0);
  EXPECT_EQ(m.num_video_streams, 1u);
  EXPECT_STREQ(m.codec, "h264");
  EXPECT_STREQ(m.pixel_format, "yuv420p");
  EXPECT_EQ(m.width, 160u);
  EXPECT_EQ(m.height, 96u);
  EXPECT_EQ(m.num_frames_from_header, 120);
  EXPECT_EQ(m.num_frames_from_scan, 120);
  EXPECT_DOUBLE_EQ(m.average_fps, 25);
  EXPECT_DOUBLE_EQ(m.begin_stream_seconds, 0);
  EXPECT_DOUBLE_EQ(m.end_stream_seconds, 4.8);
  EXPECT_DOUBLE_EQ(m.duration_seconds, 4.8);
  EXPECT_GT(m.bit_rate, 0);
  EXPECT_EQ(m.rotation_degrees, 0);
  EXPECT_EQ(m.time_base_num, 1);
  EXPECT_EQ(m.time_base_den, 12800);
  cv_frame_layout l = s.Layout();
  EXPECT_STREQ(l.pixel_format, "rgb24");
  EXPECT_EQ(l.num_planes, 1u);
  EXPECT_EQ(l.plane_stride[0], 160u * 3);
  EXPECT_EQ(l.size, 160u * 96 * 3);
}

TEST(CpuBackendTest, ColourTagsAndRotationAreReported) {
  std::string encoded = MakeVideo(
      "tagged_unrotated.mp4",
      "-f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 10 -c:v libx264 -preset veryfast "
      "-pix_fmt yuv420p -colorspace bt709 -color_primaries bt709 -color_trc bt709 "
      "-color_range tv");
  // The mov muxer writes a display matrix for a "rotate" tag on stream copy.
  std::string path =
      MakeVideo("tagged.mp4", absl::StrCat("-i ", encoded, " -c copy -metadata:s:v:0 rotate=90"));
  TestSession s(path);
  ASSERT_TRUE(s.ok()) << s.open_message();
  cv_stream_metadata m = s.Metadata();
  EXPECT_STREQ(m.color_space, "bt709");
  EXPECT_STREQ(m.color_range, "tv");
  EXPECT_STREQ(m.color_primaries, "bt709");
  EXPECT_STREQ(m.color_transfer, "bt709");
  // As ffprobe prints it: "rotation=90" (av_display_rotation_get); the size
  // is the rotated frames' (cpu_backend_rotation_test.cc).
  EXPECT_DOUBLE_EQ(m.rotation_degrees, 90);
  EXPECT_EQ(m.width, 48u);
  EXPECT_EQ(m.height, 64u);
}

// bit_rate is the stream's, as ffprobe's stream entry (and torchcodec,
// which reads the codec parameters) report it: Matroska and WebM record no
// per-stream rate, so it is 0 there, never the container's overall rate.
TEST(CpuBackendTest, BitRateIsTheStreamsAsFfprobeReportsIt) {
  const std::string encoded = MakeVideo(
      "bit_rate_source.mp4", "-f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 20 -c:v libx264 -pix_fmt yuv420p");
  const std::string mkv = MakeVideo("bit_rate.mkv", absl::StrCat("-i ", encoded, " -c copy"));
  const std::string webm = MakeVideo(
      "bit_rate.webm", "-f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 20 -c:v libvpx -b:v 200k");
  for (const std::string& path : {encoded, mkv, webm}) {
    SCOPED_TRACE(path);
    auto probe = [&](const std::string& entries) {
      std::string out = testing::Run(absl::StrCat("ffprobe -v error -select_streams v:0 -show_entries ", entries,
                                         " -of default=noprint_wrappers=1:nokey=1 ", path));
      while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
      return out;
    };
    const std::string stream_rate = probe("stream=bit_rate");
    const std::string format_rate = probe("format=bit_rate");
    ASSERT_NE(format_rate, "N/A");  // every file has a container rate
    TestSession s(path);
    ASSERT_TRUE(s.ok()) << s.open_message();
    const int64_t want = stream_rate == "N/A" ? 0 : std::stoll(stream_rate);
    EXPECT_EQ(s.Metadata().bit_rate, want) << "ffprobe: stream " << stream_rate << ", format " << format_rate;
    // Matroska and WebM have no per-stream rate: 0, not the container's.
    if (path != encoded) EXPECT_EQ(stream_rate, "N/A");
    if (path == encoded) EXPECT_GT(want, 0);
  }
}

TEST(CpuBackendTest, NonZeroStartTime) {
  TestSession s(TestVideoPath(FindTestVideo("offset.mkv")));
  ASSERT_TRUE(s.ok());
  cv_stream_metadata m = s.Metadata();
  EXPECT_NEAR(m.begin_stream_seconds, 2.5, 1e-9);
  EXPECT_NEAR(m.end_stream_seconds, 2.5 + 48 / 25.0, 1e-9);
  const cv_backend_v1* t = codecvisor_backend_v1();
  cv_error error{};
  int64_t index = -1;
  ASSERT_EQ(t->index_at_seconds(s.get(), 2.5, &index, &error), CV_OK) << error.message;
  EXPECT_EQ(index, 0);
  ASSERT_EQ(t->index_at_seconds(s.get(), 3.0, &index, &error), CV_OK);
  EXPECT_EQ(index, 12);
  EXPECT_EQ(t->index_at_seconds(s.get(), 1.0, &index, &error), CV_ERROR_OUT_OF_RANGE);
  TestSession approx(TestVideoPath(FindTestVideo("offset.mkv")), TestSession::Approximate());
  ASSERT_TRUE(approx.ok());
  ASSERT_EQ(t->index_at_seconds(approx.get(), 3.0, &index, &error), CV_OK) << error.message;
  EXPECT_EQ(index, 12);
}

TEST(CpuBackendTest, ChoosesAmongVideoStreams) {
  const std::string path = TestVideoPath(FindTestVideo("two_streams.mkv"));
  TestSession best(path);
  ASSERT_TRUE(best.ok()) << best.open_message();
  EXPECT_EQ(best.Metadata().num_video_streams, 2u);
  EXPECT_TRUE(best.Metadata().stream_index == 0 || best.Metadata().stream_index == 1);
  TestSession::Options o;
  o.stream_index = 1;
  TestSession second(path, o);
  ASSERT_TRUE(second.ok());
  EXPECT_STREQ(second.Metadata().codec, "mpeg4");
  EXPECT_EQ(second.Metadata().width, 80u);
  EXPECT_TRUE(second.DecodeOrFail(7) == CliFrame(path, 1, 7, "format=rgb24", 80 * 48 * 3));
  o.stream_index = 2;  // the audio stream
  TestSession audio(path, o);
  EXPECT_EQ(audio.open_status(), CV_ERROR_NOT_FOUND);
  EXPECT_NE(audio.open_message().find("stream 2 is not a video stream (it is an audio stream)"), std::string::npos)
      << audio.open_message();
  EXPECT_NE(audio.open_message().find("two_streams.mkv"), std::string::npos);
}

// FFmpeg's best stream may be a cover image: it ranks a picture attached to
// a Matroska file above a video flagged for the hearing impaired (a
// sign-language track). The default is then the best of the videos, where
// the open failed with "has no video stream".
TEST(CpuBackendTest, TheDefaultStreamIsAVideoWhereFfmpegPicksACover) {
  const std::string cover = MakeVideo("cover.png", "-f lavfi -i color=red:size=32x32 -frames:v 1");
  for (const char* flag : {"hearing_impaired", "visual_impaired"}) {
    const std::string path =
        MakeVideo(std::string(flag) + "_with_cover.mkv",
                  std::string("-f lavfi -i testsrc=size=64x48:rate=25:duration=1 -c:v libx264 -pix_fmt yuv420p "
                              "-disposition:v:0 ") +
                      flag + " -attach " + cover + " -metadata:s:t mimetype=image/png");
    TestSession best(path);
    ASSERT_TRUE(best.ok()) << flag << ": " << best.open_message();
    EXPECT_EQ(best.Metadata().stream_index, 0) << flag;
    EXPECT_EQ(best.Metadata().width, 64u) << flag;
    EXPECT_EQ(best.Metadata().num_frames_from_scan, 25) << flag;
  }
}

TEST(CpuBackendTest, ResizesLikeTheScaleFilter) {
  const std::string path = TestVideoPath(FindTestVideo("h264.mp4"));
  TestSession::Options o;
  o.output_width = 75;
  o.output_height = 50;
  TestSession rgb(path, o);
  ASSERT_TRUE(rgb.ok()) << rgb.open_message();
  EXPECT_EQ(rgb.Layout().width, 75u);
  EXPECT_EQ(rgb.Layout().height, 50u);
  for (int64_t i : {int64_t{0}, int64_t{61}}) {
    EXPECT_TRUE(rgb.DecodeOrFail(i) ==
                CliFrame(path, 0, i, "scale=75:50,format=rgb24", 75 * 50 * 3))
        << "frame " << i;
  }
  // Native planes lie back to back in the buffer. Widths that are not a
  // multiple of swscale's SIMD block make it store past a row's end: the
  // luma plane's last row must not spill into the chroma planes.
  o.output_format = CV_OUTPUT_NATIVE;
  for (auto [width, height] : {std::pair{80u, 50u}, std::pair{75u, 50u}, std::pair{33u, 21u}}) {
    o.output_width = width;
    o.output_height = height;
    TestSession native(path, o);
    ASSERT_TRUE(native.ok()) << native.open_message();
    const size_t bytes = size_t{width} * height + 2 * size_t{(width + 1) / 2} * ((height + 1) / 2);
    ASSERT_EQ(native.Layout().size, bytes);
    for (int64_t i : {int64_t{33}, int64_t{0}}) {
      EXPECT_TRUE(native.DecodeOrFail(i) ==
                  CliFrame(path, 0, i, absl::StrCat("scale=", width, ":", height), bytes, "-pix_fmt yuv420p"))
          << width << "x" << height << " frame " << i;
    }
  }
}

TEST(CpuBackendTest, DecoderThreadsDoNotChangeFrames) {
  const std::string path = TestVideoPath(FindTestVideo("h264.mp4"));
  TestSession::Options o;
  o.decoder_threads = 1;
  TestSession one(path, o);
  o.decoder_threads = 3;
  TestSession three(path, o);
  TestSession automatic(path);
  ASSERT_TRUE(one.ok() && three.ok() && automatic.ok());
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{90}, int64_t{45}, int64_t{119}}) {
    std::string a = automatic.DecodeOrFail(i);
    EXPECT_TRUE(one.DecodeOrFail(i) == a) << "frame " << i;
    EXPECT_TRUE(three.DecodeOrFail(i) == a) << "frame " << i;
  }
}

// Threads past kMaxDecoderThreads, a core count on a large machine, open
// with that many: the frames are the same, and the process holds no more
// threads than that over what it had.
TEST(CpuBackendTest, DecoderThreadsPastTheLimitOpenWithTheLimit) {
  const std::string path = TestVideoPath(FindTestVideo("h264.mp4"));
  const auto tasks = [] {
    return std::distance(std::filesystem::directory_iterator("/proc/self/task"), std::filesystem::directory_iterator{});
  };
  const auto before = tasks();
  TestSession::Options o;
  o.decoder_threads = 1000;
  TestSession many(path, o);
  ASSERT_TRUE(many.ok()) << many.open_message();
  const std::string frame = many.DecodeOrFail(45);
  EXPECT_LE(tasks() - before, static_cast<std::ptrdiff_t>(kMaxDecoderThreads));
  TestSession automatic(path);
  ASSERT_TRUE(automatic.ok());
  EXPECT_TRUE(frame == automatic.DecodeOrFail(45));
}

TEST(CpuBackendTest, ConcurrentSessionsAreIndependent) {
  const std::string path = TestVideoPath(FindTestVideo("hevc.mkv"));
  TestSession a(path), b(path);
  ASSERT_TRUE(a.ok() && b.ok());
  // Interleaved calls on two sessions of one file: each keeps its position.
  for (int64_t i = 0; i < 30; ++i) {
    std::string fa = a.DecodeOrFail(i);
    std::string fb = b.DecodeOrFail(89 - i);
    if (i == 89 - i) EXPECT_TRUE(fa == fb);
  }
  EXPECT_EQ(SeeksForTest(a.get()), 1);
}

}  // namespace
}  // namespace codecvisor::cpu
