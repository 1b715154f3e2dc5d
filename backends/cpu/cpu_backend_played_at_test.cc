// File: backends/cpu/cpu_backend_played_at_test.cc
//
// Approximate mode's requests by time (decode_frame_at_seconds): on
// variable-rate streams and where frames share a time, the frame played at
// a time is exact mode's, and reading on from it gives exact mode's next.

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

using testing::MakeVideo;
using testing::TestSession;

constexpr auto Approximate = TestSession::Approximate;

// A variable-rate stream far from its header rate's nominal times: every
// ten frames a 0.6 s pause, which the frames' durations (a frame's worth
// in both containers) do not cover: the frame before a pause is the one
// played until the frame after it. (The times are integers in
// the source's 1/25 s time base: a division there would round some frames
// onto the one before.)
std::string PausingVideo(const std::string& name) {
  return MakeVideo(name,
                   "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 60 "
                   "-vf setpts='N+floor(N/10)*15' -fps_mode passthrough -c:v libx264 -preset veryfast "
                   "-bf 2 -g 30 -pix_fmt yuv420p");
}

// Every `step` seconds over the stream, first in time order and then
// shuffled (fixed seed: decoding on, and seeks back and forth), approximate
// mode's frame played at the time has exact mode's pts and pixels, and
// every 7th time the next index reads on to exact mode's next frame.
void ExpectTimesAgreeWithExact(const std::string& path, double step) {
  TestSession exact(path);
  ASSERT_TRUE(exact.ok()) << exact.open_message();
  const cv_stream_metadata m = exact.Metadata();
  const int64_t n = m.num_frames_from_scan;
  std::vector<double> times;
  for (int k = 0; m.begin_stream_seconds + k * step < m.end_stream_seconds; ++k) {
    times.push_back(m.begin_stream_seconds + k * step);
  }
  std::vector<double> shuffled = times;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
  for (const std::vector<double>& order : {times, shuffled}) {
    TestSession approx(path, Approximate());
    ASSERT_TRUE(approx.ok()) << approx.open_message();
    for (size_t k = 0; k < order.size(); ++k) {
      const double t = order[k];
      cv_frame_info got{}, want{};
      std::string pixels, want_pixels, message;
      ASSERT_EQ(approx.DecodeAt(t, &pixels, &got, &message), CV_OK) << "at " << t << " s: " << message;
      ASSERT_EQ(exact.DecodeAt(t, &want_pixels, &want, &message), CV_OK) << "at " << t << " s: " << message;
      EXPECT_EQ(got.pts, want.pts) << "at " << t << " s";
      EXPECT_TRUE(pixels == want_pixels) << "at " << t << " s";
      if (k % 7 == 0 && want.index + 1 < n) {
        cv_frame_info next{}, want_next{};
        ASSERT_EQ(approx.Decode(got.index + 1, &pixels, &next, &message), CV_OK) << message;
        want_pixels = exact.DecodeOrFail(want.index + 1, &want_next);
        EXPECT_EQ(next.pts, want_next.pts) << "after the frame at " << t << " s";
        EXPECT_TRUE(pixels == want_pixels) << "after the frame at " << t << " s";
      }
    }
  }
}

class PlayedAtTest : public ::testing::TestWithParam<const char*> {};

// ".mp4" of "pausing.mp4".
std::string Extension(const std::string& name) { return name.substr(name.find('.')); }

TEST_P(PlayedAtTest, ATimeFindsTheFramePlayingThenWhateverTheRate) {
  const std::string path = PausingVideo(GetParam());
  TestSession exact(path);
  ASSERT_TRUE(exact.ok()) << exact.open_message();
  const cv_stream_metadata m = exact.Metadata();
  const int64_t n = m.num_frames_from_scan;
  ASSERT_EQ(n, 60);
  ExpectTimesAgreeWithExact(path, 0.05);
  std::vector<double> times;
  for (int k = 0; m.begin_stream_seconds + k * 0.05 < m.end_stream_seconds; ++k) {
    times.push_back(m.begin_stream_seconds + k * 0.05);
  }
  // Reading on from a frame found by time goes to the stream's end, even
  // where the frames' nominal labels run past the header's count.
  {
    TestSession approx(path, Approximate());
    cv_frame_info at_50{}, got{}, want{};
    std::string pixels, message;
    exact.DecodeOrFail(50, &want);
    ASSERT_EQ(approx.DecodeAt(want.pts_seconds, &pixels, &at_50, &message), CV_OK) << message;
    EXPECT_EQ(at_50.pts, want.pts);
    int64_t label = at_50.index;
    for (int64_t i = 51; i < n; ++i) {
      ASSERT_EQ(approx.Decode(++label, &pixels, &got, &message), CV_OK) << "frame " << i << ": " << message;
      exact.DecodeOrFail(i, &want);
      EXPECT_EQ(got.pts, want.pts) << "frame " << i;
    }
    EXPECT_EQ(approx.Decode(++label, &pixels, &got, &message), CV_ERROR_OUT_OF_RANGE) << message;
  }
  // The frame after the last, found by time, is past the end, without a
  // seek (the stream's end has been read).
  {
    TestSession approx(path, Approximate());
    cv_frame_info last{}, got{};
    std::string pixels, message;
    exact.DecodeOrFail(n - 1, &last);
    ASSERT_EQ(approx.DecodeAt(last.pts_seconds, &pixels, &got, &message), CV_OK) << message;
    EXPECT_EQ(got.pts, last.pts);
    const int64_t seeks = SeeksForTest(approx.get());
    EXPECT_EQ(approx.Decode(got.index + 1, &pixels, nullptr, &message), CV_ERROR_OUT_OF_RANGE) << message;
    EXPECT_EQ(SeeksForTest(approx.get()), seeks);
  }
  // What the header's rate makes of a time: the frame decoded for the
  // nominal index that index_at_seconds gives is another frame for most
  // times on this stream.
  TestSession approx(path, Approximate());
  int wrong = 0;
  for (double t : times) {
    int64_t index = -1;
    cv_error error{};
    ASSERT_EQ(codecvisor_backend_v1()->index_at_seconds(approx.get(), t, &index, &error), CV_OK) << error.message;
    cv_frame_info got{}, want{};
    std::string pixels;
    if (approx.Decode(index, &pixels, &got) != CV_OK) continue;
    exact.DecodeAt(t, &pixels, &want);
    wrong += got.pts != want.pts ? 1 : 0;
  }
  EXPECT_GT(wrong, static_cast<int>(times.size()) / 3);
}

// A stream with one long gap (10 frames, 5 s of nothing, 40 frames): its
// average rate, 50 frames in 7 s, puts the first index past the header's
// count half a frame from the last frame's time. Reading on from the first
// frame, found by time, gives each frame once and then the end: the index
// past the count, read on at the stream's end, was the last frame again,
// found by its nominal time (a time range over the stream had 51 frames).
TEST(PlayedAtGapTest, ReadingOnEndsAtTheStreamsEndPastTheCount) {
  const std::string path = MakeVideo("one_gap.mp4",
                                     "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 50 "
                                     "-vf setpts='if(lt(N,10),N,125+N)' -fps_mode passthrough -c:v libx264 "
                                     "-preset veryfast -bf 0 -pix_fmt yuv420p");
  TestSession exact(path);
  ASSERT_TRUE(exact.ok()) << exact.open_message();
  ASSERT_EQ(exact.Metadata().num_frames_from_scan, 50);
  TestSession approx(path, Approximate());
  ASSERT_TRUE(approx.ok()) << approx.open_message();
  ASSERT_EQ(approx.Metadata().num_frames_from_header, 50);
  cv_frame_info got{}, want{};
  std::string pixels, want_pixels, message;
  ASSERT_EQ(approx.DecodeAt(0.0, &pixels, &got, &message), CV_OK) << message;
  int64_t label = got.index;
  for (int64_t i = 1; i < 50; ++i) {
    ASSERT_EQ(approx.Decode(++label, &pixels, &got, &message), CV_OK) << "frame " << i << ": " << message;
    want_pixels = exact.DecodeOrFail(i, &want);
    EXPECT_EQ(got.pts, want.pts) << "frame " << i;
    EXPECT_TRUE(pixels == want_pixels) << "frame " << i;
  }
  EXPECT_EQ(approx.Decode(++label, &pixels, &got, &message), CV_ERROR_OUT_OF_RANGE)
      << "label " << label << " gave the frame at " << got.pts_seconds << " s";
}

// A clip cut with `ffmpeg -ss 1.3 -c copy`: its edit list (the header's
// end, 2.7 s) runs 0.02 s past the last packet's end (2.68 s). A time in
// between is within the stream as the metadata says, and the last frame
// plays there (it failed "the stream's last frame ... ends before it":
// an odd-files QA helper's random-timestamp sampler on such a clip).
TEST(PlayedAtCutClipTest, TheLastFramePlaysToTheHeadersEndOfACutClip) {
  const std::string source = MakeVideo("cut_source.mp4",
                                       "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 100 -c:v libx264 "
                                       "-preset veryfast -bf 2 -g 25 -pix_fmt yuv420p");
  const std::string cut = MakeVideo("cut_clip.mp4", "-ss 1.3 -i " + source + " -c copy");
  TestSession exact(cut);
  TestSession approx(cut, Approximate());
  ASSERT_TRUE(exact.ok() && approx.ok()) << approx.open_message();
  const cv_stream_metadata m = approx.Metadata();
  cv_frame_info last{}, got{};
  exact.DecodeOrFail(exact.Metadata().num_frames_from_scan - 1, &last);
  const double last_end = last.pts_seconds + last.duration_seconds;
  ASSERT_GT(m.end_stream_seconds, last_end + 0.01) << "no slack between the last packet and the header's end";
  std::string pixels, message;
  const double t = (last_end + m.end_stream_seconds) / 2;
  ASSERT_EQ(approx.DecodeAt(t, &pixels, &got, &message), CV_OK) << "at " << t << " s: " << message;
  EXPECT_EQ(got.pts, last.pts);
}

// Frame 4k+5 takes frame 4k+4's pts (a muxer that rounded two frames
// onto one time), which leaves a frame's gap after it. Exact mode counts
// both frames and shows the later one at that time; so must approximate
// mode, whose packet durations say the first of the two plays there.
TEST_P(PlayedAtTest, FramesSharingATimeGiveTheLastOfThemAsExactModeDoes) {
  const std::string path = MakeVideo("tie" + Extension(GetParam()),
                                     "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 40 "
                                     "-vf setpts='N-eq(mod(N\\,10)\\,5)' -fps_mode passthrough -c:v libx264 "
                                     "-preset veryfast -bf 2 -g 30 -pix_fmt yuv420p");
  TestSession exact(path);
  ASSERT_TRUE(exact.ok()) << exact.open_message();
  ASSERT_EQ(exact.Metadata().num_frames_from_scan, 40);
  cv_frame_info fourth{}, fifth{};
  const std::string fourth_pixels = exact.DecodeOrFail(4, &fourth);
  const std::string fifth_pixels = exact.DecodeOrFail(5, &fifth);
  ASSERT_EQ(fourth.pts, fifth.pts) << "the file has no frames sharing a time";
  ASSERT_FALSE(fourth_pixels == fifth_pixels);
  ExpectTimesAgreeWithExact(path, 0.02);
  // The tie's time, reached by decoding on from frame 3 and by a seek.
  for (int64_t from : {int64_t{3}, int64_t{30}}) {
    TestSession approx(path, Approximate());
    cv_frame_info info{};
    std::string pixels, message;
    ASSERT_EQ(approx.Decode(from, &pixels, &info, &message), CV_OK) << message;
    ASSERT_EQ(approx.DecodeAt(fifth.pts_seconds, &pixels, &info, &message), CV_OK) << message;
    EXPECT_TRUE(pixels == fifth_pixels) << "from frame " << from;
  }
}

// AVI with B-frames: the header starts the stream at 0, where the decoder
// shows its first frame one frame later, and approximate mode's nominal
// timeline starts there. A time from the header's start (the public API's
// begin in approximate mode) up to that first frame finds the first frame,
// the one shown then; a time before the header's start is out of range.
TEST(PlayedAtBeforeTheFirstFrameTest, TheHeadersStartShowsTheFirstFrame) {
  const std::string path = testing::TestVideoPath(testing::FindTestVideo("mpeg4_bframes.avi"));
  TestSession approx(path, Approximate());
  ASSERT_TRUE(approx.ok()) << approx.open_message();
  const cv_backend_v1* t = codecvisor_backend_v1();
  cv_header_times header{};
  cv_error error{};
  ASSERT_EQ(t->get_header_times(approx.get(), &header, &error), CV_OK) << error.message;
  const cv_stream_metadata m = approx.Metadata();
  ASSERT_EQ(header.begin_stream_seconds, 0);
  ASSERT_NEAR(m.begin_stream_seconds, 0.04, 1e-9) << "the first frame is no longer shown late";
  cv_frame_info first{};
  const std::string first_pixels = approx.DecodeOrFail(0, &first);
  for (double seconds : {0.0, 0.02, std::nextafter(m.begin_stream_seconds, 0.0)}) {
    int64_t index = -1;
    ASSERT_EQ(t->index_at_seconds(approx.get(), seconds, &index, &error), CV_OK) << seconds << ": " << error.message;
    EXPECT_EQ(index, 0) << seconds;
    TestSession fresh(path, Approximate());
    cv_frame_info info{};
    std::string pixels, message;
    ASSERT_EQ(fresh.DecodeAt(seconds, &pixels, &info, &message), CV_OK) << seconds << ": " << message;
    EXPECT_EQ(info.index, 0) << seconds;
    EXPECT_EQ(info.pts, first.pts) << seconds;
    EXPECT_TRUE(pixels == first_pixels) << seconds;
  }
  int64_t index = -1;
  EXPECT_EQ(t->index_at_seconds(approx.get(), -0.001, &index, &error), CV_ERROR_OUT_OF_RANGE);
  EXPECT_NE(std::string(error.message).find("time -0.001 s is outside the stream, which plays from 0 s"),
            std::string::npos)
      << error.message;
  // A time too large for a fixed-point figure is written as an exponent.
  EXPECT_EQ(t->index_at_seconds(approx.get(), 1e308, &index, &error), CV_ERROR_OUT_OF_RANGE);
  EXPECT_NE(std::string(error.message).find("time 1e+308 s is outside"), std::string::npos) << error.message;
  // Exact mode's stream starts at its first frame.
  TestSession exact(path);
  ASSERT_TRUE(exact.ok()) << exact.open_message();
  EXPECT_EQ(t->index_at_seconds(exact.get(), 0.02, &index, &error), CV_ERROR_OUT_OF_RANGE);
}

INSTANTIATE_TEST_SUITE_P(Containers, PlayedAtTest, ::testing::Values("pausing.mp4", "pausing.mkv"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return Extension(info.param).substr(1);
                         });

}  // namespace
}  // namespace codecvisor::cpu
