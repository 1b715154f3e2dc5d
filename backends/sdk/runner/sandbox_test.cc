#include "backends/sdk/runner/sandbox.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/falloc.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/threads_refused_for_test.h"

namespace codecvisor::runner {
namespace {

// Each type byte is in exactly one allowed block, or in none when denied.
void ExpectExactCover(const std::vector<uint8_t>& denied) {
  const auto blocks = AllowedIoctlTypeBlocks(denied);
  for (unsigned t = 0; t < 256; ++t) {
    const int matches = static_cast<int>(std::count_if(
        blocks.begin(), blocks.end(), [t](const auto& b) { return (t & b.first) == b.second; }));
    const bool is_denied = std::find(denied.begin(), denied.end(), t) != denied.end();
    EXPECT_EQ(matches, is_denied ? 0 : 1) << "ioctl type " << t;
  }
}

TEST(AllowedIoctlTypeBlocksTest, CoverEveryTypeButTheDeniedOnes) {
  ExpectExactCover({kDeniedIoctlTypes, kDeniedIoctlTypes + std::size(kDeniedIoctlTypes)});
  ExpectExactCover({});
  ExpectExactCover({0x00, 0xff});
  // One type out of 256 leaves the eight aligned halves, quarters, ... around it.
  EXPECT_EQ(AllowedIoctlTypeBlocks(std::vector<uint8_t>{0x54}).size(), 8u);
  EXPECT_EQ(AllowedIoctlTypeBlocks(std::vector<uint8_t>{}),
            (std::vector<std::pair<uint8_t, uint8_t>>{{0x00, 0x00}}));
}

// madvise's blocks: every advice but the denied ones, whatever the
// argument's upper half (the kernel reads an int), each in one block.
TEST(AllowedValueBlocksTest, CoverEveryAdviceButTheDeniedOnes) {
  const auto blocks = AllowedValueBlocks(32, kDeniedAdvice);
  EXPECT_LT(blocks.size(), 70u);
  auto matches = [&](uint32_t v) {
    return std::count_if(blocks.begin(), blocks.end(), [v](const auto& b) { return (v & b.first) == b.second; });
  };
  for (uint32_t v : {0u, 1u, 4u, 8u, 20u, 22u, 23u, 25u, 100u, 101u, 102u, 0x7fffffffu, 0x80000000u, 0xffffffffu}) {
    EXPECT_EQ(matches(v), 1) << v;
  }
  for (uint32_t v : kDeniedAdvice) EXPECT_EQ(matches(v), 0) << v;
}

// What `probe` returns in a child under the filter (ApplySeccomp(mode,
// memfd)), or -1 where the filter could not be applied. The child writes
// it to a pipe and never returns (its exit traps: no SIGSYS handler here).
template <typename Probe>
int UnderTheFilter(bool memfd, SeccompMode mode, Probe probe) {
  int result[2];
  if (pipe(result) != 0) return -1;
  const pid_t child = fork();
  if (child == 0) {
    int answer = -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && ApplySeccomp(mode, memfd).ok()) answer = probe();
    (void)!write(result[1], &answer, sizeof(answer));
    _exit(0);
  }
  close(result[1]);
  int answer = -1;
  if (read(result[0], &answer, sizeof(answer)) != sizeof(answer)) answer = -1;
  close(result[0]);
  waitpid(child, nullptr, 0);
  return answer;
}

// What memfd_create gives a child under the filter, with and without
// `memfd`: 0 where it made one, else its errno.
int MemfdUnderTheFilter(bool memfd, SeccompMode mode = SeccompMode::kEnforce) {
  return UnderTheFilter(memfd, mode, [] { return memfd_create("probe", MFD_CLOEXEC) >= 0 ? 0 : errno; });
}

// A backend held by no memory cgroup gets no memfd (whose pages nothing
// else bounds): an error it can handle, not a trap.
TEST(SeccompTest, MemfdsAreRefusedWithoutTheirFlag) {
  EXPECT_EQ(MemfdUnderTheFilter(true), 0);
  EXPECT_EQ(MemfdUnderTheFilter(false), EPERM);
}

// CODECVISOR_SECCOMP=log, how a vendor lists what the filter refuses: the
// memfd goes ahead (and the kernel logs it) as every other refused call.
TEST(SeccompTest, TheLoggingModeLetsARefusedMemfdThrough) {
  EXPECT_EQ(MemfdUnderTheFilter(false, SeccompMode::kLog), 0);
}

// What `call(fd, mapping)` answers under the filter on four pages of a
// shared memfd, written before the filter applies: 0, or its errno.
template <typename Call>
int OnASharedMemfdUnderTheFilter(Call call) {
  constexpr size_t kBytes = 4 * 4096;
  const int fd = memfd_create("pages", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, kBytes) != 0) return -1;
  void* mapping = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapping == MAP_FAILED) return -1;
  std::memset(mapping, 1, kBytes);
  const int answer = UnderTheFilter(true, SeccompMode::kEnforce, [&] { return call(fd, mapping) == 0 ? 0 : errno; });
  munmap(mapping, kBytes);
  close(fd);
  return answer;
}

// Pages of the channel's memfd past the host's share are the backend's:
// a backend that freed them (a hole) would have the host's next read of a
// frame there allocate them again, charged to the host. Advice that frees
// a shared memfd's pages, and punching a hole, answer EPERM; the advice a
// decoder's allocator gives, and growing a file of its own, still work.
TEST(SeccompTest, NoHoleIsMadeInASharedMemfd) {
  constexpr size_t kPage = 4096;
  EXPECT_EQ(OnASharedMemfdUnderTheFilter([](int, void* m) { return madvise(m, kPage, MADV_REMOVE); }), EPERM);
  EXPECT_EQ(OnASharedMemfdUnderTheFilter([](int, void* m) { return madvise(m, kPage, MADV_PAGEOUT); }), EPERM);
  EXPECT_EQ(OnASharedMemfdUnderTheFilter(
                [](int fd, void*) { return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, kPage); }),
            EPERM);
  // The kernel reads the advice as an int: bits above it change nothing.
  EXPECT_EQ(OnASharedMemfdUnderTheFilter([](int, void* m) {
              return static_cast<int>(syscall(SYS_madvise, m, kPage, (uint64_t{1} << 32) | MADV_REMOVE));
            }),
            EPERM);
  EXPECT_EQ(OnASharedMemfdUnderTheFilter([](int, void* m) { return madvise(m, kPage, MADV_DONTNEED); }), 0);
  EXPECT_EQ(OnASharedMemfdUnderTheFilter([](int, void* m) { return madvise(m, kPage, MADV_WILLNEED); }), 0);
  // An advice newer than any list (102, MADV_GUARD_INSTALL, which newer
  // glibcs give thread stacks) is the kernel's to answer, not a trap.
  EXPECT_NE(OnASharedMemfdUnderTheFilter([](int, void* m) { return madvise(m, kPage, 102); }), -1);
  EXPECT_EQ(OnASharedMemfdUnderTheFilter([](int fd, void*) { return fallocate(fd, 0, 0, 8 * kPage); }), 0);
}

// What ApplyLandlock says in a child whose landlock_create_ruleset answers
// `error` (a seccomp filter stands for the kernel's answer).
std::string LandlockRefusal(int error) {
  absl::StatusOr<std::string> said = codecvisor::testing::RunWithSyscallsRefused(
      {SCMP_SYS(landlock_create_ruleset)}, error, [] { return std::string(ApplyLandlock(RunnerSandbox{}).message()); });
  return said.ok() ? *said : said.status().ToString();
}

// A kernel with Landlock built in but not enabled at boot answers
// EOPNOTSUPP, one without it ENOSYS: each is named as it is, as doctor
// names them ("the kernel has no Landlock" was said of both, and of a
// container's refusal).
TEST(LandlockTest, EachRefusalIsNamedForWhatItIs) {
  EXPECT_EQ(LandlockRefusal(EOPNOTSUPP),
            "the kernel's Landlock is built in but not enabled (add landlock to the lsm= boot parameter)");
  EXPECT_EQ(LandlockRefusal(ENOSYS), "the kernel has no Landlock");
  EXPECT_EQ(LandlockRefusal(EPERM),
            std::string("Landlock is refused here: landlock_create_ruleset: ") + std::strerror(EPERM));
}

}  // namespace
}  // namespace codecvisor::runner
