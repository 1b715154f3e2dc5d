#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include "tools/bench/chunks.h"
#include "tools/bench/cpu_time.h"
#include "tools/bench/memory_usage.h"
#include "tools/bench/run_program.h"
#include "tools/bench/scratch_dir.h"
#include "tools/bench/stats.h"
#include "tools/bench/targets.h"

namespace codecvisor::bench {
namespace {

TEST(StatsTest, MedianIsAMeasuredValue) {
  EXPECT_EQ(Median({}), 0);
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 3);
}

TEST(StatsTest, PercentileIsNearestRank) {
  std::vector<double> v;
  for (int i = 1; i <= 50; ++i) v.push_back(51 - i);  // 50..1, unsorted
  EXPECT_EQ(Percentile(v, 50), 25);
  EXPECT_EQ(Percentile(v, 95), 48);  // ceil(47.5) = 48th of 50
  EXPECT_EQ(Percentile(v, 100), 50);
  EXPECT_EQ(Percentile({7}, 95), 7);
  EXPECT_EQ(Percentile({}, 50), 0);
}

TEST(StatsTest, QuartilesAreNearestRank) {
  std::vector<double> v;
  for (int i = 1; i <= 8; ++i) v.push_back(9 - i);  // 8..1, unsorted
  EXPECT_EQ(Quartiles(v), (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(Quartiles({}), (std::vector<double>{0, 0, 0}));
}

TEST(StatsTest, PairedSpeedRatiosPairByPosition) {
  // Baseline 0.5 s against 0.625 s is the measured side at 0.8 of its speed
  // (times exact in binary, so each quotient is the nearest double).
  const std::vector<double> baseline = {0.5, 0.25, 0.75};
  const std::vector<double> measured = {0.625, 0.125, 0.75};
  EXPECT_EQ(PairedSpeedRatios(baseline, measured), (std::vector<double>{0.8, 2.0, 1.0}));
  // Only as many pairs as the shorter side has; a time of zero is no pair.
  const std::vector<double> shorter = {0.625, 0};
  EXPECT_EQ(PairedSpeedRatios(baseline, shorter), (std::vector<double>{0.8}));
}

TEST(StatsTest, Rounded) {
  EXPECT_DOUBLE_EQ(Rounded(1.23456, 2), 1.23);
  EXPECT_DOUBLE_EQ(Rounded(99.95, 0), 100);
}

TEST(StatsTest, BufferUseCountsFramesPerBufferAndRanksThem) {
  const char slots[3] = {};
  BufferUse a;
  for (int i = 0; i < 6; ++i) a.Add(&slots[i % 2 == 0 ? 0 : (i == 5 ? 2 : 1)]);
  EXPECT_EQ(a.CountsByRank(), (std::vector<int64_t>{3, 2, 1}));
  BufferUse b;
  b.Add(&slots[1], 4);
  b.Merge(a);
  EXPECT_EQ(b.CountsByRank(), (std::vector<int64_t>{6, 3, 1}));
  // Two decoders' slots (different addresses) summed by rank.
  const std::vector<double> shares = SharesByRank({{6, 3, 1}, {10}});
  ASSERT_EQ(shares.size(), 3u);
  EXPECT_DOUBLE_EQ(shares[0], 16.0 / 20);
  EXPECT_DOUBLE_EQ(shares[1], 3.0 / 20);
  EXPECT_DOUBLE_EQ(shares[2], 1.0 / 20);
  EXPECT_TRUE(SharesByRank({}).empty());
}

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

TEST(ScratchDirTest, HoldsFilesAndIsRemovedWithThem) {
  std::string path;
  {
    auto dir = ScratchDir::Create("test");
    ASSERT_TRUE(dir.ok()) << dir.status();
    path = (*dir)->path();
    auto file = (*dir)->WriteFile("a.txt", "hello");
    ASSERT_TRUE(file.ok()) << file.status();
    std::ifstream in(*file);
    std::string text;
    in >> text;
    EXPECT_EQ(text, "hello");
  }
  struct stat st;
  EXPECT_NE(stat(path.c_str(), &st), 0) << path << " outlived its ScratchDir";
}

TEST(RunProgramTest, ReportsExitStatusAndStderr) {
  EXPECT_TRUE(RunProgram({"true"}).ok());
  absl::Status failed = RunProgram({"sh", "-c", "echo broken pipe dream >&2; exit 3"});
  EXPECT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("exited with status 3"), std::string::npos) << failed;
  EXPECT_NE(failed.message().find("broken pipe dream"), std::string::npos) << failed;
  EXPECT_FALSE(RunProgram({"/nonexistent/program"}).ok());
}

TEST(MemoryUsageTest, ReadsAndResetsThePeak) {
  auto rss = ProcStatusKb("VmRSS");
  ASSERT_TRUE(rss.ok()) << rss.status();
  EXPECT_GT(*rss, 0);
  EXPECT_FALSE(ProcStatusKb("NoSuchField").ok());
  {
    std::vector<char> big(64 << 20, 1);  // raise the peak by 64 MiB
    asm volatile("" : : "r"(big.data()) : "memory");
  }
  ASSERT_TRUE(ResetPeakRss().ok());
  auto hwm = ProcStatusKb("VmHWM");
  ASSERT_TRUE(hwm.ok());
  auto now = ProcStatusKb("VmRSS");
  ASSERT_TRUE(now.ok());
  EXPECT_LT(*hwm, *now + (32 << 10)) << "the 64 MiB peak survived the reset";
}

TEST(CpuTimeTest, CountsThisProcessThisThreadAndAnother) {
  const double before = SelfCpuSeconds();
  const double thread_before = ThreadCpuSeconds();
  volatile uint64_t spin = 0;
  for (uint64_t i = 0; i < 200'000'000; ++i) spin = spin + i;
  EXPECT_GT(SelfCpuSeconds(), before);
  const double thread_spent = ThreadCpuSeconds() - thread_before;
  EXPECT_GT(thread_spent, 0);
  // Another thread's spinning is this process's time, not this thread's.
  const double thread_mark = ThreadCpuSeconds();
  const double process_mark = SelfCpuSeconds();
  std::thread([] {
    volatile uint64_t other = 0;
    for (uint64_t i = 0; i < 200'000'000; ++i) other = other + i;
  }).join();
  EXPECT_GT(SelfCpuSeconds() - process_mark, 0.5 * thread_spent);
  EXPECT_LT(ThreadCpuSeconds() - thread_mark, 0.5 * thread_spent);
}

TEST(CpuTimeTest, ThreadTimeslicesCountsEveryWakeUp) {
  const int64_t before = ThreadTimeslices();
  ASSERT_GE(before, 0);
  for (int i = 0; i < 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GE(ThreadTimeslices() - before, 5) << "each sleep ends in one more timeslice";
}

// Each thread is listed by name with its own CPU time: a named thread that
// spins shows it; the waiting caller does not take it on.
TEST(CpuTimeTest, ThreadsCpuNamesEachThreadWithItsOwnTime) {
  std::atomic<pid_t> spinner_tid{0};
  std::atomic<bool> spun{false}, listed{false};
  std::thread spinner([&] {
    pthread_setname_np(pthread_self(), "cv-test-spin");
    spinner_tid = static_cast<pid_t>(syscall(SYS_gettid));
    volatile uint64_t n = 0;
    for (uint64_t i = 0; i < 200'000'000; ++i) n = n + i;
    spun = true;
    while (!listed) std::this_thread::yield();
  });
  while (!spun) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto threads = ThreadsCpu(getpid());
  listed = true;
  spinner.join();
  ASSERT_TRUE(threads.ok()) << threads.status();
  const ThreadCpu* spin = nullptr;
  const ThreadCpu* self = nullptr;
  for (const ThreadCpu& t : *threads) {
    if (t.tid == spinner_tid) spin = &t;
    if (t.tid == static_cast<pid_t>(syscall(SYS_gettid))) self = &t;
  }
  ASSERT_NE(spin, nullptr);
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(spin->name, "cv-test-spin");
  EXPECT_GT(spin->seconds, 0.05);  // 200 M additions
  EXPECT_LT(spin->seconds, 60);
  EXPECT_GT(self->seconds, 0);  // this thread has run (it spawned the spinner and read /proc)
  EXPECT_FALSE(ThreadsCpu(-1).ok());
}

TEST(TargetsTest, JsonAndText) {
  std::vector<TargetCheck> checks = {{"ratio", ">= 0.97", true}, {"cost", "< 0.1", false}};
  cli::JsonWriter w;
  w.BeginObject();
  WriteTargets(w, checks);
  w.EndObject();
  EXPECT_EQ(w.str(),
            "{\"targets\":[{\"figure\":\"ratio\",\"target\":\">= 0.97\",\"met\":true},"
            "{\"figure\":\"cost\",\"target\":\"< 0.1\",\"met\":false}],\"targets_met\":false}");
  EXPECT_EQ(TargetNote(checks, "ratio"), "(target >= 0.97: met)");
  EXPECT_EQ(TargetNote(checks, "cost"), "(target < 0.1: NOT MET)");
  EXPECT_EQ(TargetNote(checks, "other"), "");
}

}  // namespace
}  // namespace codecvisor::bench
