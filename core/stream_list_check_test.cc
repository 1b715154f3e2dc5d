#include "core/stream_list_check.h"

#include <gtest/gtest.h>

#include "absl/strings/match.h"

namespace codecvisor {
namespace {

using ipc::StreamInfo;
using ipc::StreamType;

// Stream 1 opened, among a video, an audio and a subtitle stream.
ipc::StreamMetadata Opened() {
  ipc::StreamMetadata m;
  m.stream_index = 1;
  m.num_video_streams = 1;
  m.codec = "h264";
  m.streams = {{0, StreamType::kAudio, "aac", 0, 0, 48000, 2},
               {1, StreamType::kVideo, "h264", 640, 360, 0, 0},
               {2, StreamType::kSubtitle, "subrip", 0, 0, 0, 0},
               {5, StreamType::kUnknown, "", 0, 0, 0, 0}};
  return m;
}

// Expects kDataLoss whose message contains `want`.
void ExpectLie(const ipc::StreamMetadata& m, const std::string& want) {
  const absl::Status s = CheckStreamList(m);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "the backend's list of the file's streams is invalid: ")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), want)) << s << "\nexpected: " << want;
}

// Expects kDataLoss about the opened stream whose message contains `want`.
void ExpectBadStream(const ipc::StreamMetadata& m, const std::string& want, int32_t asked = -1) {
  const absl::Status s = CheckStreamList(m, asked);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "the backend's opened stream is invalid: ")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), want)) << s << "\nexpected: " << want;
}

TEST(StreamListCheckTest, AnHonestListPasses) { EXPECT_TRUE(CheckStreamList(Opened()).ok()); }

// A backend built before the list existed sends none.
TEST(StreamListCheckTest, AnEmptyListIsAnOlderBackendNotALie) {
  ipc::StreamMetadata m = Opened();
  m.streams.clear();
  EXPECT_TRUE(CheckStreamList(m).ok());
}

// Listed or not, the opened stream's index and the count of video streams
// are ones a file can have: `info` showed stream_index -7 of 4294967295.
TEST(StreamListCheckTest, TheOpenedIndexAndTheVideoCountAreOnesAFileCanHave) {
  for (bool listed : {true, false}) {
    ipc::StreamMetadata m = Opened();
    if (!listed) m.streams.clear();
    m.stream_index = -7;
    ExpectBadStream(m, "its index -7 is outside [0, 1024)");
    m.stream_index = 1024;
    ExpectBadStream(m, "its index 1024 is outside");
    m = Opened();
    if (!listed) m.streams.clear();
    m.num_video_streams = 4294967295u;
    ExpectBadStream(m, "the file's count of video streams, 4294967295, is more than a file has (1024)");
    m.num_video_streams = 0;  // not counted
    EXPECT_TRUE(CheckStreamList(m).ok());
  }
  EXPECT_TRUE(CheckStreamList(Opened(), 1).ok());
  ExpectBadStream(Opened(), "stream 1 was opened where stream 0 was asked for", 0);
  ipc::StreamMetadata two = Opened();
  two.num_video_streams = 2;
  ExpectLie(two, "it lists 1 video stream(s) where num_video_streams says 2");
  two.streams[3].type = StreamType::kVideo;
  EXPECT_TRUE(CheckStreamList(two).ok());
  // Cover art (an attached picture) is listed as video, not counted.
  ipc::StreamMetadata cover = Opened();
  cover.streams[2] = {2, StreamType::kVideo, "png", 600, 600, 0, 0};
  EXPECT_TRUE(CheckStreamList(cover).ok());
}

TEST(StreamListCheckTest, ADuplicateIndexIsALie) {
  ipc::StreamMetadata m = Opened();
  m.streams[2].index = 1;
  ExpectLie(m, "entry 2 has stream index 1 after 1 (indices must ascend, each listed once)");
}

TEST(StreamListCheckTest, DescendingIndicesAreALie) {
  ipc::StreamMetadata m = Opened();
  std::swap(m.streams[0], m.streams[2]);
  ExpectLie(m, "entry 1 has stream index 1 after 2");
}

TEST(StreamListCheckTest, AnIndexOutOfRangeIsALie) {
  ipc::StreamMetadata m = Opened();
  m.streams[3].index = static_cast<int32_t>(ipc::kMaxStreams);
  ExpectLie(m, "entry 3 has stream index 1024, outside [0, 1024)");
  m.streams[0].index = -1;
  ExpectLie(m, "entry 0 has stream index -1, outside [0, 1024)");
}

TEST(StreamListCheckTest, AnUnknownTypeIsALie) {
  ipc::StreamMetadata m = Opened();
  m.streams[2].type = static_cast<StreamType>(6);
  ExpectLie(m, "stream 2 has type 6, which is not a stream type");
}

TEST(StreamListCheckTest, AHugeCountIsALie) {
  ipc::StreamMetadata m = Opened();
  m.streams.clear();
  for (int32_t i = 0; i <= static_cast<int32_t>(ipc::kMaxStreams); ++i) {
    m.streams.push_back({i, i == 1 ? StreamType::kVideo : StreamType::kData, "", 0, 0, 0, 0});
  }
  ExpectLie(m, "1025 entries; at most 1024");
}

TEST(StreamListCheckTest, TheOpenedStreamMustBeAListedVideo) {
  ipc::StreamMetadata m = Opened();
  m.streams[1].type = StreamType::kAudio;
  ExpectLie(m, "the opened stream 1 is not listed as a video stream");
  m = Opened();
  m.stream_index = 3;
  ExpectLie(m, "the opened stream 3 is not listed");
}

}  // namespace
}  // namespace codecvisor
