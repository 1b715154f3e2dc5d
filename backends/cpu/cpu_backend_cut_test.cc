// File: backends/cpu/cpu_backend_cut_test.cc
//
// Recordings that start inside a GOP (an MPEG-TS capture, `tail -c` of a
// program stream) or on an open GOP's key frame: decoders drop the
// pictures whose references are missing, so the frames are those the CLI
// shows, counted from the first that comes out (FramesMadeFromStart).
// Before, every packet was counted: the first frames could not be decoded
// and every later index was another frame. Frames a decoder does make
// before the first key frame are made as the CLI makes them at random too
// (FrameCursor::Rewind opens the decoder afresh).

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

using testing::CliAllFrames;
using testing::ExpectInOrderIsTheClis;
using testing::ExpectRandomAccessAgrees;
using testing::MakeVideo;
using testing::ProbePackets;
using testing::ReadFile;
using testing::RgbBytes;
using testing::TestSession;
using testing::WriteFile;

struct Cut {
  std::string name;
  std::string path;
};

std::vector<Cut> Cuts() {
  // One encoder thread: the same bytes, so the same cuts, on every machine.
  const std::string h264 = "-f lavfi -i testsrc2=size=160x120:rate=25 -threads 1 -t 4 -c:v libx264 -bf 3 -g 25 ";
  const std::string ts = MakeVideo("cut_whole.ts", h264 + "-f mpegts");
  const std::string ps = MakeVideo("cut_whole.mpg", h264 + "-f vob");
  // A DVD's MPEG-2 program stream: some pictures have a dts and no pts.
  const std::string dvd = MakeVideo("cut_whole.vob",
                                    "-f lavfi -i testsrc2=size=320x240:rate=25 -threads 1 -t 4 -c:v mpeg2video "
                                    "-bf 2 -g 12 -f dvd");
  const std::string vob = MakeVideo("cut_whole_vob.vob",
                                    "-f lavfi -i testsrc2=size=320x240:rate=25 -threads 1 -t 4 -c:v mpeg2video "
                                    "-bf 2 -g 12 -f vob");
  // HEVC with open GOPs (CRA key frames).
  const std::string hevc = MakeVideo("cut_hevc.mpg",
                                     "-f lavfi -i testsrc2=size=160x120:rate=25 -t 4 -c:v libx265 "
                                     "-x265-params log-level=error:frame-threads=1:pools=none -bf 3 -g 25 -f vob");
  return {
      // 30 transport packets in: the stream goes on without its parameter sets.
      {"transport stream, in a GOP", WriteFile("cut_in_gop.ts", ReadFile(ts).substr(188 * 30))},
      {"program stream, in a GOP", WriteFile("cut_in_gop.mpg", ReadFile(ps).substr(2048 * 5))},
      // No single reorder delay fits the first GOP's times: the pictures
      // without a pts are placed by the I and P pictures after them
      // (PlaceMissingByAnchors), as a DVD's later VOB files start.
      {"DVD program stream, in a GOP", WriteFile("cut_in_gop.vob", ReadFile(dvd).substr(2048 * 44))},
      // Cut just before an I picture without a pts: a single delay fits,
      // but gives the I picture a slot its decoder does not show it at.
      {"MPEG-2 program stream, before an untimed I picture",
       WriteFile("cut_before_i.vob", ReadFile(vob).substr(2048 * 44))},
      // Starts on a CRA whose leading pictures refer to pictures cut off.
      {"HEVC, on an open GOP", WriteFile("cut_open_gop.mpg", ReadFile(hevc).substr(16000))},
      // HEVC's decoder makes frames of the pictures before the first key
      // frame from what it holds: at random (after later frames) only a
      // fresh decoder from the first packet makes them as the CLI does.
      {"HEVC, in a GOP", WriteFile("cut_hevc_in_gop.mpg", ReadFile(hevc).substr(12000))},
  };
}

TEST(CutRecordingTest, FramesAreThoseTheCliShowsCountedFromTheFirst) {
  for (const Cut& cut : Cuts()) {
    SCOPED_TRACE(cut.name);
    TestSession session(cut.path);
    ASSERT_TRUE(session.ok()) << session.open_message();
    const int64_t n = session.Metadata().num_frames_from_scan;
    // The case this is for: packets that make no frame.
    ASSERT_LT(n, static_cast<int64_t>(ProbePackets(cut.path, 0).size()));
    const size_t bytes = RgbBytes(session.Layout());
    const std::string cli = CliAllFrames(cut.path, 0, "format=rgb24");
    const std::vector<int64_t> pts = ExpectInOrderIsTheClis(cut.path, cli, bytes);
    ASSERT_EQ(static_cast<int64_t>(pts.size()), n);
    ExpectRandomAccessAgrees(cut.path, cli, bytes, pts, 3, 5);
  }
}

}  // namespace
}  // namespace codecvisor::cpu
