#include "core/supervisor_env.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace codecvisor {
namespace {

constexpr uint64_t kNone = RLIM_INFINITY;

std::string Cause(int err) { return absl::StrCat("pthread_create: ", std::strerror(err)); }

TEST(WhoseLimitTest, DescriptorsForEmfileOnly) {
  const ProcessLimits limits{4096, 64, kNone, kNone};
  EXPECT_EQ(WhoseLimit(Cause(EMFILE), limits), " (this process may hold 64 descriptors: `ulimit -n`)");
  EXPECT_EQ(WhoseLimit(Cause(ENFILE), limits), " (the machine's open files: fs.file-max)");
  EXPECT_EQ(WhoseLimit(Cause(ENOSPC), limits), "");
}

// A memory shortage was taken for a descriptor shortage: "mmap(channel
// memfd): Cannot allocate memory (this process may hold 20000 descriptors)".
TEST(WhoseLimitTest, MemoryForEnomemNamesTheLimitsThatAreSet) {
  EXPECT_EQ(WhoseLimit(Cause(ENOMEM), {4096, 64, 400ull << 20, kNone}),
            " (this process limits its address space to 400 MiB (`ulimit -v`))");
  EXPECT_EQ(WhoseLimit(Cause(ENOMEM), {4096, 64, 400ull << 20, 60ull << 20}),
            " (this process limits its address space to 400 MiB (`ulimit -v`) and its data to 60 MiB (`ulimit -d`))");
  EXPECT_EQ(WhoseLimit(Cause(ENOMEM), {4096, 64, kNone, kNone}), "") << "the machine's memory: no limit to name";
}

// pthread_create answers EAGAIN also when a thread's stack cannot be
// mapped: under a data limit, a thread limit was named alone.
TEST(WhoseLimitTest, ThreadsForEagainWithRoomForAStackWhereMemoryIsLimited) {
  EXPECT_EQ(WhoseLimit(Cause(EAGAIN), {96365, 64, kNone, kNone}),
            " (this process's user may run 96365 processes and threads: `ulimit -u`)");
  EXPECT_EQ(WhoseLimit(Cause(EAGAIN), {96365, 64, kNone, 60ull << 20}),
            " (this process's user may run 96365 processes and threads: `ulimit -u`; a thread's stack also needs "
            "room: this process limits its data to 60 MiB (`ulimit -d`))");
  EXPECT_EQ(WhoseLimit(Cause(EAGAIN), {kNone, 64, kNone, kNone}),
            " (the machine's processes and threads: kernel.threads-max, kernel.pid_max)");
}

TEST(WhoseLimitTest, HostShortageNamesTheLimitAndIsMarked) {
  const absl::Status s = HostShortage(absl::ResourceExhaustedError(Cause(EMFILE)));
  EXPECT_TRUE(IsHostShortage(s));
  EXPECT_TRUE(absl::IsResourceExhausted(s));
  EXPECT_NE(s.message().find("descriptors: `ulimit -n`"), std::string::npos) << s;
}

// A memfd above the file-size limit: no decoder can open, whatever is
// closed.
TEST(WhoseLimitTest, AFileSizeLimitIsNotCuredByClosingADecoder) {
  const absl::Status s = HostShortage(absl::ResourceExhaustedError(
      "the channel's memfd: 63164416 bytes of shared memory, above this process's file-size limit of 65536 bytes "
      "(`ulimit -f`), which memfds count against: raise or remove the limit"));
  EXPECT_TRUE(IsHostShortage(s));
  EXPECT_EQ(s.message().find("close a decoder"), std::string::npos) << s;
  EXPECT_NE(s.message().find("`ulimit -f`"), std::string::npos) << s;
}

}  // namespace
}  // namespace codecvisor
