#include "ipc/ring.h"

#include <cstring>
#include <numeric>

#include <gtest/gtest.h>

namespace codecvisor::ipc {
namespace {

// A ring over private memory: the ring logic does not care where it lives.
struct TestRing {
  explicit TestRing(uint64_t capacity) : data(capacity), writer(&control, data.data(), capacity),
                                         reader(&control, data.data(), capacity) {}
  RingControl control{};
  std::vector<uint8_t> data;
  RingWriter writer;
  RingReader reader;
};

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

std::vector<uint8_t> Bytes(const kj::Array<capnp::word>& w) {
  auto* p = reinterpret_cast<const uint8_t*>(w.begin());
  return {p, p + w.size() * sizeof(capnp::word)};
}

TEST(RingTest, EmptyReadsNothing) {
  TestRing r(4096);
  EXPECT_FALSE(r.reader.HasData());
  auto got = r.reader.Read();
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 0u);
}

TEST(RingTest, WrapsAroundManyTimesWithoutLosingBytes) {
  TestRing r(4096);
  // 1000 records of varying whole-word sizes: the indices pass the ring's end
  // about 200 times, and records split across the end in every alignment.
  for (int i = 0; i < 1000; ++i) {
    auto payload = Pattern(8 * (1 + (i * 37) % 100), static_cast<uint8_t>(i));
    ASSERT_TRUE(r.writer.Write(payload).ok()) << i;
    auto got = r.reader.Read();
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(Bytes(*got), payload) << "record " << i;
  }
  EXPECT_GT(r.control.tail.load(), 50u * 4096);
}

TEST(RingTest, FullRingRefusesThenAcceptsAfterRead) {
  TestRing r(4096);
  auto payload = Pattern(1000, 1);
  int written = 0;
  while (r.writer.HasRoomFor(payload.size())) {
    ASSERT_TRUE(r.writer.Write(payload).ok());
    ++written;
  }
  EXPECT_EQ(written, 4);  // 4 x 1008 bytes fit in 4096, a fifth does not
  EXPECT_EQ(r.writer.Write(payload).code(), absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(r.reader.Read().ok());
  EXPECT_TRUE(r.writer.Write(payload).ok());
}

TEST(RingTest, TooLargeForRingIsInvalidArgument) {
  TestRing r(4096);
  EXPECT_EQ(r.writer.Write(Pattern(4096, 0)).code(), absl::StatusCode::kInvalidArgument);
}

TEST(RingTest, ImpossibleProducerIndexIsDataLoss) {
  TestRing r(4096);
  r.control.tail.store(1 << 20);  // far beyond anything the capacity allows
  EXPECT_EQ(r.reader.Read().status().code(), absl::StatusCode::kDataLoss);
}

TEST(RingTest, CorruptRecordHeaderIsDataLoss) {
  TestRing r(4096);
  ASSERT_TRUE(r.writer.Write(Pattern(64, 3)).ok());
  r.data[4] ^= 0xff;  // break the ~length check word
  EXPECT_EQ(r.reader.Read().status().code(), absl::StatusCode::kDataLoss);
}

TEST(RingTest, LengthBeyondPublishedBytesIsDataLoss) {
  TestRing r(4096);
  ASSERT_TRUE(r.writer.Write(Pattern(64, 3)).ok());
  const uint32_t len = 2048, check = ~len;
  std::memcpy(r.data.data(), &len, 4);
  std::memcpy(r.data.data() + 4, &check, 4);
  auto got = r.reader.Read();
  ASSERT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(got.status().message().find("claims 2048 bytes"), std::string::npos) << got.status();
}

TEST(RingTest, ImpossibleConsumerIndexIsDataLossForWriter) {
  TestRing r(4096);
  r.control.head.store(12345);  // ahead of the writer's tail
  EXPECT_EQ(r.writer.Write(Pattern(8, 0)).code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace codecvisor::ipc
