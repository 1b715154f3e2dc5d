#include "tools/bench/chunks.h"

#include <gtest/gtest.h>
#include <vector>

namespace codecvisor::bench {
namespace {

TEST(ChunksTest, SequentialChunksRepeatTheVideoWithoutCrossingItsEnd) {
  const std::vector<Chunk> chunks = SequentialChunks(7, 2, 3);
  const std::vector<Chunk> expected = {{.start = 0, .stop = 3}, {.start = 3, .stop = 6}, {.start = 6, .stop = 7},
                                       {.start = 0, .stop = 3}, {.start = 3, .stop = 6}, {.start = 6, .stop = 7}};
  EXPECT_EQ(chunks, expected);
  int64_t frames = 0;
  for (const Chunk& c : chunks) frames += c.frames();
  EXPECT_EQ(frames, 14);
  // A chunk size of 0 would never end: it is taken as 1.
  EXPECT_EQ(SequentialChunks(2, 1, 0).size(), 2u);
  EXPECT_EQ(SequentialChunks(5, 1, 100), (std::vector<Chunk>{{.start = 0, .stop = 5}}));
}

TEST(ChunksTest, ListChunksKeepTheOrderAndDuplicates) {
  const std::vector<int64_t> indices = {9, 2, 2, 7, 0};
  const std::vector<Chunk> chunks = ListChunks(indices, 2);
  const std::vector<Chunk> expected = {{.indices = {9, 2}}, {.indices = {2, 7}}, {.indices = {0}}};
  EXPECT_EQ(chunks, expected);
  EXPECT_EQ(chunks[2].frames(), 1);
  EXPECT_TRUE(ListChunks({}, 5).empty());
  // A chunk's i-th frame: from its list, else counted from its start.
  EXPECT_EQ(chunks[1].index(0), 2);
  EXPECT_EQ(chunks[1].index(1), 7);
  EXPECT_EQ(SequentialChunks(7, 1, 3)[1].index(2), 5);
}

TEST(ChunksTest, RotatedOrderGivesEverySideEveryPlace) {
  EXPECT_EQ(RotatedOrder(3, 0), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(RotatedOrder(3, 1), (std::vector<size_t>{1, 2, 0}));
  EXPECT_EQ(RotatedOrder(3, 5), (std::vector<size_t>{2, 0, 1}));
  EXPECT_EQ(RotatedOrder(2, 1), (std::vector<size_t>{1, 0}));
  // Three sides: the last of one chunk is never the first of the next.
  for (size_t chunk = 0; chunk < 6; ++chunk) EXPECT_NE(RotatedOrder(3, chunk).back(), RotatedOrder(3, chunk + 1)[0]);
}

}  // namespace
}  // namespace codecvisor::bench
