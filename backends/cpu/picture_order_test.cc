// File: backends/cpu/picture_order_test.cc

#include "backends/cpu/picture_order.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/av_util.h"
#include "backends/cpu/demuxer.h"
#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

extern "C" {
#include <libavutil/avutil.h>
}

namespace codecvisor::cpu {
namespace {

constexpr int64_t kNone = AV_NOPTS_VALUE;
using Counts = std::vector<std::optional<int64_t>>;

// Frames in decode order with their pts (kNone: untimed) and key flags.
std::vector<FrameEntry> Frames(const std::vector<int64_t>& pts, const std::vector<bool>& key = {}) {
  std::vector<FrameEntry> frames;
  for (size_t i = 0; i < pts.size(); ++i) {
    FrameEntry f{};
    f.pts = pts[i] == kNone ? 0 : pts[i];
    f.dts = kNone;
    f.duration = 0;
    f.decode_order = static_cast<int64_t>(i);
    f.key = i < key.size() ? key[i] : i == 0;
    f.untimed = pts[i] == kNone;
    frames.push_back(f);
  }
  return frames;
}
std::vector<bool> Known(const std::vector<int64_t>& pts) {
  std::vector<bool> known;
  for (int64_t p : pts) known.push_back(p != kNone);
  return known;
}
std::vector<int64_t> PtsOf(const std::vector<FrameEntry>& frames) {
  std::vector<int64_t> out;
  for (const FrameEntry& f : frames) out.push_back(f.pts);
  return out;
}

// The first packets of an MPEG program stream of H.264 with B-pyramids
// (x264's defaults, 25 fps in a 90 kHz time base): I P B b B P B b ...,
// where only the pictures that start a PES packet have a time.
TEST(PlaceUntimedByPictureOrderTest, GivesUntimedPicturesTheirPlaceInDisplayOrder) {
  const std::vector<int64_t> pts = {52200, 63000, 55800, kNone, kNone, kNone, 70200};
  const Counts poc = {0, 6, 2, 4, 12, 8, 10};
  std::vector<FrameEntry> frames = Frames(pts);
  std::vector<bool> known = Known(pts);
  ASSERT_TRUE(PlaceUntimedByPictureOrder(frames, known, poc, 3600));
  // POC 4 between 2 (55800) and 6 (63000); 8 between 6 and 10 (70200);
  // 12 after the last, one frame on.
  EXPECT_EQ(PtsOf(frames), (std::vector<int64_t>{52200, 63000, 55800, 59400, 73800, 66600, 70200}));
  EXPECT_EQ(known, Known(pts));
}

TEST(PlaceUntimedByPictureOrderTest, SpacesSeveralEvenlyAndCountsBackBeforeTheFirstTime) {
  // Two untimed pictures shown before the first timed one, three between
  // two timed ones 40 apart (10 each).
  const std::vector<int64_t> pts = {kNone, kNone, 100, kNone, kNone, kNone, 140};
  const Counts poc = {0, 2, 4, 6, 8, 10, 12};
  std::vector<FrameEntry> frames = Frames(pts);
  frames[0].duration = 5;  // a packet's own duration counts
  std::vector<bool> known = Known(pts);
  ASSERT_TRUE(PlaceUntimedByPictureOrder(frames, known, poc, 10));
  EXPECT_EQ(PtsOf(frames), (std::vector<int64_t>{85, 90, 100, 110, 120, 130, 140}));
}

TEST(PlaceUntimedByPictureOrderTest, AnIdrStartsANewRunOfCounts) {
  // Two GOPs, each counted from 0: the second's pictures come after the
  // first's, however low their counts.
  const std::vector<int64_t> pts = {0, 20, kNone, 30, kNone, kNone};
  const Counts poc = {0, 4, 2, 0, 4, 2};
  std::vector<FrameEntry> frames = Frames(pts, {true, false, false, true, false, false});
  std::vector<bool> known = Known(pts);
  ASSERT_TRUE(PlaceUntimedByPictureOrder(frames, known, poc, 10));
  EXPECT_EQ(PtsOf(frames), (std::vector<int64_t>{0, 20, 10, 30, 50, 40}));
}

TEST(PlaceUntimedByPictureOrderTest, AnOpenGopKeyFrameContinuesItsRun) {
  // A recovery-point I picture whose count goes on: its leading B pictures
  // (lower counts) are shown before it.
  const std::vector<int64_t> pts = {0, 20, kNone, 50, kNone, kNone};
  const Counts poc = {0, 4, 2, 10, 6, 8};
  std::vector<FrameEntry> frames = Frames(pts, {true, false, false, true, false, false});
  std::vector<bool> known = Known(pts);
  ASSERT_TRUE(PlaceUntimedByPictureOrder(frames, known, poc, 10));
  EXPECT_EQ(PtsOf(frames), (std::vector<int64_t>{0, 20, 10, 50, 30, 40}));
}

TEST(PlaceUntimedByPictureOrderTest, AMisplacedTimeIsMovedAndUnmarked) {
  // libavformat gave packet 2 (count 2) the time of its PES packet, 30,
  // which is packet 1's: in display order 0 30 20 30 cannot all stand.
  // The longest increasing run of times keeps the others; packet 2 goes
  // between 0 and 20, as does the untimed packet 6 between 40 and 60.
  const std::vector<int64_t> pts = {0, 30, 30, 20, 60, 40, kNone, 80, 70};
  const Counts poc = {0, 6, 2, 4, 12, 8, 10, 16, 14};
  std::vector<FrameEntry> frames = Frames(pts);
  std::vector<bool> known = Known(pts);
  std::vector<int64_t> moved;
  ASSERT_TRUE(PlaceUntimedByPictureOrder(frames, known, poc, 10, &moved));
  EXPECT_EQ(PtsOf(frames), (std::vector<int64_t>{0, 30, 10, 20, 60, 40, 50, 80, 70}));
  EXPECT_EQ(known, (std::vector<bool>{true, true, false, true, true, true, false, true, true}));
  EXPECT_EQ(moved, (std::vector<int64_t>{30}));  // packet 2's own time
}

TEST(PlaceUntimedByPictureOrderTest, PacketsWithoutACountAtEitherEndKeepDecodeOrder) {
  // A capture that starts before its parameter sets, and a file cut short
  // inside a picture's headers: those packets' counts cannot be read.
  const std::vector<int64_t> pts = {kNone, 10, 40, kNone, 30, kNone, kNone};
  const Counts poc = {std::nullopt, 0, 6, 2, 4, std::nullopt, std::nullopt};
  std::vector<FrameEntry> frames = Frames(pts, {false, true, false, false, false, false, false});
  std::vector<bool> known = Known(pts);
  ASSERT_TRUE(PlaceUntimedByPictureOrder(frames, known, poc, 10));
  EXPECT_EQ(PtsOf(frames), (std::vector<int64_t>{0, 10, 40, 20, 30, 50, 60}));
}

TEST(PlaceUntimedByPictureOrderTest, ChangesNothingWhereTheCountsCannotBeDisplayOrder) {
  const auto unchanged = [](const std::vector<int64_t>& pts, const Counts& poc,
                            const std::vector<bool>& key = {}) {
    std::vector<FrameEntry> frames = Frames(pts, key);
    std::vector<bool> known = Known(pts);
    const std::vector<int64_t> before = PtsOf(frames);
    EXPECT_FALSE(PlaceUntimedByPictureOrder(frames, known, poc, 10));
    EXPECT_EQ(PtsOf(frames), before);
    EXPECT_EQ(known, Known(pts));
  };
  unchanged({0, 10, 20}, {0, 2, 4});                  // nothing to place
  unchanged({kNone, kNone, kNone}, {0, 2, 4});        // no time to place by
  unchanged({0, kNone, 20}, {0, 2, 2});               // a count twice in one run
  unchanged({0, kNone, 20}, {0, 2});                  // a count missing
  unchanged({0, 40, 30, 20, 10, kNone}, {0, 2, 4, 6, 8, 10});  // most times out of place
  unchanged({0, kNone, kNone, 1}, {0, 2, 4, 6});      // no distinct time between 0 and 1
  unchanged({0, kNone, 20, 30}, {0, std::nullopt, 4, 6});  // a packet without a count among others
  unchanged({0, kNone, 20}, {std::nullopt, std::nullopt, std::nullopt});
}

// A real stream: H.264 with B-frames in an MPEG program stream, small
// pictures, so that most packets have no time. The reader's counts put
// every packet at the place the decoder shows it (ffprobe's frame order).
TEST(PictureOrderReaderTest, ReadsTheCountsThatOrderAProgramStreamsPictures) {
  const std::string path = testing::MakeVideo(
      "poc.mpg", "-f lavfi -i testsrc2=size=160x120:rate=25 -t 2 -c:v libx264 -threads 1 -g 25 -bf 2 -f vob");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  absl::StatusOr<std::unique_ptr<Demuxer>> demuxer = Demuxer::Open(fd, -1);
  ASSERT_TRUE(demuxer.ok()) << demuxer.status();
  std::unique_ptr<PictureOrderReader> reader = PictureOrderReader::ForStream(*(*demuxer)->stream()->codecpar);
  ASSERT_NE(reader, nullptr);
  PacketPtr packet = MakePacket();
  std::vector<int64_t> counts;
  int untimed = 0;
  while ((*demuxer)->ReadPacket(packet.get())) {
    const std::optional<int64_t> count = reader->Read(*packet);
    ASSERT_TRUE(count.has_value()) << "packet " << counts.size();
    counts.push_back(*count);
    if (packet->pts == AV_NOPTS_VALUE) ++untimed;
  }
  close(fd);
  ASSERT_EQ(counts.size(), 50u);
  EXPECT_GT(untimed, 10);  // the case this is for
  EXPECT_EQ(counts[0], 0);
  // Display order is count order within each GOP (an IDR every 25).
  std::vector<int64_t> gop(counts.begin(), counts.begin() + 25);
  std::sort(gop.begin(), gop.end());
  for (size_t k = 0; k < gop.size(); ++k) EXPECT_EQ(gop[k], static_cast<int64_t>(2 * k));
  EXPECT_EQ(counts[25], 0);
}

TEST(PictureOrderReaderTest, Mpeg2PicturesHaveTypesAndNoCounts) {
  const std::string path = testing::MakeVideo(
      "types.mpg", "-f lavfi -i testsrc2=size=160x120:rate=25 -t 1 -c:v mpeg2video -threads 1 -bf 2 -g 12 -f vob");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  absl::StatusOr<std::unique_ptr<Demuxer>> demuxer = Demuxer::Open(fd, -1);
  ASSERT_TRUE(demuxer.ok()) << demuxer.status();
  std::unique_ptr<PictureOrderReader> reader = PictureOrderReader::ForStream(*(*demuxer)->stream()->codecpar);
  ASSERT_NE(reader, nullptr);
  PacketPtr packet = MakePacket();
  std::string types;
  while ((*demuxer)->ReadPacket(packet.get())) {
    EXPECT_FALSE(reader->Read(*packet).has_value());
    types += av_get_picture_type_char(static_cast<AVPictureType>(reader->last_type()));
  }
  close(fd);
  // In decode order, GOPs of 12: I P B B P B B P B B, then the next I
  // and the B pictures shown before it.
  EXPECT_EQ(types.substr(0, 13), "IPBBPBBPBBIBB");
  EXPECT_EQ(types.size(), 25u);
}

TEST(PictureOrderReaderTest, OtherCodecsHaveNoReader) {
  AVCodecParameters* par = avcodec_parameters_alloc();
  par->codec_type = AVMEDIA_TYPE_VIDEO;
  par->codec_id = AV_CODEC_ID_MPEG4;
  EXPECT_EQ(PictureOrderReader::ForStream(*par), nullptr);
  par->codec_id = AV_CODEC_ID_VP9;
  EXPECT_EQ(PictureOrderReader::ForStream(*par), nullptr);
  par->codec_id = AV_CODEC_ID_HEVC;
  EXPECT_NE(PictureOrderReader::ForStream(*par), nullptr);
  avcodec_parameters_free(&par);
}

}  // namespace
}  // namespace codecvisor::cpu
