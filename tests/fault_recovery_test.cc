// The faulty backend's process-level faults, each 20 times: the host
// survives, every request returns correct frames or the documented error,
// and nothing leaks (checked in TearDown).

#include <signal.h>

#include <atomic>
#include <functional>
#include <thread>

#include "tests/fault_test_support.h"

namespace codecvisor::testing {
namespace {

constexpr int kRuns = 20;

using OpenFn = std::function<absl::StatusOr<std::unique_ptr<VideoDecoder>>(const std::string&)>;

// One round with 8 concurrent sessions on one backend: session 0 opens
// `culprit_video` and runs `culprit` (which reports its own failures and
// returns false for them); the other 7 open `good_video` and each fetch 12
// frames, all of which must be right. Returns the number of sessions that
// went wrong.
int RoundWithSevenInnocents(const OpenFn& open, const std::string& culprit_video, const std::string& good_video,
                            const std::function<bool(VideoDecoder&)>& culprit) {
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto decoder = open(t == 0 ? culprit_video : good_video);
      if (!decoder.ok()) {
        ADD_FAILURE() << decoder.status();
        ++bad;
        return;
      }
      if (t == 0) {
        if (!culprit(**decoder)) ++bad;
        return;
      }
      for (int64_t i = 0; i < 12; ++i) {
        auto f = (*decoder)->GetFrameAt((t + i) % 40);
        if (!f.ok() || !IsSyntheticFrame(*f, (t + i) % 40)) {
          ADD_FAILURE() << "session " << t << " frame " << i << ": " << f.status();
          ++bad;
          return;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  return bad.load();
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
  auto decoder = Open(video, "faulty", options);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  for (int run = 0; run < kRuns; ++run) {
    auto poison = (*decoder)->GetFrameAt(7);
    ASSERT_EQ(poison.status().code(), absl::StatusCode::kAborted) << "run " << run << ": " << poison.status();
    const std::string message(poison.status().message());
    EXPECT_NE(message.find("backend 'faulty'"), std::string::npos) << message;
    EXPECT_NE(message.find("poison_" + fault + ".syn"), std::string::npos) << message;
    EXPECT_NE(message.find("frame indices [7]"), std::string::npos) << message;
    if (fault == "segfault") EXPECT_NE(message.find("SIGSEGV"), std::string::npos) << message;
    if (fault == "abort") EXPECT_NE(message.find("SIGABRT"), std::string::npos) << message;
    if (fault == "exit") EXPECT_NE(message.find("exited with code 3"), std::string::npos) << message;
    if (fault == "hang") EXPECT_NE(message.find("no answer within 300 ms"), std::string::npos) << message;
    // Allocating until the 512 MiB address-space limit: malloc fails, abort.
    if (fault == "alloc") EXPECT_NE(message.find("SIGABRT"), std::string::npos) << message;
    auto good = (*decoder)->GetFrameAt(6);
    ASSERT_TRUE(good.ok()) << "run " << run << ": " << good.status();
    EXPECT_TRUE(IsSyntheticFrame(*good, 6));
  }
  EXPECT_EQ(StatusOf("faulty").restarts, 2u * kRuns);
  EXPECT_EQ(StatusOf("faulty").state, "ready");
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
  for (int run = 0; run < kRuns; ++run) {
    int poisoned = 0;
    const int bad = RoundWithSevenInnocents(open, poison_video, good_video, [&](VideoDecoder& d) {
      if (absl::IsAborted(d.GetFrameAt(7).status())) ++poisoned;
      return true;
    });
    ASSERT_EQ(bad, 0) << "run " << run;
    EXPECT_EQ(poisoned, 1) << "run " << run;
  }
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
// (for a scribble the host never had to read) correct frames.
class ChannelAttackTest : public FaultTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(ChannelAttackTest, HostSurvivesAndReportsOrDeliversCorrectFrames) {
  const std::string fault = GetParam();
  const std::string video = WriteSyntheticVideo("attack_" + fault + ".syn", "fault=" + fault + " fault_frame=4");
  DecoderOptions options;
  options.request_timeout = std::chrono::milliseconds(2000);
  for (int run = 0; run < kRuns; ++run) {
    auto decoder = Open(video, "faulty", options);
    ASSERT_TRUE(decoder.ok()) << decoder.status();
    auto f = (*decoder)->GetFrameAt(4);
    if (f.ok()) {
      EXPECT_TRUE(IsSyntheticFrame(*f, 4)) << "run " << run << ": a frame that arrives must be right";
    } else {
      EXPECT_EQ(f.status().code(), absl::StatusCode::kAborted) << "run " << run << ": " << f.status();
    }
    auto good = (*decoder)->GetFrameAt(3);
    ASSERT_TRUE(good.ok()) << "run " << run << ": " << good.status();
    EXPECT_TRUE(IsSyntheticFrame(*good, 3));
  }
}

// The attack with 7 innocent sessions alongside on the same child.
TEST_P(ChannelAttackTest, InnocentConcurrentSessionsGetTheirFrames) {
  const std::string fault = GetParam();
  const std::string attack_video = WriteSyntheticVideo("ca_" + fault + ".syn", "fault=" + fault + " fault_frame=4");
  const std::string good_video = WriteSyntheticVideo("cg_" + fault + ".syn");
  DecoderOptions options;
  options.request_timeout = std::chrono::milliseconds(2000);
  const OpenFn open = [&](const std::string& video) { return Open(video, "faulty", options); };
  for (int run = 0; run < kRuns; ++run) {
    const int bad = RoundWithSevenInnocents(open, attack_video, good_video, [](VideoDecoder& d) {
      auto f = d.GetFrameAt(4);
      if (f.ok() ? !IsSyntheticFrame(*f, 4) : !absl::IsAborted(f.status())) {
        ADD_FAILURE() << "attacker: " << f.status();
        return false;
      }
      return true;
    });
    ASSERT_EQ(bad, 0) << "run " << run;
  }
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
  for (int run = 0; run < kRuns; ++run) {
    auto decoder = Open(every, "faulty", options);
    ASSERT_TRUE(decoder.ok()) << decoder.status();
    auto f = (*decoder)->GetFrameAt(run % 40);
    ASSERT_EQ(f.status().code(), absl::StatusCode::kAborted) << "run " << run << ": " << f.status();
    EXPECT_NE(f.status().message().find("no answer within 300 ms"), std::string::npos) << f.status();
    auto hung = Open(open, "faulty", options);
    ASSERT_EQ(hung.status().code(), absl::StatusCode::kAborted) << "run " << run << ": " << hung.status();
    EXPECT_NE(hung.status().message().find("opening the file killed the backend twice"), std::string::npos)
        << hung.status();
    auto fine = Open(WriteSyntheticVideo("after_hang.syn"), "faulty");
    ASSERT_TRUE(fine.ok()) << fine.status();
    ASSERT_TRUE((*fine)->GetFrameAt(1).ok());  // and a success restores the restart budget
  }
}

TEST_F(FaultTest, BadFrameLayoutIsAProtocolViolationNotACrash) {
  const std::string video = WriteSyntheticVideo("badref.syn", "fault=badref");
  DecoderOptions options;
  options.request_timeout = std::chrono::milliseconds(2000);
  auto decoder = Open(video, "faulty", options);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  auto f = (*decoder)->GetFrameAt(0);
  ASSERT_EQ(f.status().code(), absl::StatusCode::kAborted) << f.status();
  EXPECT_NE(f.status().message().find("malformed"), std::string::npos) << f.status();
}

// The request in flight when the backend is killed from outside is
// re-issued: the caller gets all 40 frames once, in order, bit-identical.
TEST_F(FaultTest, RequestInFlightIsReplayedAfterAnOutsideKill) {
  for (bool warm_spare : {false, true}) {
    options_.supervision.warm_spare = warm_spare;
    StartHost();
    const std::string video = WriteSyntheticVideo("replay.syn");
    auto decoder = Open(video, "synthetic");
    ASSERT_TRUE(decoder.ok()) << decoder.status();
    int64_t next = 0;
    absl::Status s = (*decoder)->ForEachFrame({ipc::IndexRange{0, 40, 1}}, [&](Frame f) {
      if (!IsSyntheticFrame(f, next)) return absl::InternalError("wrong frame " + std::to_string(next));
      if (++next == 15) kill(StatusOf("synthetic").pid, SIGKILL);
      return absl::OkStatus();
    });
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(next, 40);
    EXPECT_EQ(StatusOf("synthetic").restarts, 1u);
    EXPECT_EQ((*decoder)->retries(), 1u);
    EXPECT_NE(StatusOf("synthetic").last_exit.find("SIGKILL"), std::string::npos) << StatusOf("synthetic").last_exit;
  }
}

TEST_F(FaultTest, CrashLoopIsQuarantinedUntilReset) {
  // faulty.toml allows 5 restarts a minute. Every open segfaults, so no
  // success ever restores the budget: the 6th crash quarantines.
  const std::string video = WriteSyntheticVideo("loop.syn", "fault=segfault_open");
  absl::Status last;
  int opens = 0;
  for (; opens < 10 && !absl::IsFailedPrecondition(last); ++opens) last = Open(video, "faulty").status();
  ASSERT_EQ(last.code(), absl::StatusCode::kFailedPrecondition) << last;
  EXPECT_EQ(opens, 4) << "3 poison opens of 2 crashes each, then the quarantine error";
  EXPECT_NE(last.message().find("quarantined after 6 crashes"), std::string::npos) << last;
  EXPECT_NE(last.message().find("codecvisor backends --reset faulty"), std::string::npos) << last;
  EXPECT_EQ(StatusOf("faulty").state, "quarantined");
  // Other backends are untouched.
  auto other = Open(WriteSyntheticVideo("fine.syn"), "synthetic");
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE(host_->ResetBackend("faulty").ok());
  EXPECT_EQ(StatusOf("faulty").state, "discovered");
  auto fine = Open(WriteSyntheticVideo("fine2.syn"), "faulty");
  ASSERT_TRUE(fine.ok()) << fine.status();
}

TEST_F(FaultTest, PoisonOpenFailsClearly) {
  const std::string video = WriteSyntheticVideo("open_poison.syn", "fault=segfault_open");
  auto decoder = Open(video, "faulty");
  ASSERT_EQ(decoder.status().code(), absl::StatusCode::kAborted) << decoder.status();
  EXPECT_NE(decoder.status().message().find("opening the file killed the backend twice"), std::string::npos)
      << decoder.status();
  EXPECT_NE(decoder.status().message().find("SIGSEGV"), std::string::npos) << decoder.status();
  auto fine = Open(WriteSyntheticVideo("after.syn"), "faulty");
  ASSERT_TRUE(fine.ok()) << fine.status();
}

}  // namespace
}  // namespace codecvisor::testing
