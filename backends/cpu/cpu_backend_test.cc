// File: backends/cpu/cpu_backend_test.cc
//
// Conformance of the cpu backend, through its C ABI in process, against the
// ffmpeg CLI and ffprobe on every video of test_media's catalogue (made at
// test time): bit-exact RGB24 (the CLI's "select=eq(n\,N),format=rgb24") in
// random, shuffled and sequential order, planar and native layouts, pts
// tables, exact and approximate seeking, index_at_seconds. Metadata and
// options: cpu_backend_options_test.cc; failures: cpu_backend_errors_test.cc.

#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

using testing::CliAllFrames;
using testing::CliFrame;
using testing::MakeVideo;
using testing::ProbeFramePts;
using testing::ProbePackets;
using testing::RgbBytes;
using testing::Shuffled;
using testing::TestSession;
using testing::TestVideo;
using testing::TestVideoPath;

class EveryVideoTest : public ::testing::TestWithParam<TestVideo> {
 protected:
  std::string path() const { return TestVideoPath(GetParam()); }
  int stream() const { return GetParam().stream; }
  TestSession::Options Options(cv_seek_mode mode = CV_SEEK_EXACT,
                               cv_output_format format = CV_OUTPUT_RGB24) const {
    TestSession::Options o;
    o.stream_index = stream();
    o.seek_mode = mode;
    o.output_format = format;
    return o;
  }
};

TEST_P(EveryVideoTest, PtsTableMatchesFfprobe) {
  TestSession s(path(), Options());
  ASSERT_TRUE(s.ok()) << s.open_message();
  std::vector<int64_t> probed = ProbeFramePts(path(), stream());
  std::sort(probed.begin(), probed.end());
  cv_stream_metadata m = s.Metadata();
  ASSERT_EQ(m.num_frames_from_scan, static_cast<int64_t>(probed.size()));
  std::map<int64_t, int64_t> durations;
  for (const auto& p : ProbePackets(path(), stream())) durations[p.pts] = p.duration;
  const cv_backend_v1* t = codecvisor_backend_v1();
  for (size_t i = 0; i < probed.size(); ++i) {
    cv_frame_info info{};
    cv_error error{};
    ASSERT_EQ(t->get_frame_info(s.get(), i, &info, &error), CV_OK) << error.message;
    EXPECT_EQ(info.index, static_cast<int64_t>(i));
    EXPECT_EQ(info.pts, probed[i]) << "frame " << i;
    EXPECT_DOUBLE_EQ(info.pts_seconds,
                     info.pts * static_cast<double>(m.time_base_num) / m.time_base_den);
    if (durations[info.pts] > 0) {
      EXPECT_NEAR(info.duration_seconds,
                  durations[info.pts] * static_cast<double>(m.time_base_num) / m.time_base_den,
                  1e-9)
          << "frame " << i;
    }
  }
  EXPECT_DOUBLE_EQ(m.begin_stream_seconds,
                   probed.front() * double(m.time_base_num) / m.time_base_den);
}

TEST_P(EveryVideoTest, RandomAccessIsBitExactWithCli) {
  TestSession s(path(), Options());
  ASSERT_TRUE(s.ok()) << s.open_message();
  const int64_t n = s.Metadata().num_frames_from_scan;
  const size_t bytes = RgbBytes(s.Layout());
  ASSERT_EQ(s.Layout().size, bytes);
  // The CLI's frame N, as `ffmpeg -vf select=eq(n\,N),format=rgb24` gives
  // it for a few N and as one full decode for the rest.
  const std::string all = CliAllFrames(path(), stream(), "format=rgb24");
  ASSERT_EQ(all.size(), bytes * n);
  std::map<int64_t, std::string> reference;
  for (int64_t i : {n / 2, n - 1, int64_t{0}}) {
    reference[i] = CliFrame(path(), stream(), i, "format=rgb24", bytes);
    EXPECT_TRUE(reference[i] == all.substr(i * bytes, bytes)) << "frame " << i;
  }
  // Middle, last, backwards, first, forwards across GOPs, repeats.
  for (int64_t i : {n / 2, n - 1, int64_t{3}, int64_t{0}, n - 2, int64_t{1}, int64_t{1}, n / 2 + 7,
                    n / 3, int64_t{0}, n - 1}) {
    i = std::clamp<int64_t>(i, 0, n - 1);
    if (!reference.count(i)) reference[i] = all.substr(i * bytes, bytes);
    cv_frame_info info{};
    std::string got = s.DecodeOrFail(i, &info);
    EXPECT_EQ(info.index, i);
    EXPECT_TRUE(got == reference[i]) << GetParam().name << ": frame " << i << " differs";
  }
}

TEST_P(EveryVideoTest, SequentialDecodeIsBitExactAndNeverSeeks) {
  TestSession s(path(), Options());
  ASSERT_TRUE(s.ok()) << s.open_message();
  const int64_t n = s.Metadata().num_frames_from_scan;
  const size_t bytes = RgbBytes(s.Layout());
  std::string all = CliAllFrames(path(), stream(), "format=rgb24");
  ASSERT_EQ(all.size(), bytes * n);
  for (int64_t i = 0; i < n; ++i) {
    std::string got = s.DecodeOrFail(i);
    ASSERT_TRUE(got == all.substr(i * bytes, bytes)) << GetParam().name << ": frame " << i;
  }
  // Exact mode seeks once, to the start, after its scan; never again.
  EXPECT_EQ(SeeksForTest(s.get()), 1);
}

TEST_P(EveryVideoTest, ShuffledAccessMatchesFullDecode) {
  TestSession s(path(), Options());
  ASSERT_TRUE(s.ok()) << s.open_message();
  const int64_t n = s.Metadata().num_frames_from_scan;
  const size_t bytes = RgbBytes(s.Layout());
  std::string all = CliAllFrames(path(), stream(), "format=rgb24");
  ASSERT_EQ(all.size(), bytes * n);
  for (int64_t i : Shuffled(n, 7)) {
    ASSERT_TRUE(s.DecodeOrFail(i) == all.substr(i * bytes, bytes)) << "frame " << i;
  }
}

TEST_P(EveryVideoTest, PlanarIsTheTransposeOfInterleaved) {
  TestSession rgb(path(), Options());
  TestSession planar(path(), Options(CV_SEEK_EXACT, CV_OUTPUT_RGB24_PLANAR));
  ASSERT_TRUE(rgb.ok() && planar.ok());
  cv_frame_layout l = planar.Layout();
  EXPECT_STREQ(l.pixel_format, "rgbp");
  ASSERT_EQ(l.num_planes, 3u);
  const size_t pixels = size_t{l.width} * l.height;
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(l.plane_offset[p], p * pixels);
    EXPECT_EQ(l.plane_stride[p], l.width);
    EXPECT_EQ(l.plane_rows[p], l.height);
  }
  for (int64_t i : {int64_t{0}, int64_t{5}, int64_t{2}}) {
    std::string hwc = rgb.DecodeOrFail(i);
    std::string chw = planar.DecodeOrFail(i);
    ASSERT_EQ(chw.size(), hwc.size());
    size_t mismatches = 0;
    for (size_t px = 0; px < pixels; ++px) {
      for (int c = 0; c < 3; ++c) mismatches += chw[c * pixels + px] != hwc[3 * px + c];
    }
    EXPECT_EQ(mismatches, 0u) << "frame " << i;
  }
}

TEST_P(EveryVideoTest, NativeIsTheDecodersOwnFormat) {
  TestSession s(path(), Options(CV_SEEK_EXACT, CV_OUTPUT_NATIVE));
  ASSERT_TRUE(s.ok()) << s.open_message();
  cv_frame_layout l = s.Layout();
  const std::string format = l.pixel_format;
  ASSERT_EQ(format, s.Metadata().pixel_format);
  ASSERT_EQ(l.num_planes, 3u);
  const uint32_t sample_bytes = format == "yuv420p10le" ? 2 : 1;
  EXPECT_EQ(l.plane_stride[0], l.width * sample_bytes);
  EXPECT_EQ(l.plane_rows[1], (l.height + 1) / 2);  // 4:2:0, odd sizes rounded up
  EXPECT_EQ(l.plane_stride[1], (l.width + 1) / 2 * sample_bytes);
  EXPECT_EQ(l.plane_offset[2], l.plane_offset[1] + l.plane_stride[1] * l.plane_rows[1]);
  const int64_t n = s.Metadata().num_frames_from_scan;
  for (int64_t i : {n - 1, int64_t{0}, n / 2}) {
    std::string want = CliFrame(path(), stream(), i, "null", l.size, "-pix_fmt " + format);
    EXPECT_TRUE(s.DecodeOrFail(i) == want) << "frame " << i;
  }
}

TEST_P(EveryVideoTest, ApproximateModeUsesTheHeader) {
  TestSession exact(path(), Options());
  TestSession approx(path(), Options(CV_SEEK_APPROXIMATE));
  ASSERT_TRUE(exact.ok() && approx.ok()) << approx.open_message();
  cv_stream_metadata m = approx.Metadata();
  const int64_t n = exact.Metadata().num_frames_from_scan;
  if (GetParam().approximate_scans) {
    // It counts the frames as exact mode does, and every index is the same
    // frame, in any order (the header's timeline would be frames off).
    EXPECT_EQ(m.num_frames_from_scan, n);
    for (int64_t i : Shuffled(n, 5)) EXPECT_TRUE(approx.DecodeOrFail(i) == exact.DecodeOrFail(i)) << "frame " << i;
    return;
  }
  EXPECT_EQ(m.num_frames_from_scan, -1);
  ASSERT_GT(m.average_fps, 0);
  // Sequential reads are the frames in order, whatever the timestamps.
  for (int64_t i = 0; i < std::min<int64_t>(n, 8); ++i) {
    EXPECT_TRUE(approx.DecodeOrFail(i) == exact.DecodeOrFail(i)) << "frame " << i;
  }
  EXPECT_EQ(SeeksForTest(approx.get()), 0);
  if (!GetParam().constant_rate) return;
  const cv_backend_v1* t = codecvisor_backend_v1();
  for (int64_t i : {n - 1, int64_t{2}, n / 2, n / 2 + 1, int64_t{0}}) {
    cv_frame_info want{}, got{}, nominal{};
    cv_error error{};
    std::string exact_pixels = exact.DecodeOrFail(i, &want);
    EXPECT_TRUE(approx.DecodeOrFail(i, &got) == exact_pixels) << "frame " << i;
    EXPECT_EQ(got.pts, want.pts);
    ASSERT_EQ(t->get_frame_info(approx.get(), i, &nominal, &error), CV_OK) << error.message;
    EXPECT_NEAR(nominal.pts_seconds, want.pts_seconds, 0.5 / m.average_fps);
    // The time a frame is said to play at finds that frame.
    int64_t at = -1;
    ASSERT_EQ(t->index_at_seconds(approx.get(), nominal.pts_seconds, &at, &error), CV_OK) << error.message;
    EXPECT_EQ(at, i) << "frame " << i << " at " << nominal.pts_seconds << " s";
  }
  // A time a hair before the end is the last frame's, as in exact mode (it
  // rounded up to the count: "time 2 s is outside the stream, which
  // plays from 0 s to 2 s").
  const cv_stream_metadata am = approx.Metadata();
  const int64_t count = n;  // the header's or estimated count: constant rate, the same
  cv_error error{};
  int64_t last = -1;
  ASSERT_EQ(t->index_at_seconds(approx.get(), std::nextafter(am.end_stream_seconds, -INFINITY), &last, &error), CV_OK)
      << error.message;
  EXPECT_EQ(last, count - 1);
}

TEST_P(EveryVideoTest, IndexAtSecondsFindsTheFramePlaying) {
  TestSession s(path(), Options());
  ASSERT_TRUE(s.ok());
  const cv_backend_v1* t = codecvisor_backend_v1();
  cv_stream_metadata m = s.Metadata();
  cv_error error{};
  int64_t index = -1;
  for (int64_t i = 0; i < m.num_frames_from_scan; ++i) {
    cv_frame_info info{};
    ASSERT_EQ(t->get_frame_info(s.get(), i, &info, &error), CV_OK);
    ASSERT_EQ(t->index_at_seconds(s.get(), info.pts_seconds, &index, &error), CV_OK)
        << error.message;
    EXPECT_EQ(index, i);
    ASSERT_EQ(t->index_at_seconds(s.get(), info.pts_seconds + info.duration_seconds * 0.9, &index,
                                  &error),
              CV_OK);
    EXPECT_EQ(index, i);
  }
  EXPECT_EQ(t->index_at_seconds(s.get(), m.begin_stream_seconds - 0.001, &index, &error),
            CV_ERROR_OUT_OF_RANGE);
  EXPECT_NE(std::string(error.message).find(GetParam().name), std::string::npos) << error.message;
  EXPECT_EQ(t->index_at_seconds(s.get(), m.end_stream_seconds, &index, &error),
            CV_ERROR_OUT_OF_RANGE);
}

INSTANTIATE_TEST_SUITE_P(Videos, EveryVideoTest, ::testing::ValuesIn(testing::TestVideos()),
                         [](const auto& info) { return testing::TestName(info.param); });

// MPEG-TS has no index: an approximate seek lands on any packet, and the
// cursor waits for a key frame before decoding. A first request for the
// last frame lands past the last key frame and meets none before the end;
// that must not be taken for a stream that flags no key frames, or later
// seeks decode HEVC from non-key packets (grey, wrong frames).
TEST(CpuBackendTest, ApproximateSeeksInTransportStreamsStartAtKeyFrames) {
  const std::string path = TestVideoPath(testing::FindTestVideo("hevc.ts"));
  TestSession exact(path, TestSession::Options{});
  TestSession::Options approximate;
  approximate.seek_mode = CV_SEEK_APPROXIMATE;
  TestSession approx(path, approximate);
  ASSERT_TRUE(exact.ok() && approx.ok()) << approx.open_message();
  const int64_t n = exact.Metadata().num_frames_from_scan;
  for (int64_t i : {n - 1, n / 2 + 3, int64_t{30}, int64_t{4}}) {
    EXPECT_TRUE(approx.DecodeOrFail(i) == exact.DecodeOrFail(i)) << "frame " << i;
  }
}

// A raw H.264 elementary stream (.h264): no timestamps in the file (the
// demuxer makes up dts, no pts) and no seeking by time, so every seek starts
// over from the first byte. Exact mode still finds every frame, as the CLI
// decodes it; approximate mode, with no header to trust, refuses to open.
TEST(CpuBackendTest, RawElementaryStreamDecodesInExactMode) {
  const std::string path = MakeVideo(
      "annexb_bframes.h264",
      "-f lavfi -i testsrc2=size=96x64:rate=25 -frames:v 40 -c:v libx264 -preset veryfast -bf 3 "
      "-g 12 -pix_fmt yuv420p");
  TestSession s(path, TestSession::Options{});
  ASSERT_TRUE(s.ok()) << s.open_message();
  const int64_t n = s.Metadata().num_frames_from_scan;
  ASSERT_EQ(n, 40);
  const size_t bytes = RgbBytes(s.Layout());
  const std::string all = CliAllFrames(path, 0, "format=rgb24");
  ASSERT_EQ(all.size(), bytes * n);
  // Out of order first (each a seek back to the start), then in order.
  for (int64_t i : {int64_t{30}, int64_t{5}, int64_t{39}, int64_t{0}}) {
    EXPECT_TRUE(s.DecodeOrFail(i) == all.substr(i * bytes, bytes)) << "frame " << i;
  }
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(s.DecodeOrFail(i) == all.substr(i * bytes, bytes)) << "frame " << i;
  }
  TestSession::Options approximate;
  approximate.seek_mode = CV_SEEK_APPROXIMATE;
  TestSession approx(path, approximate);
  EXPECT_FALSE(approx.ok());
  EXPECT_NE(approx.open_message().find("open it in exact mode"), std::string::npos) << approx.open_message();
}

TEST(CpuBackendTest, EntryTableDescribesTheCpuBackend) {
  const cv_backend_v1* t = codecvisor_backend_v1();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->struct_size, sizeof(cv_backend_v1));
  EXPECT_EQ(t->abi_version, static_cast<uint32_t>(CODECVISOR_BACKEND_ABI_VERSION));
  EXPECT_STREQ(t->name, "cpu");
  EXPECT_EQ(t->exact_cpu_output, 1);
  EXPECT_NE(std::string(t->version), "");
}

}  // namespace
}  // namespace codecvisor::cpu
