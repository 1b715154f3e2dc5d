// The faulty backend's process-level faults, each kRuns times (below): the host
// survives, every request returns correct frames or the documented error,
// and nothing leaks (checked in TearDown). Each test notes what it tried and
// saw in a FaultRow, for docs/RELIABILITY.md.

#include <signal.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/fault_test_support.h"

namespace codecvisor::testing {

using ::codecvisor::internal::BackendStatus;
using ::codecvisor::internal::VideoDecoder;
using ::codecvisor::internal::DecoderOptions;
namespace {

// How many times each fault is tried: a few in the regular suite, where
// core/supervisor_test.cc and core/blame_test.cc cover the state machine;
// 20 in fault_recovery_long_test, which tools/reliability_report.sh runs.
#ifndef CODECVISOR_FAULT_RUNS
#define CODECVISOR_FAULT_RUNS 3
#endif
constexpr int kRuns = CODECVISOR_FAULT_RUNS;

using OpenFn = std::function<absl::StatusOr<std::unique_ptr<VideoDecoder>>(const std::string&)>;

constexpr int kInnocents = 7;

// What one round saw: innocent sessions that got an error or a wrong
// frame, and whether the culprit's own check held.
struct Round {
  int innocents_failed = 0;
  bool culprit_ok = true;
};

// One round with 8 concurrent sessions on one backend: session 0 opens
// `culprit_video` and runs `culprit` (which reports its own failures and
// returns false for them); the other 7 open `good_video` and each fetch 12
// frames, all of which must be right.
Round RoundWithSevenInnocents(const OpenFn& open, const std::string& culprit_video, const std::string& good_video,
                              const std::function<bool(VideoDecoder&)>& culprit) {
  std::atomic<int> innocents_failed{0};
  std::atomic<bool> culprit_ok{true};
  std::vector<std::thread> threads;
  for (int t = 0; t <= kInnocents; ++t) {
    threads.emplace_back([&, t] {
      auto decoder = open(t == 0 ? culprit_video : good_video);
      if (!decoder.ok()) {
        ADD_FAILURE() << decoder.status();
        if (t == 0) {
          culprit_ok = false;
        } else {
          ++innocents_failed;
        }
        return;
      }
      if (t == 0) {
        if (!culprit(**decoder)) culprit_ok = false;
        return;
      }
      for (int64_t i = 0; i < 12; ++i) {
        auto f = (*decoder)->GetFrameAt((t + i) % 40);
        if (!f.ok() || !IsSyntheticFrame(*f, (t + i) % 40)) {
          ADD_FAILURE() << "session " << t << " frame " << i << ": " << f.status();
          ++innocents_failed;
          return;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  return Round{innocents_failed.load(), culprit_ok.load()};
}

// Notes a round's innocent sessions in `row`.
void SawInnocents(FaultRow& row, const Round& round) {
  row.Saw("innocent sessions with all 12 frames right", kInnocents - round.innocents_failed);
  if (round.innocents_failed > 0) row.Saw("innocent sessions with an ERROR or a WRONG frame", round.innocents_failed);
}

// What the poison message must name as the cause of death, by fault.
std::string ExpectedCause(const std::string& fault) {
  if (fault == "segfault") return "SIGSEGV";
  if (fault == "exit") return "exited with code 3";
  if (fault == "hang") return "no answer within 300 ms";
    // `alloc` allocates until the 512 MiB address-space limit: malloc fails,
    // abort, and the runner saw its address space full (sanitizer builds set
    // no such limit: their allocator fails it).
#ifndef CODECVISOR_SANITIZER
  if (fault == "alloc") return "SIGABRT) with its address space full (the memory_mb of its manifest)";
#endif
  return "SIGABRT";
}

class CrashFaultTest : public FaultTest, public ::testing::WithParamInterface<const char*> {};

// A request that kills the backend twice is poison: kAborted naming the
// backend, how it died, the file and the request. The next request works.
TEST_P(CrashFaultTest, PoisonRequestFailsClearlyAndTheNextOneWorks) {
  const std::string fault = GetParam();
  const std::string video = WriteSyntheticVideo("poison_" + fault + ".syn", "fault=" + fault + " fault_frame=7");
  DecoderOptions options;
  // Short for `hang`; long enough for the others to die of their own fault
  // first, even under a sanitizer.
  options.request_timeout = std::chrono::milliseconds(fault == "hang" ? 300 : 10'000);
  FaultRow& row = Row(fault + " on one frame, 1 session: the poison request, then a good one");
  auto decoder = Open(video, "faulty", options);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  const std::string cause = ExpectedCause(fault);
  for (int run = 0; run < kRuns; ++run) {
    ++row.tries;
    auto poison = (*decoder)->GetFrameAt(7);
    row.Saw("poison request " + CodeName(poison.status()));
    ASSERT_EQ(poison.status().code(), absl::StatusCode::kAborted) << "run " << run << ": " << poison.status();
    const std::string message(poison.status().message());
    const bool names_backend = message.find("backend 'faulty'") != std::string::npos;
    const bool names_file = message.find("poison_" + fault + ".syn") != std::string::npos;
    const bool names_frame = message.find("frame indices [7]") != std::string::npos;
    const bool names_cause = message.find(cause) != std::string::npos;
    EXPECT_TRUE(names_backend) << message;
    EXPECT_TRUE(names_file) << message;
    EXPECT_TRUE(names_frame) << message;
    EXPECT_TRUE(names_cause) << cause << " in: " << message;
    row.Saw(names_backend && names_file && names_frame && names_cause
                ? "its error names the backend, file, frame and '" + cause + "'"
                : "its error LACKS the backend, file, frame or '" + cause + "'");
    auto good = (*decoder)->GetFrameAt(6);
    row.Saw("next request " + FrameOutcome(good, 6));
    ASSERT_TRUE(good.ok()) << "run " << run << ": " << good.status();
    EXPECT_TRUE(IsSyntheticFrame(*good, 6));
  }
  const BackendStatus backend = StatusOf("faulty");
  row.Note(absl::StrCat(backend.restarts, " restarts, backend ", backend.state));
  EXPECT_EQ(backend.restarts, 2u * kRuns);
  EXPECT_EQ(backend.state, "ready");
}

// With 8 sessions on one backend process, one poison request costs the
// other seven a restart and a retry each, never an error or a wrong frame.
TEST_P(CrashFaultTest, InnocentConcurrentSessionsGetTheirFrames) {
  const std::string fault = GetParam();
  const std::string poison_video = WriteSyntheticVideo("c_poison_" + fault + ".syn", "fault=" + fault + " fault_frame=7");
  const std::string good_video = WriteSyntheticVideo("c_good_" + fault + ".syn", "fault=" + fault + " fault_frame=999");
  DecoderOptions options;
  options.request_timeout = std::chrono::milliseconds(fault == "hang" ? 300 : 10'000);
  const OpenFn open = [&](const std::string& video) { return Open(video, "faulty", options); };
  FaultRow& row = Row(fault + " on one frame, with 7 innocent sessions on the same child");
  for (int run = 0; run < kRuns; ++run) {
    ++row.tries;
    absl::Status poison = absl::UnknownError("never asked");
    const Round round = RoundWithSevenInnocents(open, poison_video, good_video, [&](VideoDecoder& d) {
      poison = d.GetFrameAt(7).status();
      return true;
    });
    row.Saw("poison request " + CodeName(poison));
    SawInnocents(row, round);
    ASSERT_EQ(round.innocents_failed, 0) << "run " << run;
    ASSERT_TRUE(round.culprit_ok) << "run " << run;
    EXPECT_TRUE(absl::IsAborted(poison)) << "run " << run << ": " << poison;
  }
  row.Note(absl::StrCat(StatusOf("faulty").restarts, " restarts"));
}

// Deaths while other sessions are inside slow vendor calls, by fault: how
// the poison request's error names the death, and how many restarts it
// costs.
struct BystanderCase {
  const char* fault;
  const char* cause;
  uint64_t restarts;
};

class BystanderTest : public FaultTest, public ::testing::WithParamInterface<BystanderCase> {};

// Sessions whose slow calls are in progress each time the poison request
// kills the backend are bystanders and get their frames.
// - exit() raises no signal, so for long it was blamed on every session
//   then inside vendor code. The sandbox now traps exit_group on the
//   calling thread and records it for that thread's call alone: two
//   deaths, each blaming the poison request only.
// - A fault on a plugin's own thread (FFmpeg's frame threads) names no
//   call: the first death makes all four requests suspects, each replays
//   alone, and the poison request, alone, dies twice more: three deaths.
//   Before suspects replayed alone, every slow session was blamed for both
//   deaths and failed as poison.
TEST_P(BystanderTest, SlowSessionsInsideVendorCodeGetTheirFrames) {
  const BystanderCase c = GetParam();
  const std::string fault = c.fault;
  constexpr int kSlowSessions = 3;
  constexpr int kExitRuns = 5;
  // The poison request sleeps 150 ms and dies; each slow frame takes
  // 600 ms, so the slow calls (started first, and replayed with the poison
  // request after each restart) are running when it dies.
  const std::string poison_video =
      WriteSyntheticVideo(fault + "_poison.syn", "fault=" + fault + " fault_frame=0 decode_ms=150");
  const std::string slow_video = WriteSyntheticVideo(fault + "_slow.syn", "decode_ms=600");
  DecoderOptions options;
  options.request_timeout = std::chrono::milliseconds(20'000);
  FaultRow& row = Row(fault + " on one frame while 3 sessions are inside slow vendor calls (600 ms a frame)");
  for (int run = 0; run < kExitRuns; ++run) {
    ++row.tries;
    auto culprit = Open(poison_video, "faulty", options);
    ASSERT_TRUE(culprit.ok()) << culprit.status();
    std::vector<std::unique_ptr<VideoDecoder>> slow;
    for (int i = 0; i < kSlowSessions; ++i) {
      auto d = Open(slow_video, "faulty", options);
      ASSERT_TRUE(d.ok()) << d.status();
      slow.push_back(*std::move(d));
    }
    const uint64_t restarts_before = StatusOf("faulty").restarts;
    std::atomic<int> slow_ok{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kSlowSessions; ++i) {
      threads.emplace_back([&, i] {
        auto f = slow[i]->GetFrameAt(i + 1);
        if (!f.ok() || !IsSyntheticFrame(*f, i + 1)) {
          ADD_FAILURE() << "slow session " << i << ": " << f.status();
          return;
        }
        ++slow_ok;
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the slow calls are under way
    const absl::Status poison = (*culprit)->GetFrameAt(0).status();
    for (auto& t : threads) t.join();
    row.Saw("poison request " + CodeName(poison));
    row.Saw("slow sessions with their frame right", slow_ok.load());
    if (slow_ok.load() < kSlowSessions) row.Saw("slow sessions with an ERROR or a WRONG frame", kSlowSessions - slow_ok.load());
    ASSERT_TRUE(absl::IsAborted(poison)) << "run " << run << ": " << poison;
    EXPECT_NE(poison.message().find(c.cause), std::string::npos) << poison;
    EXPECT_EQ(slow_ok.load(), kSlowSessions) << "run " << run;
    EXPECT_EQ(StatusOf("faulty").restarts - restarts_before, c.restarts) << "run " << run;
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, BystanderTest,
                         ::testing::Values(BystanderCase{"exit", "exited with code 3", 2},
                                           BystanderCase{"segfault_thread", "SIGSEGV", 3}),
                         [](const auto& info) { return std::string(info.param.fault); });

// A fault on a thread of the plugin's own (FFmpeg's frame threads are such
// threads) is in no vendor call, so the runner cannot say whose request it
// served. It used to be recorded on the control region as if the open in
// vendor code there at that moment had died of it: the open was blamed
// twice and failed as poison, and the request that really ran the thread
// was cleared. Now such a fault names no culprit: the open and the request
// are suspects, each replays alone, and only the request dies again.
TEST_F(FaultTest, AFaultOnAPluginsOwnThreadIsNotBlamedOnAnOpenInVendorCode) {
  const std::string crash_video = WriteSyntheticVideo("thread_crash.syn", "fault=segfault_thread fault_frame=0");
  const std::string slow_open_video = WriteSyntheticVideo("slow_open.syn", "open_ms=1500");
  FaultRow& row = Row("segfault on a plugin's own thread while another session's open is in vendor code");
  ++row.tries;
  auto culprit = Open(crash_video, "faulty");
  ASSERT_TRUE(culprit.ok()) << culprit.status();
  const uint64_t restarts_before = StatusOf("faulty").restarts;
  absl::Status slow_open;
  std::thread opener([&] { slow_open = Open(slow_open_video, "faulty").status(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the open is sleeping in vendor code
  const absl::Status poison = (*culprit)->GetFrameAt(0).status();
  opener.join();
  const uint64_t restarts = StatusOf("faulty").restarts - restarts_before;
  row.Saw("request " + CodeName(poison) + " after " + std::to_string(restarts) + " restarts");
  row.Saw("the concurrent open " + CodeName(slow_open));
  ASSERT_TRUE(absl::IsAborted(poison)) << poison;
  EXPECT_NE(poison.message().find("killed the backend twice"), std::string::npos) << poison;
  EXPECT_NE(poison.message().find("SIGSEGV"), std::string::npos) << poison;
  EXPECT_TRUE(slow_open.ok()) << slow_open;
  // The first death, with both suspected; then two with the request alone.
  EXPECT_EQ(restarts, 3u);
  EXPECT_NE(StatusOf("faulty").last_exit.find("SIGSEGV"), std::string::npos) << StatusOf("faulty").last_exit;
  auto fine = Open(WriteSyntheticVideo("after_thread_crash.syn"), "faulty");
  ASSERT_TRUE(fine.ok()) << fine.status();
  auto frame = (*fine)->GetFrameAt(3);
  ASSERT_TRUE(frame.ok()) << frame.status();
  EXPECT_TRUE(IsSyntheticFrame(*frame, 3));
}

#ifndef CODECVISOR_SANITIZER
INSTANTIATE_TEST_SUITE_P(Faults, CrashFaultTest, ::testing::Values("segfault", "abort", "exit", "hang", "alloc"));
#else
// Not `alloc`: sanitizer runtimes reserve terabytes of address space, so the
// address-space limit that stops it is not applied in sanitizer builds
// (core/README.md), and the fault would allocate until the machine's OOM
// killer. The plain build runs it.
INSTANTIATE_TEST_SUITE_P(Faults, CrashFaultTest, ::testing::Values("segfault", "abort", "exit", "hang"));
#endif

// A backend that writes garbage, impossible lengths or bad frame references
// into shared memory is killed and replaced; its request gets the error, or
// (for a scribble the host never had to read) correct frames. A garbage or
// oversized record is published and left there for the host to read, so
// it must end in the error.
bool MustFail(const std::string& fault) { return fault == "garbage" || fault == "oversized"; }

class ChannelAttackTest : public FaultTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(ChannelAttackTest, HostSurvivesAndReportsOrDeliversCorrectFrames) {
  const std::string fault = GetParam();
  const std::string video = WriteSyntheticVideo("attack_" + fault + ".syn", "fault=" + fault + " fault_frame=4");
  DecoderOptions options;
  options.request_timeout = std::chrono::milliseconds(2000);
  FaultRow& row = Row(fault + " in shared memory on one frame, 1 session: that request, then a good one");
  for (int run = 0; run < kRuns; ++run) {
    ++row.tries;
    auto decoder = Open(video, "faulty", options);
    ASSERT_TRUE(decoder.ok()) << decoder.status();
    auto f = (*decoder)->GetFrameAt(4);
    row.Saw("attacked request " + FrameOutcome(f, 4));
    if (f.ok()) {
      EXPECT_FALSE(MustFail(fault)) << "run " << run << ": the " << fault << " record never reached the host";
      EXPECT_TRUE(IsSyntheticFrame(*f, 4)) << "run " << run << ": a frame that arrives must be right";
    } else {
      EXPECT_EQ(f.status().code(), absl::StatusCode::kAborted) << "run " << run << ": " << f.status();
    }
    auto good = (*decoder)->GetFrameAt(3);
    row.Saw("next request " + FrameOutcome(good, 3));
    ASSERT_TRUE(good.ok()) << "run " << run << ": " << good.status();
    EXPECT_TRUE(IsSyntheticFrame(*good, 3));
  }
  row.Note(absl::StrCat(StatusOf("faulty").restarts, " restarts"));
}

// The attack with 7 innocent sessions alongside on the same child.
TEST_P(ChannelAttackTest, InnocentConcurrentSessionsGetTheirFrames) {
  const std::string fault = GetParam();
  const std::string attack_video = WriteSyntheticVideo("ca_" + fault + ".syn", "fault=" + fault + " fault_frame=4");
  const std::string good_video = WriteSyntheticVideo("cg_" + fault + ".syn");
  DecoderOptions options;
  options.request_timeout = std::chrono::milliseconds(2000);
  const OpenFn open = [&](const std::string& video) { return Open(video, "faulty", options); };
  FaultRow& row = Row(fault + " in shared memory on one frame, with 7 innocent sessions on the same child");
  for (int run = 0; run < kRuns; ++run) {
    ++row.tries;
    std::string attacked = "never asked";
    const Round round = RoundWithSevenInnocents(open, attack_video, good_video, [&](VideoDecoder& d) {
      auto f = d.GetFrameAt(4);
      attacked = FrameOutcome(f, 4);
      if (f.ok() ? (MustFail(fault) || !IsSyntheticFrame(*f, 4)) : !absl::IsAborted(f.status())) {
        ADD_FAILURE() << "attacker: " << f.status();
        return false;
      }
      return true;
    });
    row.Saw("attacked request " + attacked);
    SawInnocents(row, round);
    ASSERT_EQ(round.innocents_failed, 0) << "run " << run;
    ASSERT_TRUE(round.culprit_ok) << "run " << run;
  }
  row.Note(absl::StrCat(StatusOf("faulty").restarts, " restarts"));
}

INSTANTIATE_TEST_SUITE_P(Attacks, ChannelAttackTest, ::testing::Values("garbage", "oversized", "scribble"));

// A backend that hangs on every frame, or already in open, is killed at the
// deadline each time; the request (or open) is poison after two, and the
// host stays responsive.
TEST_F(FaultTest, HangForeverIsKilledAtTheDeadline) {
  DecoderOptions options;
  options.request_timeout = std::chrono::milliseconds(300);
  options.open_timeout = std::chrono::milliseconds(500);
  const std::string every = WriteSyntheticVideo("hang_all.syn", "fault=hang");
  const std::string open = WriteSyntheticVideo("hang_open.syn", "fault=hang_open");
  FaultRow& in_decode = Row("hang forever on every frame (request deadline 300 ms)");
  FaultRow& in_open = Row("hang forever in open (open deadline 500 ms), then a good open");
  for (int run = 0; run < kRuns; ++run) {
    ++in_decode.tries;
    auto decoder = Open(every, "faulty", options);
    ASSERT_TRUE(decoder.ok()) << decoder.status();
    auto f = (*decoder)->GetFrameAt(run % 40);
    const bool at_deadline = f.status().message().find("no answer within 300 ms") != std::string::npos;
    in_decode.Saw("request " + CodeName(f.status()) + (at_deadline ? ", killed at the 300 ms deadline" : ""));
    ASSERT_EQ(f.status().code(), absl::StatusCode::kAborted) << "run " << run << ": " << f.status();
    EXPECT_TRUE(at_deadline) << f.status();
    ++in_open.tries;
    auto hung = Open(open, "faulty", options);
    const bool poison =
        hung.status().message().find("opening the file killed the backend twice") != std::string::npos;
    const bool open_deadline = hung.status().message().find("no answer within 500 ms") != std::string::npos;
    in_open.Saw("open " + CodeName(hung.status()) + (poison ? ", poison after 2 kills at the deadline" : "") +
                (open_deadline ? " (500 ms, the open deadline)" : ""));
    ASSERT_EQ(hung.status().code(), absl::StatusCode::kAborted) << "run " << run << ": " << hung.status();
    EXPECT_TRUE(poison) << hung.status();
    EXPECT_TRUE(open_deadline) << hung.status();
    EXPECT_NE(hung.status().message().find("a longer open_timeout, or approximate mode"), std::string::npos)
        << hung.status();
    auto fine = Open(WriteSyntheticVideo("after_hang.syn"), "faulty");
    in_open.Saw("next open " + CodeName(fine.status()));
    ASSERT_TRUE(fine.ok()) << fine.status();
    auto frame = (*fine)->GetFrameAt(1);
    in_open.Saw("its request " + FrameOutcome(frame, 1));
    ASSERT_TRUE(frame.ok());  // and a success restores the restart budget
  }
}

// This process's resident memory, from /proc/self/status.
size_t SelfRssKb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  }
  return 0;
}

// The layout an open answers with sizes the session's shared memory, which
// the host maps and fills: a plane outside its frame, or a frame of a
// gigabyte for a 32x24 stream (a QA plugin made the host commit 4 GiB per
// decoder so), is a protocol violation caught before any memory is made.
TEST_F(FaultTest, BadFrameLayoutIsAProtocolViolationNotACrash) {
  for (const char* fault : {"badref", "huge_layout"}) {
    const std::string video = WriteSyntheticVideo(absl::StrCat(fault, ".syn"), absl::StrCat("fault=", fault));
    FaultRow& row = Row(absl::StrCat("frame layout of the open's answer: ", fault));
    ++row.tries;
    const size_t rss_before = SelfRssKb();
    auto decoder = Open(video, "faulty");
    row.Saw("open " + CodeName(decoder.status()));
    ASSERT_EQ(decoder.status().code(), absl::StatusCode::kAborted) << fault << ": " << decoder.status();
    EXPECT_NE(decoder.status().message().find("malformed message: the backend's frame layout (32x24, "),
              std::string::npos)
        << decoder.status();
    EXPECT_LT(SelfRssKb(), rss_before + 64 * 1024) << fault << ": the host made the layout's memory";
  }
  auto fine = Open(WriteSyntheticVideo("after_layout.syn"), "faulty");
  ASSERT_TRUE(fine.ok()) << fine.status();
  EXPECT_TRUE((*fine)->GetFrameAt(3).ok());
}

// Stream numbers no stream can have (an infinite duration) fail the open,
// but they may be a crafted file's header passed on by an honest backend:
// the backend is not replaced.
TEST_F(FaultTest, ImpossibleStreamNumbersFailTheOpenNotTheBackend) {
  FaultRow& row = Row("stream metadata with an infinite duration");
  ++row.tries;
  auto warm = Open(WriteSyntheticVideo("warm.syn"), "faulty");
  ASSERT_TRUE(warm.ok()) << warm.status();
  const pid_t pid = StatusOf("faulty").pid;
  auto decoder = Open(WriteSyntheticVideo("inf.syn", "fault=inf_duration"), "faulty");
  row.Saw("open " + CodeName(decoder.status()));
  ASSERT_EQ(decoder.status().code(), absl::StatusCode::kDataLoss) << decoder.status();
  EXPECT_NE(decoder.status().message().find("duration_seconds inf is not a finite number"), std::string::npos)
      << decoder.status();
  EXPECT_EQ(StatusOf("faulty").pid, pid) << "the backend was replaced";
  EXPECT_EQ(StatusOf("faulty").restarts, 0u);
  EXPECT_TRUE((*warm)->GetFrameAt(2).ok());
}

// A request whose first answer takes longer than request_timeout is hung
// only if the backend stops working: one that keeps a core busy (frame
// 12,999 of a file with one key frame decodes all 13,000 first) gets more
// time, up to ten timeouts; one that sleeps is killed at the first. A QA
// run had a valid long-GOP file called poison, and the backend quarantined.
TEST_F(FaultTest, ABackendStillDecodingPastTheDeadlineIsGivenTime) {
  DecoderOptions options;
  options.request_timeout = std::chrono::milliseconds(400);
  FaultRow& row = Row("a frame that takes 3 request timeouts of CPU to decode");
  ++row.tries;
  auto busy = Open(WriteSyntheticVideo("busy.syn", "frames=5 busy_ms=1200"), "faulty", options);
  ASSERT_TRUE(busy.ok()) << busy.status();
  const pid_t pid = StatusOf("faulty").pid;
  absl::StatusOr<Frame> f = (*busy)->GetFrameAt(2);
  row.Saw("the frame: " + FrameOutcome(f, 2));
  EXPECT_TRUE(f.ok() && IsSyntheticFrame(*f, 2)) << FrameOutcome(f, 2);
  EXPECT_EQ(StatusOf("faulty").pid, pid) << "the backend was killed";
  EXPECT_EQ((*busy)->retries(), 0u);

  FaultRow& forever = Row("a frame whose decode keeps a core busy for ever");
  ++forever.tries;
  options.request_timeout = std::chrono::milliseconds(200);
  auto spinning = Open(WriteSyntheticVideo("spinning.syn", "frames=5 busy_ms=60000"), "faulty", options);
  ASSERT_TRUE(spinning.ok()) << spinning.status();
  absl::StatusOr<Frame> never = (*spinning)->GetFrameAt(2);
  forever.Saw("the request: " + CodeName(never.status()));
  ASSERT_FALSE(never.ok());
  EXPECT_EQ(never.status().code(), absl::StatusCode::kAborted) << never.status();
  EXPECT_NE(never.status().message().find("no answer within 200 ms"), std::string::npos) << never.status();
  EXPECT_NE(never.status().message().find("ms it was given beyond that, and never answered"), std::string::npos)
      << never.status();
}

// A frame described as another than the one asked for (a vendor's
// off-by-one) would go out under the wrong index with its times: the
// request fails saying so, and the backend, which is only wrong, is kept.
TEST_F(FaultTest, AFrameDescribedAsAnotherFailsItsRequest) {
  FaultRow& row = Row("decode_frame describing frame 5 as frame 6");
  ++row.tries;
  auto decoder = Open(WriteSyntheticVideo("wrong_index.syn", "fault=wrong_index fault_frame=5"), "faulty");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  const pid_t pid = StatusOf("faulty").pid;
  absl::StatusOr<Frame> f = (*decoder)->GetFrameAt(5);
  row.Saw("frame 5: " + CodeName(f.status()));
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("decode_frame for frame 5 described frame 6"), std::string::npos) << f.status();
  auto frames = (*decoder)->GetFramesInRange(3, 8);
  EXPECT_FALSE(frames.ok()) << "a range holding frame 5";
  absl::StatusOr<Frame> fine = (*decoder)->GetFrameAt(4);
  EXPECT_TRUE(fine.ok() && IsSyntheticFrame(*fine, 4)) << FrameOutcome(fine, 4);
  EXPECT_EQ(StatusOf("faulty").pid, pid) << "the backend was replaced";
  EXPECT_EQ(StatusOf("faulty").restarts, 0u);
  // A plugin that never sets the index (built when nothing read it) still
  // works: the runner fills it in with the index asked for.
  auto untouched = Open(WriteSyntheticVideo("index_untouched.syn", "fault=index_untouched"), "faulty");
  ASSERT_TRUE(untouched.ok()) << untouched.status();
  auto all = (*untouched)->GetFramesInRange(0, 6);
  ASSERT_TRUE(all.ok()) << all.status();
  for (int64_t i = 0; i < 6; ++i) EXPECT_TRUE(IsSyntheticFrame((*all)[i], i)) << i;
}

// A caller whose own timeout is shorter than a request takes gets each
// such request killed twice and called poison, but it is the caller's
// choice, not a broken backend: however many in a row, the backend every
// decoder shares is never quarantined, and a decoder with the default
// timeout goes on being served.
TEST_F(FaultTest, ACallersShortTimeoutNeverQuarantinesTheBackend) {
  FaultRow& row = Row("hang under a caller's 300 ms request_timeout, 10 requests in a row (8 poison allowed)");
  DecoderOptions hasty;
  hasty.request_timeout = std::chrono::milliseconds(300);
  auto decoder = Open(WriteSyntheticVideo("hasty.syn", "fault=hang fault_frame=3"), "faulty", hasty);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  for (int request = 0; request < 10; ++request) {
    ++row.tries;
    auto frame = (*decoder)->GetFrameAt(3);
    row.Saw("request " + CodeName(frame.status()));
    ASSERT_EQ(frame.status().code(), absl::StatusCode::kAborted) << request << ": " << frame.status();
    EXPECT_NE(frame.status().message().find("no answer within 300 ms"), std::string::npos) << frame.status();
  }
  row.Note("backend " + StatusOf("faulty").state);
  EXPECT_NE(StatusOf("faulty").state, "quarantined");
  auto patient = Open(WriteSyntheticVideo("patient.syn"), "faulty");
  ASSERT_TRUE(patient.ok()) << patient.status();
  auto frame = (*patient)->GetFrameAt(3);
  row.Saw("another decoder, default timeout: " + FrameOutcome(frame, 3));
  ASSERT_TRUE(frame.ok()) << frame.status();
  EXPECT_TRUE(IsSyntheticFrame(*frame, 3));
}

TEST_F(FaultTest, CrashLoopIsQuarantinedUntilReset) {
  // faulty.toml allows 5 restarts a minute and 8 poison requests in a row
  // (the default). Every open segfaults, twice each, so every open is
  // poison and no success ever comes between: the crash after the 8th
  // verdict quarantines, and the open it was part of says so.
  const std::string video = WriteSyntheticVideo("loop.syn", "fault=segfault_open");
  FaultRow& row = Row("segfault in every open: a crash loop (8 poison opens in a row allowed)");
  absl::Status last;
  int opens = 0;
  for (; opens < 12 && !absl::IsFailedPrecondition(last); ++opens) {
    ++row.tries;
    last = Open(video, "faulty").status();
    row.Saw("open " + CodeName(last));
  }
  const bool quarantined =
      last.message().find("quarantined: it crashed again once 8 requests or opens in a row within 60 s were poison") != std::string::npos;
  row.Note(absl::StrCat("backend ", StatusOf("faulty").state, quarantined ? " after 8 poison opens" : ""));
  ASSERT_EQ(last.code(), absl::StatusCode::kFailedPrecondition) << last;
  EXPECT_EQ(opens, 9) << "8 poison opens of 2 crashes each, then the one whose crash quarantines";
  EXPECT_TRUE(quarantined) << last;
  EXPECT_NE(last.message().find("Host::ResetBackend(\"faulty\")"), std::string::npos) << last;
  EXPECT_EQ(StatusOf("faulty").state, "quarantined");
  // Other backends are untouched.
  auto other = Open(WriteSyntheticVideo("fine.syn"), "synthetic");
  row.Note("another backend meanwhile: open " + CodeName(other.status()));
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE(host_->ResetBackend("faulty").ok());
  EXPECT_EQ(StatusOf("faulty").state, "discovered");
  auto fine = Open(WriteSyntheticVideo("fine2.syn"), "faulty");
  row.Note("after the reset: open " + CodeName(fine.status()));
  ASSERT_TRUE(fine.ok()) << fine.status();
}

// Bad files one after another (a folder of broken downloads in a
// dataset): each is poison, and the next good file still decodes. Six
// crashes in a few milliseconds, past faulty.toml's 5 a minute, but each
// pair was judged poison and left the budget.
TEST_F(FaultTest, PoisonFilesInARowDoNotStopTheBackend) {
  FaultRow& row = Row("segfault on frame 0 of 4 files in a row, then a good file");
  for (int file = 0; file < 4; ++file) {
    ++row.tries;
    auto decoder = Open(WriteSyntheticVideo(absl::StrCat("bad_", file, ".syn"), "fault=segfault fault_frame=0"),
                        "faulty");
    ASSERT_TRUE(decoder.ok()) << decoder.status();
    auto frame = (*decoder)->GetFrameAt(0);
    row.Saw("poison request " + CodeName(frame.status()));
    ASSERT_TRUE(absl::IsAborted(frame.status())) << "file " << file << ": " << frame.status();
  }
  EXPECT_NE(StatusOf("faulty").state, "quarantined");
  EXPECT_EQ(StatusOf("faulty").restarts, 8u);
  auto good = Open(WriteSyntheticVideo("good_after.syn"), "faulty");
  ASSERT_TRUE(good.ok()) << good.status();
  auto frame = (*good)->GetFrameAt(3);
  row.Saw("then a good file: " + FrameOutcome(frame, 3));
  ASSERT_TRUE(frame.ok()) << frame.status();
  EXPECT_TRUE(IsSyntheticFrame(*frame, 3));
}

TEST_F(FaultTest, PoisonOpenFailsClearly) {
  const std::string video = WriteSyntheticVideo("open_poison.syn", "fault=segfault_open");
  FaultRow& row = Row("segfault in open, then a good open");
  ++row.tries;
  auto decoder = Open(video, "faulty");
  const std::string message(decoder.status().message());
  const bool poison = message.find("opening the file killed the backend twice") != std::string::npos &&
                      message.find("SIGSEGV") != std::string::npos;
  row.Saw("open " + CodeName(decoder.status()) + (poison ? ", poison after 2 SIGSEGVs" : ""));
  ASSERT_EQ(decoder.status().code(), absl::StatusCode::kAborted) << decoder.status();
  EXPECT_NE(message.find("opening the file killed the backend twice"), std::string::npos) << decoder.status();
  EXPECT_NE(message.find("SIGSEGV"), std::string::npos) << decoder.status();
  auto fine = Open(WriteSyntheticVideo("after.syn"), "faulty");
  row.Saw("next open " + CodeName(fine.status()));
  ASSERT_TRUE(fine.ok()) << fine.status();
}

}  // namespace
}  // namespace codecvisor::testing
