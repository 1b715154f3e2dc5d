// File: backends/cpu/cpu_backend_approximate_test.cc
//
// Approximate mode beyond the catalogue's conformance checks: the first
// request for a late frame seeks, a stream without a frame count in its
// header gets an estimate that says it is one, a file with negative times
// and a variable-rate stream's last counted frame. Damaged, cut and
// edited files: cpu_backend_approximate_damage_test.cc. Requests by time:
// cpu_backend_played_at_test.cc.

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

using testing::CliAllFrames;
using testing::FindTestVideo;
using testing::MakeVideo;
using testing::ReadFile;
using testing::TestSession;
using testing::TestVideoPath;
using testing::WriteFile;

constexpr auto Approximate = TestSession::Approximate;

// 12 s at 25 fps, a key frame every 100 frames.
std::string LongGops() {
  return MakeVideo("long_gops.mp4",
                   "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 300 -c:v libx264 "
                   "-preset veryfast -bf 2 -g 100 -keyint_min 100 -sc_threshold 0 -pix_fmt yuv420p");
}

// AVI keeps decode times only. With B-frames the decoder holds frames back
// (two, x264's default), so approximate mode's timeline starts two frames
// late, as the decoder shows them; what it still holds at the end comes
// out with no time. A stream no longer than that (1 or 2 frames) drains
// every frame untimed, and so does a request in a last GOP that short:
// each is still the CLI's frame of its index, asked for first (a seek) or
// in order.
TEST(ApproximateModeTest, AviFramesHeldToTheEndAreOnTheTimeline) {
  for (int frames : {1, 2, 3, 12}) {
    SCOPED_TRACE(absl::StrCat(frames, " frames"));
    const std::string path =
        MakeVideo(absl::StrCat("held_", frames, ".avi"),
                  absl::StrCat("-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v ", frames,
                               " -threads 1 -c:v libx264 -bf 3 -g 10 -pix_fmt yuv420p"));
    const std::string cli = CliAllFrames(path, 0, "format=rgb24");
    TestSession in_order(path, Approximate());
    ASSERT_TRUE(in_order.ok()) << in_order.open_message();
    ASSERT_EQ(in_order.Metadata().num_frames_from_header, frames);
    const size_t bytes = testing::RgbBytes(in_order.Layout());
    ASSERT_EQ(cli.size(), bytes * frames);
    for (int64_t i = 0; i < frames; ++i) {
      cv_frame_info info{};
      EXPECT_TRUE(in_order.DecodeOrFail(i, &info) == cli.substr(i * bytes, bytes)) << "frame " << i << " in order";
      EXPECT_EQ(info.index, i);
      TestSession first(path, Approximate());
      EXPECT_TRUE(first.DecodeOrFail(i) == cli.substr(i * bytes, bytes)) << "frame " << i << " asked for first";
    }
  }
}

TEST(ApproximateModeTest, FirstRequestForALateFrameSeeks) {
  TestSession exact(LongGops());
  TestSession approx(LongGops(), Approximate());
  ASSERT_TRUE(exact.ok() && approx.ok()) << approx.open_message();
  cv_frame_info got{}, want{};
  std::string pixels = approx.DecodeOrFail(250, &got);
  EXPECT_EQ(SeeksForTest(approx.get()), 1) << "the first request decoded from the start";
  EXPECT_TRUE(pixels == exact.DecodeOrFail(250, &want));
  EXPECT_EQ(got.pts, want.pts);
  // A first request inside the first GOP reads on from the start.
  TestSession early(LongGops(), Approximate());
  early.DecodeOrFail(40, &got);
  EXPECT_EQ(SeeksForTest(early.get()), 0);
  exact.DecodeOrFail(40, &want);
  EXPECT_EQ(got.pts, want.pts);
}

// The same in Matroska, whose demuxer indexes key frames as it reads them
// until a seek loads the cues: the few it indexed while the file was
// opened do not stand for the whole index.
TEST(ApproximateModeTest, FirstRequestForALateFrameSeeksInMatroska) {
  const std::string path = MakeVideo("many_gops.mkv",
                                     "-f lavfi -i testsrc2=size=320x240:rate=24 -frames:v 240 -c:v libx264 "
                                     "-preset veryfast -bf 2 -g 12 -pix_fmt yuv420p");
  TestSession exact(path);
  TestSession approx(path, Approximate());
  ASSERT_TRUE(exact.ok() && approx.ok()) << approx.open_message();
  cv_frame_info got{}, want{};
  std::string pixels = approx.DecodeOrFail(239, &got);
  EXPECT_EQ(SeeksForTest(approx.get()), 1) << "the first request decoded from the start";
  EXPECT_TRUE(pixels == exact.DecodeOrFail(239, &want));
  EXPECT_EQ(got.pts, want.pts);
}

// Matroska records no frame count: the count is estimated from the
// duration and the frame rate, as torchcodec does, and messages say so.
TEST(ApproximateModeTest, CountWithoutAHeaderCountIsAnEstimate) {
  const std::string path = TestVideoPath(FindTestVideo("av1.mkv"));  // 30 frames, 25 fps
  TestSession s(path, Approximate());
  ASSERT_TRUE(s.ok()) << s.open_message();
  cv_stream_metadata m = s.Metadata();
  EXPECT_EQ(m.num_frames_from_header, -1);
  EXPECT_EQ(m.num_frames_from_scan, -1);
  EXPECT_NEAR(m.duration_seconds * m.average_fps, 30, 0.5);
  cv_frame_info info{};
  s.DecodeOrFail(29, &info);
  std::string pixels, message;
  EXPECT_EQ(s.Decode(30, &pixels, nullptr, &message), CV_ERROR_OUT_OF_RANGE);
  EXPECT_NE(message.find("about 30 frames"), std::string::npos) << message;
  EXPECT_NE(message.find("duration"), std::string::npos) << message;
  EXPECT_EQ(message.find("according to its header"), std::string::npos) << message;
}

// Matroska gives streams no duration field. Each stream's DURATION tag, not
// the container's span of all streams, is its duration; and FFmpeg's muxer
// writes both as end times, so a stream that starts late does not lengthen.
// A header rate past any video's (a Matroska frame duration of 50 us; the
// blocks' own times are 40 ms apart): not
// one approximate mode places frames by, whose time ranges the host would
// refuse as the backend's lie; exact mode times the frames from packets.
TEST(ApproximateModeTest, AHeaderRatePastAnyVideosIsRefusedForExactMode) {
  std::string bytes = ReadFile(MakeVideo("slow.mkv", "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 5 -c:v ffv1"));
  // The track's DefaultDuration (ID 0x23E383, 4 bytes): 40 ms made 50 us.
  const size_t at = bytes.find("\x23\xe3\x83\x84");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at + 4, 4, std::string("\x00\x00\xc3\x50", 4));
  const std::string path = WriteFile("fast.mkv", bytes);
  TestSession approx(path, Approximate());
  EXPECT_EQ(approx.open_status(), CV_ERROR_UNSUPPORTED) << approx.open_message();
  EXPECT_NE(approx.open_message().find("frame rate of 20000 a second in its header"), std::string::npos)
      << approx.open_message();
  EXPECT_NE(approx.open_message().find("open it in exact mode"), std::string::npos);
  TestSession exact(path);
  ASSERT_TRUE(exact.ok()) << exact.open_message();
  EXPECT_EQ(exact.Metadata().num_frames_from_scan, 5);
}

TEST(ApproximateModeTest, MatroskaDurationIsTheStreamsOwn) {
  const std::string two = MakeVideo("two_lengths.mkv",
                                    "-f lavfi -i testsrc=size=64x48:rate=25:duration=2 "
                                    "-f lavfi -i testsrc=size=64x48:rate=10:duration=3 "
                                    "-map 0 -map 1 -c:v libx264 -pix_fmt yuv420p");
  for (auto [stream, seconds, frames] : {std::tuple{0, 2.0, 50}, std::tuple{1, 3.0, 30}}) {
    TestSession::Options o = Approximate();
    o.stream_index = stream;
    TestSession s(two, o);
    ASSERT_TRUE(s.ok()) << s.open_message();
    const cv_stream_metadata m = s.Metadata();
    EXPECT_NEAR(m.duration_seconds, seconds, 0.01) << "stream " << stream;
    EXPECT_NEAR(m.duration_seconds * m.average_fps, frames, 0.5) << "stream " << stream;
  }
  const std::string late = MakeVideo("starts_at_5.mkv",
                                     "-f lavfi -i testsrc=size=64x48:rate=25:duration=2 "
                                     "-c:v libx264 -pix_fmt yuv420p -output_ts_offset 5");
  TestSession s(late, Approximate());
  ASSERT_TRUE(s.ok()) << s.open_message();
  const cv_stream_metadata m = s.Metadata();
  EXPECT_NEAR(m.begin_stream_seconds, 5.0, 0.01);
  EXPECT_NEAR(m.duration_seconds, 2.0, 0.01);
  EXPECT_NEAR(m.end_stream_seconds, 7.0, 0.01);
  cv_frame_info info{};
  s.DecodeOrFail(49, &info);
  std::string pixels, message;
  EXPECT_EQ(s.Decode(50, &pixels, nullptr, &message), CV_ERROR_OUT_OF_RANGE) << message;
  // A stream that starts late and ends before another (the audio runs
  // 0-5 s, the video 1-3 s): FFmpeg's tag is still an end time (3 s), not
  // a length, though 1 + 3 s ends inside the segment. Read as a length it
  // made 75 frames of 50; so did a remux of an MP4 whose audio outlasts
  // its video (the video moved to 0.023 s: one frame too many).
  const std::string inside = MakeVideo("starts_late_ends_early.mkv",
                                       "-itsoffset 1 -f lavfi -i testsrc=size=64x48:rate=25:duration=2 "
                                       "-f lavfi -i sine=duration=5 -map 0 -map 1 -c:v libx264 -pix_fmt yuv420p "
                                       "-c:a pcm_s16le");
  TestSession within(inside, Approximate());
  ASSERT_TRUE(within.ok()) << within.open_message();
  const cv_stream_metadata w = within.Metadata();
  EXPECT_NEAR(w.begin_stream_seconds, 1.0, 0.01);
  EXPECT_NEAR(w.duration_seconds, 2.0, 0.01);
  EXPECT_NEAR(w.duration_seconds * w.average_fps, 50, 0.5);
  within.DecodeOrFail(49, &info);
  EXPECT_EQ(within.Decode(50, &pixels, nullptr, &message), CV_ERROR_OUT_OF_RANGE) << message;
  // ffmpeg copies stream tags: a cut or remux of an mkvmerge file keeps the
  // source's statistics tags and its "DURATION-eng" (here 10 s), beside the
  // plain DURATION FFmpeg writes. Those are stale: the first made the end
  // time a span again (75 frames), the second promised 250 frames for 50.
  const std::string stale_statistics = MakeVideo(
      "starts_late_stale_statistics.mkv",
      "-itsoffset 1 -f lavfi -i testsrc=size=64x48:rate=25:duration=2 -f lavfi -i sine=duration=5 -map 0 -map 1 "
      "-c:v libx264 -pix_fmt yuv420p -c:a pcm_s16le -metadata:s:v:0 _STATISTICS_WRITING_APP=mkvmerge "
      "-metadata:s:v:0 _STATISTICS_TAGS=DURATION");
  const std::string stale_duration =
      MakeVideo("cut_with_a_stale_duration.mkv",
                "-f lavfi -i testsrc=size=64x48:rate=25:duration=2 -c:v libx264 -pix_fmt yuv420p "
                "-metadata:s:v:0 DURATION-eng=00:00:10.000000000 -metadata:s:v:0 _STATISTICS_WRITING_APP-eng=mkvmerge");
  for (const std::string& path : {stale_statistics, stale_duration}) {
    TestSession stale(path, Approximate());
    ASSERT_TRUE(stale.ok()) << stale.open_message();
    const cv_stream_metadata sm = stale.Metadata();
    EXPECT_NEAR(sm.duration_seconds, 2.0, 0.01) << path;
    EXPECT_NEAR(sm.duration_seconds * sm.average_fps, 50, 0.5) << path;
  }
}

// Exact mode's times are the frames'; get_header_times gives what the header
// said, in both modes. A Matroska file cut in half still says 4 s from 1 s,
// where its frames end at a little over 2 s.
TEST(ApproximateModeTest, HeaderTimesAreTheHeadersInEitherMode) {
  const std::string full = MakeVideo("four_seconds_from_1.mkv",
                                     "-f lavfi -i testsrc=size=64x48:rate=25:duration=4 "
                                     "-c:v libx264 -pix_fmt yuv420p -output_ts_offset 1");
  const std::string bytes = ReadFile(full);
  const std::string half = WriteFile("four_seconds_cut_in_half.mkv", bytes.substr(0, bytes.size() / 2));
  for (const bool exact : {true, false}) {
    TestSession s(half, exact ? TestSession::Options() : Approximate());
    ASSERT_TRUE(s.ok()) << s.open_message();
    cv_header_times header{};
    cv_error error{};
    ASSERT_EQ(codecvisor_backend_v1()->get_header_times(s.get(), &header, &error), CV_OK) << error.message;
    EXPECT_NEAR(header.begin_stream_seconds, 1.0, 1e-9) << exact;
    EXPECT_NEAR(header.duration_seconds, 4.0, 1e-9) << exact;
    const cv_stream_metadata m = s.Metadata();
    EXPECT_NEAR(m.begin_stream_seconds, 1.0, 1e-9) << exact;
    if (exact) {
      EXPECT_LT(m.end_stream_seconds, 3.0) << "the scan's end, where the cut file's frames end";
    } else {
      EXPECT_NEAR(m.duration_seconds, 4.0, 1e-9);
    }
  }
}

// An undamaged variable-rate HEVC stream with open GOPs: after a jump,
// sequential reads return the next frames in order even where they are far
// from their nominal times (the damage checks stay out of the way).
TEST(ApproximateModeTest, OpenGopAfterASeekIsNotDamage) {
  const std::string path = MakeVideo(
      "hevc_open_gop_vfr.mkv",
      "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 96 "
      "-vf setpts='if(lt(N,40),N,40+(N-40)*3)/25/TB' -fps_mode vfr -c:v libx265 -preset ultrafast "
      "-x265-params keyint=24:min-keyint=24:bframes=3:open-gop=1:log-level=error -pix_fmt yuv420p");
  TestSession exact(path);
  TestSession approx(path, Approximate());
  ASSERT_TRUE(exact.ok() && approx.ok()) << approx.open_message();
  cv_frame_info first{};
  approx.DecodeOrFail(30, &first);  // a jump: seeks to a key frame before it
  cv_frame_info want{};
  exact.DecodeOrFail(30, &want);
  ASSERT_EQ(first.pts, want.pts);
  // Sequential from there: the next frames in order, whatever their times.
  for (int64_t i = 31; i < 60; ++i) {
    cv_frame_info got{};
    std::string pixels, message;
    ASSERT_EQ(approx.Decode(i, &pixels, &got, &message), CV_OK) << "frame " << i << ": " << message;
    exact.DecodeOrFail(i, &want);
    EXPECT_EQ(got.pts, want.pts) << "frame " << i;
  }
}

// FFmpeg reads a Matroska block's negative time as no time at all, and a
// seek lands on the first block with a time at best. Frames 0-49 here have
// none, and with key frames every 12 frames and B-frames, the first timed
// frames need the untimed key frame 48 and some untimed packets follow
// timed ones in decode order. Exact mode places the untimed frames before
// frame 50 (at 0 s), a packet's duration apart, and decodes every frame as
// the ffmpeg CLI does, in any order, reading from the container's first
// packet where a seek lands too late. Approximate mode sees what the
// header says, a stream of 2 s from 0 s, and finds frames 50-99 there, by
// index and by time, reading from the first packet where it must.
TEST(ApproximateModeTest, MatroskaWithNegativeTimesDecodesInAnyOrder) {
  const std::string path = MakeVideo("negative_times.mkv",
                                     "-f lavfi -i testsrc2=size=160x120:rate=25 -frames:v 100 -c:v libx264 "
                                     "-preset veryfast -bf 2 -g 12 -pix_fmt yuv420p -avoid_negative_ts disabled "
                                     "-output_ts_offset -2");
  const std::string cli = CliAllFrames(path, 0, "format=rgb24");
  TestSession exact(path);
  ASSERT_TRUE(exact.ok()) << exact.open_message();
  const cv_stream_metadata m = exact.Metadata();
  ASSERT_EQ(m.num_frames_from_scan, 100);
  EXPECT_DOUBLE_EQ(m.begin_stream_seconds, -2.0);
  EXPECT_DOUBLE_EQ(m.end_stream_seconds, 2.0);
  const size_t frame_bytes = exact.Layout().size;
  ASSERT_EQ(cli.size(), 100 * frame_bytes);
  std::vector<std::string> frames;
  for (int64_t i = 0; i < 100; ++i) frames.push_back(cli.substr(i * frame_bytes, frame_bytes));
  // Every frame differs from the others: a frame returned for another
  // index shows.
  ASSERT_EQ(std::set<std::string>(frames.begin(), frames.end()).size(), frames.size());
  for (int64_t i = 0; i < 100; ++i) {
    cv_frame_info info{};
    EXPECT_TRUE(exact.DecodeOrFail(i, &info) == frames[i]) << "frame " << i << " in order";
    EXPECT_EQ(info.pts, 40 * i - 2000) << "frame " << i;
  }
  std::vector<int64_t> order(100);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(11));
  TestSession shuffled(path);
  for (int64_t i : order) {
    std::string pixels, message;
    ASSERT_EQ(shuffled.Decode(i, &pixels, nullptr, &message), CV_OK) << "frame " << i << ": " << message;
    EXPECT_TRUE(pixels == frames[i]) << "frame " << i;
  }
  TestSession approx(path, Approximate());
  ASSERT_TRUE(approx.ok()) << approx.open_message();
  for (int64_t i : order) {
    if (i >= 50) continue;
    std::string pixels, message;
    ASSERT_EQ(approx.Decode(i, &pixels, nullptr, &message), CV_OK) << "frame " << i << ": " << message;
    EXPECT_TRUE(pixels == frames[50 + i]) << "frame " << i;
  }
  for (int k = 0; k < 50; ++k) {
    const double t = 0.01 + (k * 37 % 50) * 0.04;  // every frame's time, shuffled
    TestSession fresh(path, Approximate());
    for (TestSession* session : {&approx, &fresh}) {
      std::string pixels, message;
      ASSERT_EQ(session->DecodeAt(t, &pixels, nullptr, &message), CV_OK) << "at " << t << " s: " << message;
      EXPECT_TRUE(pixels == frames[50 + static_cast<int64_t>(t / 0.04)]) << "at " << t << " s";
    }
  }
}

// The same with the zero inside a GOP (-0.5 s at 25 fps, 12.5 frames):
// FFmpeg gives the stream the start of its first timed block in file
// order, 0.1 s, a P-frame decoded before the two B-frames timed 0.02 and
// 0.06 s. Approximate mode names frames from the header's start: index 0
// is the frame at 0.1 s, whether it is read first in order (from the
// first packet) or asked for alone, and a batch in order is every single
// read, to the header's last frame.
TEST(ApproximateModeTest, MatroskaWhoseZeroIsInsideAGopStartsAtTheHeadersStart) {
  const std::string path = MakeVideo("negative_times_mid_gop.mkv",
                                     "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 50 -c:v libx264 "
                                     "-preset veryfast -bf 2 -pix_fmt yuv420p -avoid_negative_ts disabled "
                                     "-output_ts_offset -0.5");
  const std::string cli = CliAllFrames(path, 0, "format=rgb24");
  TestSession in_order(path, Approximate());
  ASSERT_TRUE(in_order.ok()) << in_order.open_message();
  const cv_stream_metadata m = in_order.Metadata();
  ASSERT_DOUBLE_EQ(m.begin_stream_seconds, 0.1);
  ASSERT_NEAR(m.duration_seconds * m.average_fps, 35, 0.01);
  const size_t frame_bytes = in_order.Layout().size;
  ASSERT_EQ(cli.size(), 50 * frame_bytes);
  // The CLI's frames run from -0.5 s, 0.04 s apart: index i is its 15 + i.
  for (int64_t i = 0; i < 35; ++i) {
    cv_frame_info info{};
    EXPECT_TRUE(in_order.DecodeOrFail(i, &info) == cli.substr((15 + i) * frame_bytes, frame_bytes))
        << "frame " << i << " in order";
    EXPECT_EQ(info.pts, 100 + 40 * i) << "frame " << i << " in order";
  }
  std::string pixels;
  EXPECT_EQ(in_order.Decode(35, &pixels), CV_ERROR_OUT_OF_RANGE);
  for (int64_t i : {0, 1, 2, 34}) {
    TestSession alone(path, Approximate());
    cv_frame_info info{};
    EXPECT_TRUE(alone.DecodeOrFail(i, &info) == cli.substr((15 + i) * frame_bytes, frame_bytes)) << "frame " << i;
    EXPECT_EQ(info.pts, 100 + 40 * i) << "frame " << i << " alone";
  }
}

// A variable-rate MP4 whose header counts its 100 frames exactly, and whose
// last frame (jittered 18 ms early) is more than half a frame before the
// header rate's nominal time for index 99: that index is still the last
// frame, as exact mode counts, and no index past it is.
TEST(ApproximateModeTest, TheLastCountedIndexIsTheLastFrameWhereverItsTime) {
  const std::string path = MakeVideo("jitter.mp4",
                                     "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 100 "
                                     "-vf settb=1/1000,setpts='(N/25+0.018*sin(N*1.7))/TB' -fps_mode passthrough "
                                     "-enc_time_base 1/1000 -c:v libx264 -preset veryfast -bf 2 -pix_fmt yuv420p");
  TestSession exact(path);
  ASSERT_TRUE(exact.ok()) << exact.open_message();
  ASSERT_EQ(exact.Metadata().num_frames_from_scan, 100);
  cv_frame_info last{};
  const std::string last_pixels = exact.DecodeOrFail(99, &last);
  TestSession approx(path, Approximate());
  ASSERT_TRUE(approx.ok()) << approx.open_message();
  const cv_stream_metadata m = approx.Metadata();
  ASSERT_EQ(m.num_frames_from_header, 100);
  // The file is what the test needs: frame 99 is more than half a frame
  // before its nominal time.
  ASSERT_LT(last.pts_seconds, m.begin_stream_seconds + 98.5 / m.average_fps);
  for (int64_t before : {int64_t{-1}, int64_t{20}, int64_t{98}}) {
    TestSession session(path, Approximate());
    std::string pixels, message;
    if (before >= 0) ASSERT_EQ(session.Decode(before, &pixels, nullptr, &message), CV_OK) << message;
    cv_frame_info info{};
    ASSERT_EQ(session.Decode(99, &pixels, &info, &message), CV_OK) << "after " << before << ": " << message;
    EXPECT_EQ(info.pts, last.pts) << "after " << before;
    EXPECT_TRUE(pixels == last_pixels) << "after " << before;
    EXPECT_EQ(session.Decode(100, &pixels, nullptr, &message), CV_ERROR_OUT_OF_RANGE) << message;
  }
}

// A variable-rate stream (25 frames at 25 fps, then 25 at 10 fps): read
// in order from an index placed by its nominal time, frames run out before
// the count does. The indices after that are found by their own times, as
// each alone would be; before, every one up to the count was "past the
// end" (samplers over such files failed for random seeds).
TEST(ApproximateModeTest, IndicesInOrderPastTheFramesLeftAreFoundByTime) {
  const std::string path = MakeVideo("two_rates.mp4",
                                     "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 50 "
                                     "-vf settb=1/1000,setpts='if(lt(N,25),N/25,1+(N-25)/10)/TB' "
                                     "-fps_mode passthrough -enc_time_base 1/1000 -c:v libx264 -preset veryfast "
                                     "-bf 0 -pix_fmt yuv420p");
  TestSession approx(path, Approximate());
  ASSERT_TRUE(approx.ok()) << approx.open_message();
  ASSERT_EQ(approx.Metadata().num_frames_from_header, 50);
  std::string pixels, message;
  int64_t ran_out = -1;  // the first index the frames in order did not reach
  int64_t last_pts = -1;
  for (int64_t i = 30; i < 50; ++i) {
    cv_frame_info info{};
    ASSERT_EQ(approx.Decode(i, &pixels, &info, &message), CV_OK) << "frame " << i << ": " << message;
    if (ran_out < 0 && info.pts <= last_pts) ran_out = i;
    last_pts = info.pts;
    TestSession alone(path, Approximate());
    cv_frame_info fresh{};
    ASSERT_EQ(alone.Decode(i, &pixels, &fresh, &message), CV_OK) << "frame " << i << " alone: " << message;
    if (ran_out >= 0 && i == ran_out) EXPECT_EQ(info.pts, fresh.pts) << "frame " << i;
  }
  EXPECT_GT(ran_out, 30) << "the file is what the test needs: frames in order run out before index 49";
  EXPECT_EQ(approx.Decode(50, &pixels, nullptr, &message), CV_ERROR_OUT_OF_RANGE) << message;
}

}  // namespace
}  // namespace codecvisor::cpu
