#include "base/batch_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace codecvisor {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// Whether each 4 KiB page of [offset, offset + bytes) of `m` is resident.
std::vector<bool> Resident(const BatchMemory& m, size_t offset, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> v((bytes + page - 1) / page);
  EXPECT_EQ(mincore(m.data() + offset, bytes, v.data()), 0);
  std::vector<bool> out;
  for (unsigned char c : v) out.push_back((c & 1) != 0);
  return out;
}

bool AllResident(const BatchMemory& m, size_t offset, size_t bytes) {
  for (bool r : Resident(m, offset, bytes)) {
    if (!r) return false;
  }
  return true;
}

bool NoneResident(const BatchMemory& m, size_t offset, size_t bytes) {
  for (bool r : Resident(m, offset, bytes)) {
    if (r) return false;
  }
  return true;
}

// MADV_POPULATE_WRITE is Linux 5.14+; without it the memory is faulted in
// as it is written, and there is no residency to check.
bool KernelPopulates() {
#ifdef MADV_POPULATE_WRITE
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  const bool ok = madvise(p, 4096, MADV_POPULATE_WRITE) == 0;
  munmap(p, 4096);
  return ok;
#else
  return false;
#endif
}

TEST(BatchMemoryTest, SmallSizesRoundToPagesLargeOnesToHugePages) {
  EXPECT_EQ(BatchMemory(1).size(), 4096u);
  EXPECT_EQ(BatchMemory(5000).size(), 8192u);
  EXPECT_EQ(BatchMemory(kHugePage + 1).size(), 2 * kHugePage);
  EXPECT_EQ(BatchMemory(0).size(), 4096u);
}

TEST(BatchMemoryTest, PopulatedMemoryIsResidentAtOnce) {
  if (!KernelPopulates()) GTEST_SKIP() << "no MADV_POPULATE_WRITE";
  BatchMemory m(3 * kHugePage);
  EXPECT_TRUE(AllResident(m, 0, m.size()));
}

TEST(BatchMemoryTest, OnDemandMemoryIsResidentOnlyWherePopulated) {
  if (!KernelPopulates()) GTEST_SKIP() << "no MADV_POPULATE_WRITE";
  BatchMemory m(8 * kHugePage, BatchMemory::Pages::kOnDemand);
  EXPECT_TRUE(NoneResident(m, 0, m.size()));
  // An unaligned range: every page it touches becomes resident; memory
  // two huge pages further on does not.
  m.Populate(kHugePage + 100, kHugePage);
  EXPECT_TRUE(AllResident(m, kHugePage, kHugePage + 4096));
  EXPECT_TRUE(NoneResident(m, 4 * kHugePage, 4 * kHugePage));
}

TEST(BatchMemoryTest, MovesTransferTheMapping) {
  BatchMemory a(4096);
  a.data()[0] = 42;
  BatchMemory b(std::move(a));
  EXPECT_EQ(b.data()[0], 42);
  EXPECT_EQ(a.data(), nullptr);
  BatchMemory c;
  c = std::move(b);
  EXPECT_EQ(c.data()[0], 42);
  EXPECT_EQ(c.size(), 4096u);
}

}  // namespace
}  // namespace codecvisor
