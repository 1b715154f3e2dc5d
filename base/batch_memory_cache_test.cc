#include "base/batch_memory_cache.h"

#include <cstdint>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

namespace codecvisor {
namespace {

using Mapping = BatchMemoryCache::Mapping;

constexpr size_t kMiB = size_t{1} << 20;
const absl::Time kStart = absl::FromUnixSeconds(1000);

// Made-up addresses: the cache never touches them.
Mapping M(uintptr_t address, size_t size) { return Mapping{reinterpret_cast<uint8_t*>(address), size}; }

TEST(BatchMemoryCacheTest, GivesBackWhatItKept) {
  BatchMemoryCache cache({.bytes = 64 * kMiB});
  std::vector<Mapping> release;
  cache.Keep(M(0x1000, 8 * kMiB), kStart, &release);
  EXPECT_TRUE(release.empty());
  EXPECT_EQ(cache.bytes(), 8 * kMiB);
  EXPECT_EQ(cache.Take(8 * kMiB, kStart, &release), M(0x1000, 8 * kMiB));
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_EQ(cache.Take(8 * kMiB, kStart, &release), std::nullopt);
  EXPECT_TRUE(release.empty());
}

TEST(BatchMemoryCacheTest, TakesTheSmallestFitWithinAQuarterMore) {
  BatchMemoryCache cache({.bytes = 256 * kMiB});
  std::vector<Mapping> release;
  cache.Keep(M(0x1000, 12 * kMiB), kStart, &release);
  cache.Keep(M(0x2000, 10 * kMiB), kStart, &release);
  cache.Keep(M(0x3000, 6 * kMiB), kStart, &release);
  cache.Keep(M(0x4000, 40 * kMiB), kStart, &release);
  // 7 MiB: the 6 is too small, the 10 more than a quarter over.
  EXPECT_EQ(cache.Take(7 * kMiB, kStart, &release), std::nullopt);
  // 9 MiB: the 10 fits (10 <= 11.25), the 12 does not.
  EXPECT_EQ(cache.Take(9 * kMiB, kStart, &release), M(0x2000, 10 * kMiB));
  // 10 MiB: the 12 fits (12 <= 12.5).
  EXPECT_EQ(cache.Take(10 * kMiB, kStart, &release), M(0x1000, 12 * kMiB));
  // A small batch never pins the large mapping.
  EXPECT_EQ(cache.Take(4 * kMiB, kStart, &release), std::nullopt);
  EXPECT_EQ(cache.mappings(), 2u);
  EXPECT_TRUE(release.empty());
}

TEST(BatchMemoryCacheTest, AmongEqualSizesTheMostRecentlyKeptComesFirst) {
  BatchMemoryCache cache({.bytes = 64 * kMiB});
  std::vector<Mapping> release;
  cache.Keep(M(0x1000, 8 * kMiB), kStart, &release);
  cache.Keep(M(0x2000, 8 * kMiB), kStart + absl::Seconds(1), &release);
  EXPECT_EQ(cache.Take(8 * kMiB, kStart + absl::Seconds(1), &release), M(0x2000, 8 * kMiB));
}

TEST(BatchMemoryCacheTest, TheByteLimitGivesBackTheOldestFirst) {
  BatchMemoryCache cache({.bytes = 20 * kMiB});
  std::vector<Mapping> release;
  cache.Keep(M(0x1000, 8 * kMiB), kStart, &release);
  cache.Keep(M(0x2000, 8 * kMiB), kStart, &release);
  cache.Keep(M(0x3000, 8 * kMiB), kStart, &release);
  EXPECT_EQ(release, std::vector<Mapping>{M(0x1000, 8 * kMiB)});
  EXPECT_EQ(cache.bytes(), 16 * kMiB);
}

TEST(BatchMemoryCacheTest, AMappingOverTheLimitIsNotKeptAndEvictsNothing) {
  BatchMemoryCache cache({.bytes = 20 * kMiB});
  std::vector<Mapping> release;
  cache.Keep(M(0x1000, 8 * kMiB), kStart, &release);
  cache.Keep(M(0x2000, 21 * kMiB), kStart, &release);
  EXPECT_EQ(release, std::vector<Mapping>{M(0x2000, 21 * kMiB)});
  EXPECT_EQ(cache.bytes(), 8 * kMiB);
}

TEST(BatchMemoryCacheTest, TheMappingLimitGivesBackTheOldest) {
  BatchMemoryCache cache({.bytes = 1024 * kMiB, .mappings = 2});
  std::vector<Mapping> release;
  cache.Keep(M(0x1000, kMiB), kStart, &release);
  cache.Keep(M(0x2000, kMiB), kStart, &release);
  cache.Keep(M(0x3000, kMiB), kStart, &release);
  EXPECT_EQ(release, std::vector<Mapping>{M(0x1000, kMiB)});
  EXPECT_EQ(cache.mappings(), 2u);
}

TEST(BatchMemoryCacheTest, IdleMappingsAreGivenBackAtTheNextCall) {
  BatchMemoryCache cache({.bytes = 64 * kMiB, .max_idle = absl::Seconds(10)});
  std::vector<Mapping> release;
  cache.Keep(M(0x1000, 8 * kMiB), kStart, &release);
  cache.Keep(M(0x2000, 4 * kMiB), kStart + absl::Seconds(5), &release);
  // At 10 s the first is exactly max_idle old: still kept.
  EXPECT_EQ(cache.Take(kMiB, kStart + absl::Seconds(10), &release), std::nullopt);
  EXPECT_TRUE(release.empty());
  EXPECT_EQ(cache.Take(kMiB, kStart + absl::Seconds(11), &release), std::nullopt);
  EXPECT_EQ(release, std::vector<Mapping>{M(0x1000, 8 * kMiB)});
  release.clear();
  cache.Keep(M(0x3000, kMiB), kStart + absl::Seconds(16), &release);
  EXPECT_EQ(release, std::vector<Mapping>{M(0x2000, 4 * kMiB)});
  EXPECT_EQ(cache.bytes(), kMiB);
}

TEST(BatchMemoryCacheTest, AZeroLimitKeepsNothing) {
  BatchMemoryCache cache({.bytes = 0});
  std::vector<Mapping> release;
  cache.Keep(M(0x1000, 4096), kStart, &release);
  EXPECT_EQ(release, std::vector<Mapping>{M(0x1000, 4096)});
  EXPECT_EQ(cache.mappings(), 0u);
}

TEST(BatchMemoryCacheTest, ClearReturnsEverything) {
  BatchMemoryCache cache({.bytes = 64 * kMiB});
  std::vector<Mapping> release;
  cache.Keep(M(0x1000, kMiB), kStart, &release);
  cache.Keep(M(0x2000, 2 * kMiB), kStart, &release);
  EXPECT_EQ(cache.Clear(), (std::vector<Mapping>{M(0x1000, kMiB), M(0x2000, 2 * kMiB)}));
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_EQ(cache.mappings(), 0u);
}

}  // namespace
}  // namespace codecvisor
