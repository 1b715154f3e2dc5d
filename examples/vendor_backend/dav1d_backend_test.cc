// File: examples/vendor_backend/dav1d_backend_test.cc
//
// The dav1d plugin loaded through dlopen, as the runner loads it, against
// the ffmpeg CLI: RGB24 bit-exact on every frame in sequential and random
// order, planar and native output, resizing, timestamps against ffprobe,
// index_at_seconds, approximate mode and decoder threads.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test_support.h"

namespace dav1d_plugin::testing {
namespace {

class Dav1dBackendTest : public ::testing::TestWithParam<SampleVideo> {
 protected:
  void SetUp() override {
    path_ = MakeVideo(GetParam().name, GetParam().encode);
    reference_ = ReferenceFrames(path_, "format=rgb24");
  }

  // Frame `i` of the reference, for a w x h RGB24 frame size.
  std::vector<uint8_t> Expected(int64_t i, const cv_frame_layout& layout) const {
    const size_t size = layout.size;
    return std::vector<uint8_t>(reference_.begin() + i * size, reference_.begin() + (i + 1) * size);
  }

  std::string path_;
  std::vector<uint8_t> reference_;  // all frames, RGB24
};

TEST_P(Dav1dBackendTest, TableDescribesThePlugin) {
  const cv_backend_v1& b = Backend();
  EXPECT_EQ(b.abi_version, CODECVISOR_BACKEND_ABI_VERSION);
  EXPECT_EQ(b.struct_size, sizeof(cv_backend_v1));
  EXPECT_STREQ(b.name, "dav1d");
  EXPECT_EQ(b.exact_cpu_output, 1);
}

TEST_P(Dav1dBackendTest, MetadataMatchesFfprobe) {
  OpenVideo v;
  ASSERT_EQ(v.Open(path_, DefaultOptions()), CV_OK) << v.error();
  cv_stream_metadata m = v.Metadata();
  EXPECT_STREQ(m.codec, "av1");
  EXPECT_EQ(std::to_string(m.width), ProbeStream(path_, "width"));
  EXPECT_EQ(std::to_string(m.height), ProbeStream(path_, "height"));
  EXPECT_EQ(m.pixel_format, ProbeStream(path_, "pix_fmt"));
  EXPECT_EQ(m.color_range, ProbeStream(path_, "color_range"));
  const std::vector<int64_t> pts = ProbeFramePts(path_);
  EXPECT_EQ(m.num_frames_from_scan, static_cast<int64_t>(pts.size()));
  // The header's own times too, in exact mode, as ffprobe reads the header:
  // the stream's duration, else the container's.
  cv_header_times header{};
  cv_error error{};
  ASSERT_EQ(Backend().get_header_times(v.get(), &header, &error), CV_OK) << error.message;
  const std::string duration = ProbeStream(path_, "duration");
  double header_duration = duration == "N/A" ? std::stod(ProbeFormat(path_, "duration")) : std::stod(duration);
  // Matroska's segment duration ends on the timeline from 0: the stream's
  // span is that less its start.
  const double start = std::stod(ProbeStream(path_, "start_time"));
  if (duration == "N/A" && path_.size() > 4 && path_.substr(path_.size() - 4) == ".mkv") header_duration -= start;
  EXPECT_NEAR(header.duration_seconds, header_duration, 1e-6);
  EXPECT_NEAR(header.begin_stream_seconds, std::stod(ProbeStream(path_, "start_time")), 1e-6);
  EXPECT_EQ(m.num_video_streams, 1u);
  // The stream's own rate as ffprobe reports it ("N/A": 0), never the
  // container's (Matroska and WebM record none per stream).
  const std::string rate = ProbeStream(path_, "bit_rate");
  EXPECT_EQ(m.bit_rate, rate == "N/A" ? 0 : std::stoll(rate)) << "ffprobe: " << rate;
  EXPECT_GT(m.average_fps, 0);
  EXPECT_GT(m.time_base_den, 0);
  const double tb = static_cast<double>(m.time_base_num) / m.time_base_den;
  EXPECT_DOUBLE_EQ(m.begin_stream_seconds, pts.front() * tb);
  EXPECT_GT(m.end_stream_seconds, pts.back() * tb);
  EXPECT_NEAR(m.duration_seconds, m.end_stream_seconds - m.begin_stream_seconds, 1e-9);
  cv_frame_layout l = v.Layout();
  EXPECT_STREQ(l.pixel_format, "rgb24");
  EXPECT_EQ(l.size, uint64_t{m.width} * m.height * 3);
}

TEST_P(Dav1dBackendTest, EveryFrameBitExactWithFfmpegInOrderAndShuffled) {
  OpenVideo v;
  ASSERT_EQ(v.Open(path_, DefaultOptions()), CV_OK) << v.error();
  const int64_t n = v.Metadata().num_frames_from_scan;
  const cv_frame_layout layout = v.Layout();
  ASSERT_EQ(reference_.size(), n * layout.size);
  const std::vector<int64_t> pts = ProbeFramePts(path_);
  std::vector<uint8_t> frame;
  for (int64_t i = 0; i < n; ++i) {
    cv_frame_info info{};
    ASSERT_EQ(v.Decode(i, &frame, &info), CV_OK) << v.error();
    ASSERT_TRUE(frame == Expected(i, layout)) << "frame " << i << " differs (in order)";
    EXPECT_EQ(info.index, i);
    EXPECT_EQ(info.pts, pts[i]);
  }
  std::vector<int64_t> order;
  for (int64_t i = 0; i < n; ++i) order.push_back(i);
  order.push_back(n - 1);  // the same frame twice
  order.push_back(0);
  std::shuffle(order.begin(), order.end(), std::mt19937(1234));
  for (int64_t i : order) {
    ASSERT_EQ(v.Decode(i, &frame), CV_OK) << v.error();
    ASSERT_TRUE(frame == Expected(i, layout)) << "frame " << i << " differs (shuffled)";
  }
}

TEST_P(Dav1dBackendTest, ReferenceEqualsTheSelectCommand) {
  // The one-pass reference above is the brief's per-frame command.
  OpenVideo v;
  ASSERT_EQ(v.Open(path_, DefaultOptions()), CV_OK) << v.error();
  const int64_t n = v.Metadata().num_frames_from_scan;
  std::vector<uint8_t> frame;
  for (int64_t i : {n / 2, n - 1}) {
    ASSERT_EQ(v.Decode(i, &frame), CV_OK) << v.error();
    EXPECT_TRUE(frame == ReferenceFrameBySelect(path_, i)) << "frame " << i;
  }
}

TEST_P(Dav1dBackendTest, FrameInfoAndIndexAtSeconds) {
  OpenVideo v;
  ASSERT_EQ(v.Open(path_, DefaultOptions()), CV_OK) << v.error();
  const cv_stream_metadata m = v.Metadata();
  const std::vector<int64_t> pts = ProbeFramePts(path_);
  cv_error error{};
  for (int64_t i = 0; i < m.num_frames_from_scan; ++i) {
    cv_frame_info info{};
    ASSERT_EQ(Backend().get_frame_info(v.get(), i, &info, &error), CV_OK) << error.message;
    EXPECT_EQ(info.pts, pts[i]);
    EXPECT_GT(info.duration_seconds, 0);
    int64_t found = -1;
    ASSERT_EQ(Backend().index_at_seconds(v.get(), info.pts_seconds, &found, &error), CV_OK);
    EXPECT_EQ(found, i);
    ASSERT_EQ(Backend().index_at_seconds(v.get(), info.pts_seconds + info.duration_seconds / 2, &found, &error), CV_OK);
    EXPECT_EQ(found, i);
    if (i == 0) EXPECT_EQ(info.key_frame, 1);
  }
  int64_t found = -1;
  EXPECT_EQ(Backend().index_at_seconds(v.get(), m.begin_stream_seconds - 0.001, &found, &error), CV_ERROR_OUT_OF_RANGE);
  EXPECT_EQ(Backend().index_at_seconds(v.get(), m.end_stream_seconds, &found, &error), CV_ERROR_OUT_OF_RANGE);
  EXPECT_NE(std::string(error.message).find(GetParam().name), std::string::npos) << error.message;
  EXPECT_EQ(Backend().index_at_seconds(v.get(), std::nan(""), &found, &error), CV_ERROR_INVALID_ARGUMENT);
  cv_frame_info info{};
  EXPECT_EQ(Backend().get_frame_info(v.get(), m.num_frames_from_scan, &info, &error), CV_ERROR_OUT_OF_RANGE);
}

TEST_P(Dav1dBackendTest, PlanarIsTheTransposeOfRgb24) {
  cv_open_options o = DefaultOptions();
  o.output_format = CV_OUTPUT_RGB24_PLANAR;
  OpenVideo v;
  ASSERT_EQ(v.Open(path_, o), CV_OK) << v.error();
  const cv_frame_layout l = v.Layout();
  ASSERT_EQ(l.num_planes, 3u);
  EXPECT_STREQ(l.pixel_format, "rgbp");
  const size_t pixels = size_t{l.width} * l.height;
  std::vector<uint8_t> frame;
  for (int64_t i : {int64_t{0}, int64_t{5}, int64_t{3}}) {
    ASSERT_EQ(v.Decode(i, &frame), CV_OK) << v.error();
    const uint8_t* rgb = reference_.data() + i * pixels * 3;
    for (size_t p = 0; p < pixels; ++p) {
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(frame[l.plane_offset[c] + p], rgb[3 * p + c]) << "frame " << i << " pixel " << p;
      }
    }
  }
}

TEST_P(Dav1dBackendTest, NativeOutputIsTheDecodedPicture) {
  cv_open_options o = DefaultOptions();
  o.output_format = CV_OUTPUT_NATIVE;
  OpenVideo v;
  ASSERT_EQ(v.Open(path_, o), CV_OK) << v.error();
  const cv_frame_layout l = v.Layout();
  const std::string native = ProbeStream(path_, "pix_fmt");
  EXPECT_EQ(l.pixel_format, native);
  const std::vector<uint8_t> all = ReferenceFrames(path_, "format=" + native);
  const int64_t n = v.Metadata().num_frames_from_scan;
  ASSERT_EQ(all.size(), n * l.size);
  std::vector<uint8_t> frame;
  for (int64_t i = n - 1; i >= 0; i -= 3) {
    ASSERT_EQ(v.Decode(i, &frame), CV_OK) << v.error();
    EXPECT_TRUE(std::equal(frame.begin(), frame.end(), all.begin() + i * l.size)) << i;
  }
}

TEST_P(Dav1dBackendTest, ResizedOutputMatchesScaleFilter) {
  cv_open_options o = DefaultOptions();
  o.output_width = 40;
  o.output_height = 30;
  OpenVideo v;
  ASSERT_EQ(v.Open(path_, o), CV_OK) << v.error();
  const cv_frame_layout l = v.Layout();
  ASSERT_EQ(l.size, 40u * 30 * 3);
  const std::vector<uint8_t> all = ReferenceFrames(path_, "scale=40:30,format=rgb24");
  std::vector<uint8_t> frame;
  for (int64_t i : {int64_t{2}, int64_t{0}, int64_t{7}}) {
    ASSERT_EQ(v.Decode(i, &frame), CV_OK) << v.error();
    EXPECT_TRUE(std::equal(frame.begin(), frame.end(), all.begin() + i * l.size)) << i;
  }
}

TEST_P(Dav1dBackendTest, ApproximateModeTrustsTheHeader) {
  cv_open_options o = DefaultOptions();
  o.seek_mode = CV_SEEK_APPROXIMATE;
  OpenVideo v;
  ASSERT_EQ(v.Open(path_, o), CV_OK) << v.error();
  const cv_stream_metadata m = v.Metadata();
  EXPECT_EQ(m.num_frames_from_scan, -1);
  EXPECT_GT(m.average_fps, 0);
  const cv_frame_layout layout = v.Layout();
  const int64_t n = static_cast<int64_t>(reference_.size() / layout.size);
  // The header's count, or its duration at its rate, is the stream's.
  const int64_t counted = m.num_frames_from_header >= 0 ? m.num_frames_from_header
                                                        : std::llround(m.duration_seconds * m.average_fps);
  EXPECT_EQ(counted, n) << "duration " << m.duration_seconds << " s at " << m.average_fps << " fps";
  std::vector<uint8_t> frame;
  // Sequential, then a jump back and forward: constant-rate samples map
  // each index to the same frame as exact mode.
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{2}, n - 2, n / 2, int64_t{1}}) {
    cv_frame_info info{};
    ASSERT_EQ(v.Decode(i, &frame, &info), CV_OK) << v.error() << " frame " << i;
    EXPECT_TRUE(frame == Expected(i, layout)) << "frame " << i;
  }
}

TEST_P(Dav1dBackendTest, DecoderThreadsDoNotChangePixels) {
  for (uint32_t threads : {1u, 3u}) {
    cv_open_options o = DefaultOptions();
    o.decoder_threads = threads;
    OpenVideo v;
    ASSERT_EQ(v.Open(path_, o), CV_OK) << v.error();
    const cv_frame_layout layout = v.Layout();
    std::vector<uint8_t> frame;
    for (int64_t i : {int64_t{4}, int64_t{1}, int64_t{9}, int64_t{10}}) {
      ASSERT_EQ(v.Decode(i, &frame), CV_OK) << v.error();
      EXPECT_TRUE(frame == Expected(i, layout)) << "threads " << threads << " frame " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Samples, Dav1dBackendTest, ::testing::ValuesIn(SampleVideos()),
                         [](const ::testing::TestParamInfo<SampleVideo>& info) {
                           std::string name = info.param.name;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace dav1d_plugin::testing
