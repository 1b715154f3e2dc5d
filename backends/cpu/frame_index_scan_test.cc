// File: backends/cpu/frame_index_scan_test.cc
//
// FrameIndex::Scan with a stand-in for the decode of a stream's first
// packets (FramesMadeFromStart): which packets it asks about, and how the
// table leaves out those that make no frame.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/demuxer.h"
#include "backends/cpu/frame_index.h"
#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

using testing::MakeVideo;
using testing::ReadFile;
using testing::WriteFile;

class ScanTest : public ::testing::Test {
 protected:
  // An H.264 transport stream (50 frames, a key frame every 25, B-frames)
  // cut 30 transport packets in, so that it starts inside its first GOP.
  void SetUp() override {
    whole_ = MakeVideo("scan_whole.ts",
                       "-f lavfi -i testsrc2=size=96x64:rate=25 -threads 1 -t 2 -c:v libx264 -bf 3 -g 25 -f mpegts");
    path_ = WriteFile("scan_cut.ts", ReadFile(whole_).substr(188 * 12));
  }
  absl::StatusOr<FrameIndex> Scan(const LeadingProbe& probe) {
    fd_ = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    absl::StatusOr<std::unique_ptr<Demuxer>> demuxer = Demuxer::Open(fd_, -1);
    if (!demuxer.ok()) return demuxer.status();
    demuxer_ = *std::move(demuxer);
    return FrameIndex::Scan(*demuxer_, 3600, probe);
  }
  void TearDown() override {
    demuxer_.reset();
    if (fd_ >= 0) close(fd_);
  }
  std::string whole_;  // the stream before the cut
  std::string path_;   // what Scan reads
  int fd_ = -1;
  std::unique_ptr<Demuxer> demuxer_;
};

TEST_F(ScanTest, PacketsThatMakeNoFrameAreLeftOutAndTheirPositionsKept) {
  absl::StatusOr<FrameIndex> whole = Scan(nullptr);
  ASSERT_TRUE(whole.ok()) << whole.status();
  const int64_t packets = whole->size();
  ASSERT_EQ(whole->packets(), packets);
  int64_t first_key = -1;
  for (int64_t o = 0; o < packets && first_key < 0; ++o) {
    if ((*whole)[whole->IndexOfOrder(o)].key) first_key = o;
  }
  ASSERT_GT(first_key, 0) << "the cut starts inside a GOP";
  TearDown();

  int64_t asked = -1;
  // Packets 0 and 2 make no frame; so does the first after the key frame.
  absl::StatusOr<FrameIndex> index = Scan([&](Demuxer&, int64_t count) -> absl::StatusOr<std::vector<bool>> {
    asked = count;
    std::vector<bool> made(count, true);
    made[0] = made[2] = made[first_key + 1] = false;
    return made;
  });
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(asked, std::min(packets, first_key + 1 + static_cast<int64_t>(kLeadingWindow)));
  EXPECT_EQ(index->size(), packets - 3);
  EXPECT_EQ(index->packets(), packets);
  for (int64_t o : {int64_t{0}, int64_t{2}, first_key + 1}) {
    EXPECT_EQ(index->IndexOfOrder(o), -1) << o;
  }
  for (int64_t o = 0; o < packets; ++o) {
    const int64_t i = index->IndexOfOrder(o);
    if (i >= 0) EXPECT_EQ((*index)[i].decode_order, o);
  }
  EXPECT_EQ((*index)[index->first_in_decode_order()].decode_order, 1);
  EXPECT_TRUE(index->BeforeFirstKey(index->first_in_decode_order()));
  EXPECT_FALSE(index->BeforeFirstKey(index->IndexOfOrder(first_key)));
  // Times stay each packet's own: the frames left are the same entries.
  for (int64_t o = 0; o < packets; ++o) {
    const int64_t i = index->IndexOfOrder(o);
    if (i >= 0) EXPECT_EQ((*index)[i].pts, (*whole)[whole->IndexOfOrder(o)].pts) << o;
  }
}

TEST_F(ScanTest, AProbeThatFailsOrMakesNothingLeavesEveryPacket) {
  absl::StatusOr<FrameIndex> failed =
      Scan([](Demuxer&, int64_t) -> absl::StatusOr<std::vector<bool>> { return absl::InternalError("no"); });
  ASSERT_TRUE(failed.ok()) << failed.status();
  const int64_t packets = failed->size();
  EXPECT_EQ(failed->packets(), packets);
  TearDown();
  absl::StatusOr<FrameIndex> nothing =
      Scan([](Demuxer&, int64_t count) -> absl::StatusOr<std::vector<bool>> { return std::vector<bool>(count); });
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_EQ(nothing->size(), packets);
}

TEST_F(ScanTest, AStreamThatStartsOnAClosedGopIsNotProbed) {
  path_ = whole_;
  bool asked = false;
  absl::StatusOr<FrameIndex> index = Scan([&](Demuxer&, int64_t count) -> absl::StatusOr<std::vector<bool>> {
    asked = true;
    return std::vector<bool>(count, true);
  });
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_FALSE(asked);
  EXPECT_EQ(index->size(), 50);
}

}  // namespace
}  // namespace codecvisor::cpu
