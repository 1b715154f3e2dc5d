// The faulty backend's crashes and shared-memory attacks, each kRuns times
// (fault_test_support.h), alone and beside innocent sessions on the same
// child: the host survives, every request returns correct frames or the
// documented error, and nothing leaks (checked in TearDown). Each test notes what it tried and
// saw in a FaultRow, for docs/RELIABILITY.md.

#include <atomic>
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
  if (fault == "hang") return "no answer within 1000 ms";
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
  options.request_timeout = std::chrono::milliseconds(fault == "hang" ? 1000 : 10'000);
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
  options.request_timeout = std::chrono::milliseconds(fault == "hang" ? 1000 : 10'000);
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
  const bool in_vendor_code =
      WaitUntil([&] { return StatusOf("faulty").control_call_in_vendor_code; }, std::chrono::milliseconds(1));
  const absl::Status poison = in_vendor_code ? (*culprit)->GetFrameAt(0).status() : absl::UnknownError("not asked");
  opener.join();
  ASSERT_TRUE(in_vendor_code) << "the slow open never reached vendor code";
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
  // What the conformance suite tells a vendor whose backend crashed.
  EXPECT_EQ(StatusOf("faulty").last_exit_advice,
            "for the crashing thread's backtrace, run with CODECVISOR_BACKEND_BACKTRACE=1");
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

}  // namespace
}  // namespace codecvisor::testing
