#include "base/batch_memory.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
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

// Whether [data, data + bytes) is mapped in this process at all.
bool Mapped(const uint8_t* data, size_t bytes) {
  std::vector<unsigned char> v(bytes / 4096 + 1);
  return mincore(const_cast<uint8_t*>(data), bytes, v.data()) == 0 || errno != ENOMEM;
}

// Each test starts with an empty cache of a known limit, whatever the
// environment says.
class BatchMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override { BatchMemory::SetCacheLimitBytes(0); }
  void TearDown() override { BatchMemory::SetCacheLimitBytes(0); }
};

TEST_F(BatchMemoryTest, SmallSizesRoundToPagesLargeOnesToHugePages) {
  EXPECT_EQ(BatchMemory(1).size(), 4096u);
  EXPECT_EQ(BatchMemory(5000).size(), 8192u);
  EXPECT_EQ(BatchMemory(kHugePage + 1).size(), 2 * kHugePage);
  EXPECT_EQ(BatchMemory(0).size(), 4096u);
}

TEST_F(BatchMemoryTest, PopulatedMemoryIsResidentAtOnce) {
  if (!KernelPopulates()) GTEST_SKIP() << "no MADV_POPULATE_WRITE";
  BatchMemory m(3 * kHugePage);
  EXPECT_TRUE(AllResident(m, 0, m.size()));
}

TEST_F(BatchMemoryTest, OnDemandMemoryIsResidentOnlyWherePopulated) {
  if (!KernelPopulates()) GTEST_SKIP() << "no MADV_POPULATE_WRITE";
  BatchMemory m(8 * kHugePage, BatchMemory::Pages::kOnDemand);
  EXPECT_TRUE(NoneResident(m, 0, m.size()));
  // An unaligned range: every page it touches becomes resident; memory
  // two huge pages further on does not.
  m.Populate(kHugePage + 100, kHugePage);
  EXPECT_TRUE(AllResident(m, kHugePage, kHugePage + 4096));
  EXPECT_TRUE(NoneResident(m, 4 * kHugePage, 4 * kHugePage));
}

// Growing keeps the contents without a second copy of them: the pages
// move, and the new part is not made resident until populated.
TEST_F(BatchMemoryTest, GrowingKeepsTheContentsAndCopiesNothing) {
  BatchMemory m(2 * kHugePage);
  for (size_t i = 0; i < m.size(); i += 4096) m.data()[i] = static_cast<uint8_t>(i / 4096);
  m.Grow(6 * kHugePage);
  ASSERT_GE(m.size(), 6 * kHugePage);
  for (size_t i = 0; i < 2 * kHugePage; i += 4096) ASSERT_EQ(m.data()[i], static_cast<uint8_t>(i / 4096)) << i;
  if (KernelPopulates()) EXPECT_TRUE(NoneResident(m, 3 * kHugePage, 3 * kHugePage));
  const size_t size = m.size();
  m.Grow(kHugePage);  // never shrinks
  EXPECT_EQ(m.size(), size);
  BatchMemory empty;
  empty.Grow(100);
  EXPECT_EQ(empty.size(), 4096u);
}

TEST_F(BatchMemoryTest, MovesTransferTheMapping) {
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

TEST_F(BatchMemoryTest, FreedMemoryIsReusedAlreadyResident) {
  BatchMemory::SetCacheLimitBytes(64 << 20);
  uint8_t* first = nullptr;
  {
    BatchMemory m(4 * kHugePage);
    first = m.data();
    m.data()[0] = 7;
  }
  EXPECT_EQ(BatchMemory::CachedBytes(), 4 * kHugePage);
  BatchMemory again(4 * kHugePage, BatchMemory::Pages::kOnDemand);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(BatchMemory::CachedBytes(), 0u);
  // Residency is not checked: the kernel may reclaim kept (MADV_FREE)
  // pages under memory pressure, which is the point of marking them.
  again.data()[again.size() - 1] = 9;
  EXPECT_EQ(again.data()[again.size() - 1], 9);
}

TEST_F(BatchMemoryTest, ASmallBatchDoesNotTakeALargeMapping) {
  BatchMemory::SetCacheLimitBytes(64 << 20);
  { BatchMemory large(8 * kHugePage); }
  BatchMemory small(2 * kHugePage);
  EXPECT_EQ(BatchMemory::CachedBytes(), 8 * kHugePage);
}

TEST_F(BatchMemoryTest, WithTheCacheOffFreedMemoryIsUnmapped) {
  uint8_t* data = nullptr;
  {
    BatchMemory m(2 * kHugePage);
    data = m.data();
    ASSERT_TRUE(Mapped(data, m.size()));
  }
  EXPECT_EQ(BatchMemory::CachedBytes(), 0u);
  EXPECT_FALSE(Mapped(data, 2 * kHugePage));
}

TEST_F(BatchMemoryTest, LoweringTheLimitUnmapsWhatWasKept) {
  BatchMemory::SetCacheLimitBytes(64 << 20);
  uint8_t* data = nullptr;
  {
    BatchMemory m(2 * kHugePage);
    data = m.data();
  }
  ASSERT_TRUE(Mapped(data, 2 * kHugePage));
  BatchMemory::SetCacheLimitBytes(0);
  EXPECT_FALSE(Mapped(data, 2 * kHugePage));
}

// A forked child starts with an empty cache: the kept mappings were not
// inherited (so neither side pays a copy-on-write fault for them), and
// handing them out there would crash. Memory in use is inherited as usual.
TEST_F(BatchMemoryTest, AForkedChildInheritsBatchesInUseButNotTheCache) {
  BatchMemory::SetCacheLimitBytes(64 << 20);
  uint8_t* kept = nullptr;
  {
    BatchMemory m(2 * kHugePage);
    kept = m.data();
  }
  BatchMemory in_use(4 * kHugePage);  // too large for the kept one
  in_use.data()[100] = 42;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int failures = 0;
    if (BatchMemory::CachedBytes() != 0) failures |= 1;
    if (Mapped(kept, 2 * kHugePage)) failures |= 2;
    if (in_use.data()[100] != 42) failures |= 4;
    // What the child allocates is new memory, usable.
    BatchMemory fresh(2 * kHugePage);
    fresh.data()[0] = 1;
    fresh.data()[fresh.size() - 1] = 2;
    if (fresh.data()[0] != 1 || fresh.data()[fresh.size() - 1] != 2) failures |= 8;
    _exit(failures);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // The parent's cache is untouched.
  EXPECT_EQ(BatchMemory::CachedBytes(), 2 * kHugePage);
  BatchMemory again(2 * kHugePage);
  EXPECT_EQ(again.data(), kept);
}

// This process's address space in bytes (VmSize).
size_t AddressSpaceBytes() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  size_t kb = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "VmSize: %zu kB", &kb) == 1) break;
  }
  std::fclose(f);
  return kb << 10;
}

// Kept mappings count against RLIMIT_AS (`ulimit -v`) though the kernel
// may reclaim their pages: under such a limit a new batch, or a batch
// grown, that the cache's mappings leave no room for gets it when they
// are given back, where it failed with bad_alloc. In a child, whose limit
// is what it has mapped plus 96 MiB.
TEST_F(BatchMemoryTest, UnderAnAddressSpaceLimitTheCacheMakesRoomForANewBatch) {
#ifdef CODECVISOR_SANITIZER
  GTEST_SKIP() << "the sanitizers' runtimes map memory of their own as they go";
#endif
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    BatchMemory::SetCacheLimitBytes(size_t{1} << 30);
    const size_t mapped = AddressSpaceBytes();
    const rlimit limit{mapped + (96 << 20), mapped + (96 << 20)};
    if (mapped == 0 || setrlimit(RLIMIT_AS, &limit) != 0) _exit(100);
    int failures = 0;
    try {
      { BatchMemory kept(64 << 20, BatchMemory::Pages::kOnDemand); }
      if (BatchMemory::CachedBytes() != (64 << 20)) failures |= 1;
      BatchMemory fresh(66 << 20, BatchMemory::Pages::kOnDemand);  // with the kept 64 MiB: over the limit
      fresh.data()[0] = 1;
    } catch (const std::bad_alloc&) {
      failures |= 2;
    }
    try {
      { BatchMemory kept(64 << 20, BatchMemory::Pages::kOnDemand); }
      BatchMemory grown(16 << 20, BatchMemory::Pages::kOnDemand);
      grown.Grow(80 << 20);
      grown.data()[(80 << 20) - 1] = 1;
    } catch (const std::bad_alloc&) {
      failures |= 4;
    }
    _exit(failures);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_NE(WEXITSTATUS(status), 100) << "could not lower the child's address space";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "bit 2: a new batch refused, bit 4: a batch's growth refused";
}

}  // namespace
}  // namespace codecvisor
