// File: backends/cpu/cpu_backend_approximate_damage_test.cc
//
// Approximate mode on files whose frames are not all where the header says:
// damaged in the middle, cut short, cut with an edit list, or ending in an
// open GOP. No frame comes under another frame's index, and every index
// gets the same answer (the frame, or the error) whatever was asked before.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

using testing::MakeVideo;
using testing::ReadFile;
using testing::TestSession;
using testing::WriteFile;

constexpr auto Approximate = TestSession::Approximate;

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

// Asks approximate mode for every index the header counts, each of a
// session of its own, then in five orders (in order, reversed, shuffled,
// back and forth, each then the first), twice over in one session each.
// Every index gets the same answer in every order: the frame at its nominal time (`path` is a
// constant-rate file), or an error, never another frame. `undecodable`: how
// many of the header's first indices come before the stream's first frame
// that decodes (a recording that starts mid-GOP); index i is then the exact
// mode's frame i - undecodable. Returns how many indices are lost to damage
// (CV_ERROR_CORRUPT_DATA).
int ExpectOneAnswerPerIndex(const std::string& path, uint32_t threads, const std::string& name,
                            int64_t undecodable = 0) {
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
      EXPECT_EQ(fresh[i].pts, first.pts + (i - undecodable) * frame_ticks) << name << ": frame " << i;
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
  for (const std::string& path : {MakeVideo("open_gop_end.mp4", args), MakeVideo("open_gop_end.mkv", args)}) {
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
  // The sample table (ffprobe's nb_frames) counts the hidden frames; the
  // header's count does not, so every index approximate mode takes is a frame.
  const std::string samples =
      cpu::testing::Run("ffprobe -v error -select_streams v:0 -show_entries stream=nb_frames -of csv=p=0 " + cut);
  ASSERT_LT(shown, std::stoll(samples)) << "no frame hidden";
  for (const bool exact : {false, true}) {
    EXPECT_EQ(TestSession(cut, exact ? TestSession::Options() : Approximate()).Metadata().num_frames_from_header, shown)
        << "exact " << exact;
  }
  EXPECT_EQ(ExpectOneAnswerPerIndex(cut, 1, "edit_list.mp4"), 0);
  std::string pixels, message;
  EXPECT_EQ(TestSession(cut, Approximate()).Decode(shown - 1, &pixels, nullptr, &message), CV_OK) << message;
  EXPECT_EQ(TestSession(cut, Approximate()).Decode(shown, &pixels, nullptr, &message), CV_ERROR_OUT_OF_RANGE);
}

// An MPEG-TS recording that starts in the middle of a GOP (40 transport
// packets cut from its start): the header's timeline starts at the first
// packet's time, and the frames before the first key frame never decode.
// Their indices are lost whichever way they are asked for (a seek to one of
// them read from the first packet and returned the first frame that decodes
// under every one of their indices), and the frames after them keep their
// own.
TEST(ApproximateModeTest, RecordingThatStartsMidGopLosesOnlyTheFramesBeforeItsFirstKeyFrame) {
  const std::string whole = MakeVideo("gop.ts",
                                      "-f lavfi -i testsrc2=size=160x120:rate=25 -t 4 -c:v libx264 -bf 2 -g 30 "
                                      "-pix_fmt yuv420p -f mpegts");
  const std::string path = WriteFile("mid_gop.ts", ReadFile(whole).substr(188 * 40));
  const cv_stream_metadata header = TestSession(path, Approximate()).Metadata();
  const cv_stream_metadata scanned = TestSession(path).Metadata();
  const int64_t undecodable =
      std::llround((scanned.begin_stream_seconds - header.begin_stream_seconds) * header.average_fps);
  ASSERT_GT(undecodable, 0) << "the cut left the stream starting at a key frame";
  for (uint32_t threads : {0u, 1u}) {
    EXPECT_EQ(ExpectOneAnswerPerIndex(path, threads, absl::StrCat("mid_gop.ts threads ", threads), undecodable),
              undecodable);
  }
}

// Damage in the middle of the file, as above.
TEST(ApproximateModeTest, DamagedFileAnswersAlikeInAnyOrder) {
  const std::string path = DamagedMp4();
  for (uint32_t threads : {0u, 1u}) {
    EXPECT_GT(ExpectOneAnswerPerIndex(path, threads, absl::StrCat("damaged.mp4 threads ", threads)), 0);
  }
}

// An AVI whose header's length (strh dwLength, avih dwTotalFrames) says 40
// frames while the file and its idx1 hold 30 (a header left from a longer
// recording): the last counted index is past the end like the 10 before
// it, not the stream's last frame again under another index.
TEST(ApproximateModeTest, AnAviHeaderCountingMoreFramesThanItsIndexHasNoLastFrameForThem) {
  std::string bytes =
      ReadFile(MakeVideo("thirty.avi", "-f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 30 -c:v mpeg4 -g 10"));
  const auto put_le32 = [&bytes](size_t at, uint32_t value) {
    for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
  };
  const size_t avih = bytes.find("avih"), strh = bytes.find("strh");
  ASSERT_NE(avih, std::string::npos);
  ASSERT_NE(strh, std::string::npos);
  put_le32(avih + 8 + 16, 40);  // dwTotalFrames
  put_le32(strh + 40, 40);      // dwLength
  const std::string path = WriteFile("forty.avi", bytes);
  TestSession session(path, TestSession::Approximate());
  ASSERT_TRUE(session.ok()) << session.open_message();
  ASSERT_EQ(session.Metadata().num_frames_from_header, 40);
  std::string pixels, message;
  cv_frame_info info{};
  ASSERT_EQ(session.Decode(29, &pixels, &info, &message), CV_OK) << message;
  for (int64_t past : {int64_t{30}, int64_t{39}}) {
    TestSession fresh(path, TestSession::Approximate());
    EXPECT_EQ(fresh.Decode(past, &pixels, nullptr, &message), CV_ERROR_OUT_OF_RANGE) << past << ": " << message;
  }
}

}  // namespace
}  // namespace codecvisor::cpu
