#include "backends/sdk/runner/stream_list.h"

#include <cstddef>
#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>

namespace codecvisor::runner {
namespace {

// What the fake vendor's get_streams reports.
struct Listing {
  cv_status status = CV_OK;
  uint32_t count = 0;
  int32_t type = CV_STREAM_VIDEO;
  bool unterminated_codec = false;
};
Listing g_listing;
uint32_t g_capacity_seen = 0;

cv_status GetStreams(cv_session*, cv_stream_info* out, uint32_t capacity, uint32_t* count, cv_error* error) {
  g_capacity_seen = capacity;
  if (g_listing.status != CV_OK) {
    std::snprintf(error->message, sizeof(error->message), "the container is unreadable");
    return g_listing.status;
  }
  for (uint32_t i = 0; i < g_listing.count && i < capacity; ++i) {
    out[i] = {};
    out[i].index = static_cast<int32_t>(i);
    out[i].type = i == 0 ? g_listing.type : CV_STREAM_AUDIO;
    std::snprintf(out[i].codec, sizeof(out[i].codec), "%s", i == 0 ? "av1" : "opus");
    if (i == 0 && g_listing.unterminated_codec) std::memset(out[i].codec, 'x', sizeof(out[i].codec));
    out[i].width = i == 0 ? 64 : 0;
    out[i].height = i == 0 ? 48 : 0;
    out[i].sample_rate = i == 0 ? 0 : 48000;
    out[i].channels = i == 0 ? 0 : 2;
  }
  *count = g_listing.count;
  return CV_OK;
}

class StreamListTest : public ::testing::Test {
 protected:
  StreamListTest() {
    table_.struct_size = sizeof(table_);
    table_.get_streams = &GetStreams;
    g_listing = {};
    g_capacity_seen = 0;
  }
  cv_backend_v1 table_{};
};

TEST_F(StreamListTest, ConvertsEveryEntry) {
  g_listing.count = 2;
  absl::StatusOr<std::vector<ipc::StreamInfo>> streams = ListStreams(table_, nullptr, "acme");
  ASSERT_TRUE(streams.ok()) << streams.status();
  EXPECT_EQ(g_capacity_seen, CV_MAX_STREAMS);
  ASSERT_EQ(streams->size(), 2u);
  EXPECT_EQ((*streams)[0], (ipc::StreamInfo{0, ipc::StreamType::kVideo, "av1", 64, 48, 0, 0}));
  EXPECT_EQ((*streams)[1], (ipc::StreamInfo{1, ipc::StreamType::kAudio, "opus", 0, 0, 48000, 2}));
}

TEST_F(StreamListTest, AnOlderTableOrNoFunctionListsNothing) {
  g_listing.count = 2;
  cv_backend_v1 older = table_;
  older.struct_size = offsetof(cv_backend_v1, get_streams);
  EXPECT_FALSE(ListsStreams(older));
  absl::StatusOr<std::vector<ipc::StreamInfo>> streams = ListStreams(older, nullptr, "acme");
  ASSERT_TRUE(streams.ok()) << streams.status();
  EXPECT_TRUE(streams->empty());
  EXPECT_EQ(g_capacity_seen, 0u) << "called get_streams beyond the table's struct_size";

  cv_backend_v1 none = table_;
  none.get_streams = nullptr;
  EXPECT_FALSE(ListsStreams(none));
  streams = ListStreams(none, nullptr, "acme");
  ASSERT_TRUE(streams.ok()) << streams.status();
  EXPECT_TRUE(streams->empty());
}

TEST_F(StreamListTest, TheVendorsFailureKeepsItsMessage) {
  g_listing.status = CV_ERROR_CORRUPT_DATA;
  absl::StatusOr<std::vector<ipc::StreamInfo>> streams = ListStreams(table_, nullptr, "acme");
  EXPECT_EQ(streams.status(), absl::DataLossError("the container is unreadable"));
}

TEST_F(StreamListTest, ACountPastTheCapacityIsAnError) {
  g_listing.count = CV_MAX_STREAMS + 1;
  absl::StatusOr<std::vector<ipc::StreamInfo>> streams = ListStreams(table_, nullptr, "acme");
  EXPECT_EQ(streams.status(), absl::InternalError("backend 'acme' listed 1025 streams in room for 1024"));
}

TEST_F(StreamListTest, AnUnknownTypeIsAnError) {
  g_listing.count = 1;
  g_listing.type = 6;
  absl::StatusOr<std::vector<ipc::StreamInfo>> streams = ListStreams(table_, nullptr, "acme");
  EXPECT_EQ(streams.status(),
            absl::InternalError("backend 'acme' listed stream 0 with type 6, which no CV_STREAM_* names"));
  g_listing.type = -1;
  EXPECT_FALSE(ListStreams(table_, nullptr, "acme").ok());
}

TEST_F(StreamListTest, AnUnterminatedCodecNameStopsAtItsField) {
  g_listing.count = 1;
  g_listing.unterminated_codec = true;
  absl::StatusOr<std::vector<ipc::StreamInfo>> streams = ListStreams(table_, nullptr, "acme");
  ASSERT_TRUE(streams.ok()) << streams.status();
  EXPECT_EQ((*streams)[0].codec, std::string(CV_NAME_BYTES, 'x'));
}

}  // namespace
}  // namespace codecvisor::runner
