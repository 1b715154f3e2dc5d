// File: backends/cpu/cpu_backend_approximate_test.cc
//
// Approximate mode beyond the catalogue's conformance checks: the first
// request for a late frame seeks, a stream without a frame count in its
// header gets an estimate that says it is one, a damaged file never
// yields a frame under another frame's index, a file with negative times
// and a variable-rate stream's last counted frame. Requests by time:
// cpu_backend_played_at_test.cc.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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

// 20 KB of random bytes (fixed seed) over the middle of an MP4's media
// data: the sample tables are intact, some frames cannot be decoded.
std::string DamagedMp4() {
  const std::string good =
      MakeVideo("undamaged.mp4",
                "-f lavfi -i testsrc2=size=320x240:rate=25 -frames:v 200 -c:v libx264 "
                "-preset veryfast -bf 2 -g 50 -pix_fmt yuv420p");
  std::string bytes = ReadFile(good);
  EXPECT_GT(bytes.size(), 100000u);
  std::mt19937 random(19);
  const size_t at = bytes.size() / 2;
  for (size_t i = 0; i < 20000 && at + i < bytes.size(); ++i) bytes[at + i] = random() & 0xff;
  return WriteFile("damaged.mp4", bytes);
}

TEST(ApproximateModeTest, DamagedFileNeverMislabelsAFrame) {
  const std::string path = DamagedMp4();
  TestSession exact(path);
  ASSERT_TRUE(exact.ok()) << exact.open_message();
  const cv_backend_v1* t = codecvisor_backend_v1();
  const int64_t n = exact.Metadata().num_frames_from_scan;
  ASSERT_EQ(n, 200);
  // Sequential, then a few jumps, in one session each.
  std::vector<int64_t> orders[2];
  for (int64_t i = 0; i < n; ++i) orders[0].push_back(i);
  orders[1] = {120, 121, 99, 101, 150, 102, 103, 180};
  for (const std::vector<int64_t>& order : orders) {
    TestSession approx(path, Approximate());
    ASSERT_TRUE(approx.ok()) << approx.open_message();
    int failed = 0;
    for (int64_t i : order) {
      cv_frame_info got{}, want{};
      cv_error error{};
      ASSERT_EQ(t->get_frame_info(exact.get(), i, &want, &error), CV_OK);
      std::string pixels, message;
      cv_status status = approx.Decode(i, &pixels, &got, &message);
      if (status != CV_OK) {
        ++failed;
        EXPECT_EQ(status, CV_ERROR_CORRUPT_DATA) << "frame " << i << ": " << message;
        EXPECT_NE(message.find("damaged.mp4"), std::string::npos) << message;
        continue;
      }
      EXPECT_EQ(got.pts, want.pts) << "frame " << i << " came out as the frame at pts " << got.pts;
    }
    if (order.size() == static_cast<size_t>(n)) {
      EXPECT_GT(failed, 0) << "the damage made no frame undecodable";
      EXPECT_LT(failed, n / 2);
    }
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

// Asks approximate mode for every index the header counts, each of a
// session of its own, then in five orders (in order, reversed, shuffled,
// back and forth, each then the first), twice over in one session each. Every index gets the
// same answer in every order: the frame at its nominal time (`path` is a
// constant-rate file), or an error, never another frame. Returns how many
// indices are lost to damage (CV_ERROR_CORRUPT_DATA).
int ExpectOneAnswerPerIndex(const std::string& path, uint32_t threads, const std::string& name) {
  TestSession::Options options = Approximate();
  options.decoder_threads = threads;
  struct Answer {
    cv_status status;
    int64_t pts;
    std::string Show() const {
      return absl::StrCat(status == CV_OK ? "pts " : "error ", status == CV_OK ? pts : status);
    }
  };
  auto ask = [&](TestSession& s, int64_t i) {
    std::string pixels, message;
    cv_frame_info info{};
    cv_status status = s.Decode(i, &pixels, &info, &message);
    return Answer{status, status == CV_OK ? info.pts : 0};
  };
  TestSession exact(path);
  cv_frame_info first{}, second{};
  exact.DecodeOrFail(0, &first);
  exact.DecodeOrFail(1, &second);
  const int64_t frame_ticks = second.pts - first.pts;
  EXPECT_GT(frame_ticks, 0) << name;
  // The header's count, else the estimate the host makes (Matroska).
  const cv_stream_metadata m = TestSession(path, options).Metadata();
  const int64_t n = m.num_frames_from_header > 0 ? m.num_frames_from_header
                                                  : std::llround(m.duration_seconds * m.average_fps);
  EXPECT_GT(n, 1) << name;
  std::vector<Answer> fresh;
  int lost = 0;
  for (int64_t i = 0; i < n; ++i) {
    TestSession s(path, options);
    fresh.push_back(ask(s, i));
    if (fresh[i].status == CV_OK) {
      EXPECT_EQ(fresh[i].pts, first.pts + i * frame_ticks) << name << ": frame " << i;
    } else {
      EXPECT_TRUE(fresh[i].status == CV_ERROR_CORRUPT_DATA || fresh[i].status == CV_ERROR_OUT_OF_RANGE)
          << name << ": frame " << i << ": " << fresh[i].status;
      lost += fresh[i].status == CV_ERROR_CORRUPT_DATA;
    }
  }
  std::vector<int64_t> in_order(n), reversed(n), shuffled(n), back_and_forth;
  std::iota(in_order.begin(), in_order.end(), 0);
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  shuffled = in_order;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
  for (int64_t i = 0; i + 1 < n; ++i) back_and_forth.insert(back_and_forth.end(), {i, i + 1, i, i});
  // Each index, then the first: a request that seeks into the file and
  // fails must not leave the session taking its position for the start.
  std::vector<int64_t> then_first;
  for (int64_t i = n - 1; i >= 0; --i) then_first.insert(then_first.end(), {i, 0});
  for (const auto& [order_name, order] :
       {std::pair{"in order", in_order}, std::pair{"reversed", reversed}, std::pair{"shuffled", shuffled},
        std::pair{"back and forth", back_and_forth}, std::pair{"each then the first", then_first}}) {
    TestSession s(path, options);
    // Twice over: the second pass meets what the first left behind.
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t i : order) {
        EXPECT_EQ(ask(s, i).Show(), fresh[i].Show())
            << name << ", " << order_name << ", pass " << pass << ": frame " << i;
      }
    }
  }
  return lost;
}

// A file cut short with its index intact (moov first): the header counts
// 100 frames the file no longer holds all of, and its last packet is
// partial (with one decoder thread, the decoder rejects it), or missing
// alone (one frame short).
TEST(ApproximateModeTest, TruncatedFileAnswersAlikeInAnyOrder) {
  const std::string whole = MakeVideo("cut_whole.mp4",
                                      "-f lavfi -i testsrc2=size=160x120:rate=25 -frames:v 100 -c:v libx264 "
                                      "-g 25 -pix_fmt yuv420p -movflags +faststart");
  const std::string bytes = ReadFile(whole);
  // The last packet's place in the file (packets lie in decode order): a
  // cut there loses exactly one frame, the one decoded last.
  size_t last_packet = 0;
  const std::string positions =
      testing::Run("ffprobe -v error -select_streams v:0 -show_entries packet=pos -of csv=p=0 " + whole);
  for (absl::string_view pos : absl::StrSplit(positions, '\n', absl::SkipWhitespace())) {
    last_packet = std::max<size_t>(last_packet, std::stoull(std::string(pos)));
  }
  ASSERT_GT(last_packet, bytes.size() / 2);
  int lost = 0;
  for (const auto& [label, size] : {std::pair{std::string("50"), bytes.size() * 50 / 100},
                                    std::pair{std::string("70"), bytes.size() * 70 / 100},
                                    std::pair{std::string("85"), bytes.size() * 85 / 100},
                                    std::pair{std::string("last_packet"), last_packet}}) {
    const std::string name = absl::StrCat("cut_", label, ".mp4");
    const std::string path = WriteFile(name, bytes.substr(0, size));
    ASSERT_EQ(TestSession(path, Approximate()).Metadata().num_frames_from_header, 100) << name;
    for (uint32_t threads : {0u, 1u}) {
      const int lost_here = ExpectOneAnswerPerIndex(path, threads, absl::StrCat(name, " threads ", threads));
      lost += lost_here;
      std::string pixels, message;
      const cv_status last = TestSession(path, Approximate()).Decode(99, &pixels, nullptr, &message);
      if (label == "last_packet") {
        // The packet decoded last is a B-frame's, shown before frame 99:
        // that frame alone is lost, and frame 99 is there.
        EXPECT_EQ(lost_here, 1) << name << " threads " << threads;
        EXPECT_EQ(last, CV_OK) << name << ": " << message;
      } else {
        EXPECT_EQ(last, CV_ERROR_OUT_OF_RANGE) << name << ": the header's last frame is not in the file: " << message;
      }
    }
  }
  EXPECT_GT(lost, 0) << "no cut lost a frame to damage";
}

// Undamaged files whose ends trip a seek: an open GOP, whose decoder drops
// the stream's last picture after a seek into the last GOP (frames 96-98
// then 99 gave frame 99 from the start, nothing after a seek); an MP4 cut
// with an edit list, whose header counts the 3 frames before the cut that
// are never shown (the header's last index gave the last frame, 3 frames
// early). Every index answers alike in any order, and no frame is lost.
TEST(ApproximateModeTest, FileEndsAnswerAlikeInAnyOrder) {
  const std::string args =
      "-f lavfi -i testsrc2=size=160x120:rate=25 -t 4 -c:v libx264 -bf 3 -g 24 "
      "-x264-params open-gop=1:b-pyramid=2 -pix_fmt yuv420p";
  for (const std::string path : {MakeVideo("open_gop_end.mp4", args), MakeVideo("open_gop_end.mkv", args)}) {
    for (uint32_t threads : {0u, 1u}) {
      EXPECT_EQ(ExpectOneAnswerPerIndex(path, threads, absl::StrCat(path, " threads ", threads)), 0);
    }
    TestSession exact(path);
    cv_frame_info last{}, got{};
    exact.DecodeOrFail(99, &last);
    for (int64_t before : {98, 97, 96}) {
      TestSession approx(path, Approximate());
      approx.DecodeOrFail(before, &got);
      approx.DecodeOrFail(99, &got);  // read on, or decoded on to it
      EXPECT_EQ(got.pts, last.pts) << path << ": frame 99 after a seek to frame " << before;
      TestSession by_time(path, Approximate());
      by_time.DecodeOrFail(before, &got);
      std::string pixels, message;
      ASSERT_EQ(by_time.DecodeAt(last.pts_seconds, &pixels, &got, &message), CV_OK) << message;
      EXPECT_EQ(got.pts, last.pts) << path << ": frame 99's time after a seek to frame " << before;
      TestSession times(path, Approximate());
      cv_frame_info at{};
      exact.DecodeOrFail(before, &at);
      ASSERT_EQ(times.DecodeAt(at.pts_seconds, &pixels, &got, &message), CV_OK) << message;
      ASSERT_EQ(times.DecodeAt(last.pts_seconds, &pixels, &got, &message), CV_OK) << message;
      EXPECT_EQ(got.pts, last.pts) << path << ": frame 99's time after frame " << before << "'s time";
    }
  }
  const std::string whole = MakeVideo("edit_whole.mp4",
                                      "-f lavfi -i testsrc2=size=160x120:rate=25 -t 4 -c:v libx264 -bf 3 -g 30 "
                                      "-pix_fmt yuv420p");
  const std::string cut = MakeVideo("edit_list.mp4", "-ss 1.3 -i " + whole + " -c copy");
  const int64_t shown = TestSession(cut).Metadata().num_frames_from_scan;
  ASSERT_LT(shown, TestSession(cut, Approximate()).Metadata().num_frames_from_header) << "no frame discarded";
  EXPECT_EQ(ExpectOneAnswerPerIndex(cut, 1, "edit_list.mp4"), 0);
  std::string pixels, message;
  EXPECT_EQ(TestSession(cut, Approximate()).Decode(shown - 1, &pixels, nullptr, &message), CV_OK) << message;
  EXPECT_EQ(TestSession(cut, Approximate()).Decode(shown, &pixels, nullptr, &message), CV_ERROR_OUT_OF_RANGE);
}

// Damage in the middle of the file, as above.
TEST(ApproximateModeTest, DamagedFileAnswersAlikeInAnyOrder) {
  const std::string path = DamagedMp4();
  for (uint32_t threads : {0u, 1u}) {
    EXPECT_GT(ExpectOneAnswerPerIndex(path, threads, absl::StrCat("damaged.mp4 threads ", threads)), 0);
  }
}

}  // namespace
}  // namespace codecvisor::cpu
