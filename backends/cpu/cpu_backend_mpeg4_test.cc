// File: backends/cpu/cpu_backend_mpeg4_test.cc
//
// MPEG-4 Part 2 whose container times are not display times (packed
// B-frames, decode times for pts), against the ffmpeg CLI: the variants of
// test_media's xvid_packed_bframes.avi users make or meet, and damage.
// The catalogue file itself runs in cpu_backend_test.cc.

#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

using testing::CliAllFrames;
using testing::MakeVideo;
using testing::ProbePackets;
using testing::RgbBytes;
using testing::Shuffled;
using testing::TestSession;
using testing::TestVideoPath;

// Variants of the catalogue's packed AVI (xvid_packed_bframes.avi) that
// users make or meet. Each decodes every frame as the CLI shows it, in any
// order, with times that increase, in exact mode and, where the stream is
// marked packed, in approximate mode (which then scans it).
struct Mpeg4Variant {
  std::string name;
  std::string path;
  bool approximate_too;
  // A sequential read seeks once, to the start after the scan (an MPEG
  // program stream's first read may land late and seek again).
  bool one_seek = true;
};

std::vector<Mpeg4Variant> Mpeg4Variants() {
  const std::string packed = TestVideoPath(testing::FindTestVideo("xvid_packed_bframes.avi"));
  const std::string bytes = testing::ReadFile(packed);
  // 10 bytes into the 14th packet.
  const size_t cut_in_packet = ProbePackets(packed, 0).at(13).pos + 10;
  // An Xvid stream without B-frames whose user data says "packed" (as a
  // DivX 5 encoder may write it): its decoder holds no frame back.
  std::string marked = testing::ReadFile(MakeVideo(
      "xvid_no_bframes.avi", "-f lavfi -i testsrc=size=96x64:rate=25 -frames:v 40 -c:v libxvid -bf 0 -g 15 -q:v 4"));
  size_t at = marked.find("XviD");
  EXPECT_NE(at, std::string::npos) << "libxvid's user data";
  for (; at != std::string::npos; at = marked.find("XviD", at)) marked.replace(at, 8, "DivX5b1p");
  return {
      // Remuxed as it is: packets keep their placeholders, and times are
      // decode times; a placeholder after a key frame is a not-coded I-VOP.
      {"remuxed to MP4", MakeVideo("xvid_packed_bframes.mp4", "-i " + packed + " -c copy"), true},
      // Unpacked (FFmpeg's mpeg4_unpack_bframes): B-VOPs in packets of their
      // own, every pts its dts; not marked packed any more.
      {"unpacked to MP4",
       MakeVideo("xvid_unpacked_bframes.mp4", "-i " + packed + " -c copy -bsf:v mpeg4_unpack_bframes"), false},
      // Unpacked and kept in AVI (what FFmpeg advises for packed B-frames):
      // the placeholders' chunks stay, empty, so the dts skip two slots
      // after the first picture, and the first frame is shown at the next
      // P-VOP's dts, which no single reorder delay gives it (nor, in
      // approximate mode, the start of the nominal timeline).
      {"unpacked to AVI",
       MakeVideo("xvid_unpacked_bframes.avi", "-i " + packed + " -c copy -bsf:v mpeg4_unpack_bframes"), true},
      // Cut short: no AVI index, so seeks land on any packet the demuxer
      // finds flagged, placeholders included.
      {"cut short", testing::WriteFile("xvid_packed_cut.avi", bytes.substr(0, bytes.size() * 6 / 10)), true},
      {"marked packed, no B-frames", testing::WriteFile("xvid_marked_no_bframes.avi", marked), true},
      // Unpacked into an MPEG program stream: the key frames after the
      // first still carry the packed marker, but there are no placeholders.
      {"unpacked to MPEG-PS",
       MakeVideo("xvid_unpacked_bframes.mpg", "-i " + packed + " -c copy -bsf:v mpeg4_unpack_bframes -f mpeg"), false,
       /*one_seek=*/false},
      // Cut 10 bytes into a packet: the partial packet is sent, rejected,
      // and is no frame of the index.
      {"cut inside a packet", testing::WriteFile("xvid_packed_cut_in_packet.avi", bytes.substr(0, cut_in_packet)),
       true},
  };
}

TEST(CpuBackendTest, PackedMpeg4VariantsDecodeAsTheCliShowsThem) {
  for (const Mpeg4Variant& v : Mpeg4Variants()) {
    SCOPED_TRACE(v.name);
    TestSession exact(v.path, TestSession::Options{});
    ASSERT_TRUE(exact.ok()) << exact.open_message();
    const int64_t n = exact.Metadata().num_frames_from_scan;
    ASSERT_GT(n, 10);
    const size_t bytes = RgbBytes(exact.Layout());
    // A file cut short ends in a frame the CLI conceals and the scan leaves
    // out.
    const std::string all = CliAllFrames(v.path, 0, "format=rgb24");
    ASSERT_GE(all.size(), bytes * n);
    ASSERT_LE(all.size(), bytes * (n + 1));
    for (int64_t i : Shuffled(n, 11)) {
      EXPECT_TRUE(exact.DecodeOrFail(i) == all.substr(i * bytes, bytes)) << "frame " << i;
    }
    TestSession in_order(v.path, TestSession::Options{});
    int64_t last_pts = std::numeric_limits<int64_t>::min();
    for (int64_t i = 0; i < n; ++i) {
      cv_frame_info info{};
      ASSERT_TRUE(in_order.DecodeOrFail(i, &info) == all.substr(i * bytes, bytes)) << "frame " << i;
      EXPECT_GT(info.pts, last_pts) << "frame " << i;
      last_pts = info.pts;
    }
    if (v.one_seek) EXPECT_EQ(SeeksForTest(in_order.get()), 1);
    if (!v.approximate_too) continue;
    TestSession::Options approximate;
    approximate.seek_mode = CV_SEEK_APPROXIMATE;
    TestSession approx(v.path, approximate);
    ASSERT_TRUE(approx.ok()) << approx.open_message();
    for (int64_t i : Shuffled(n, 13)) {
      EXPECT_TRUE(approx.DecodeOrFail(i) == all.substr(i * bytes, bytes)) << "approximate, frame " << i;
    }
  }
}

// A damaged packet in a stream named by the packets that show its frames
// (FrameIndex::shown_order): the packet shows no frame, and the frames
// after it would come out under later names. Each frame is its own or an
// error, read in order (through the damage) and in any order; the frames
// of the next group of pictures are all there.
TEST(CpuBackendTest, PackedMpeg4DamagedPacketNeverGivesAnotherFramesPicture) {
  const std::string clean_path =
      MakeVideo("xvid_unpacked_bframes.mp4", "-i " + TestVideoPath(testing::FindTestVideo("xvid_packed_bframes.avi")) +
                                                 " -c copy -bsf:v mpeg4_unpack_bframes");
  // The 8th packet (a P-VOP of the first group), zeroed.
  const std::vector<testing::ProbedPacket> packets = ProbePackets(clean_path, 0);
  ASSERT_GT(packets.size(), 8u);
  const size_t pos = packets[7].pos, size = packets[7].size;
  std::string bytes = testing::ReadFile(clean_path);
  ASSERT_LE(pos + size, bytes.size());
  bytes.replace(pos, size, size, '\0');
  const std::string damaged = testing::WriteFile("xvid_unpacked_damaged.mp4", bytes);

  TestSession clean(clean_path, TestSession::Options{});
  ASSERT_TRUE(clean.ok()) << clean.open_message();
  const int64_t n = clean.Metadata().num_frames_from_scan;
  std::vector<std::string> want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = clean.DecodeOrFail(i);
  std::vector<int64_t> in_order(n);
  std::iota(in_order.begin(), in_order.end(), 0);
  for (const std::vector<int64_t>& order : {in_order, Shuffled(n, 17)}) {
    TestSession s(damaged, TestSession::Options{});
    ASSERT_TRUE(s.ok()) << s.open_message();
    ASSERT_EQ(s.Metadata().num_frames_from_scan, n);
    int64_t failed = 0;
    for (int64_t i : order) {
      std::string got;
      if (s.Decode(i, &got) != CV_OK) {
        ++failed;
        EXPECT_LT(i, 15) << "frame " << i << ", in the next group of pictures, failed";
        continue;
      }
      EXPECT_TRUE(got == want[i]) << "frame " << i << " is another frame's picture";
    }
    EXPECT_GT(failed, 0) << "the damaged packet's frame came out";
  }
}

}  // namespace
}  // namespace codecvisor::cpu
