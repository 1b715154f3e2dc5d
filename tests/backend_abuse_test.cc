// Plugins that abuse what the sandbox leaves them, from the faulty test
// backend: frame records forged into the response ring, memory that no
// mapping accounts for (memfds filled with fallocate), and opens that
// answer "out of resources". The host accepts only what it asked for,
// charges every page to the backend's limit, and answers within seconds;
// each attempt is a row of docs/RELIABILITY.md.

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/fault_test_support.h"

namespace codecvisor::testing {
namespace {

// Starts a host with the faulty backend alone, under a manifest whose
// tables are `tables` (TOML after the top-level keys).
void StartHostWithFaulty(const HostOptions& options, std::unique_ptr<Host>* host, const std::string& tables) {
  host->reset();
  auto created = Host::Create(options);
  ASSERT_TRUE(created.ok()) << created.status();
  *host = *std::move(created);
  const std::string manifest = WriteFile("faulty_with_config.toml",
                                         absl::StrCat("name = 'faulty'\ndevices = ['faulty']\nlibrary = '",
                                                      Runfile("backends/testing/libcodecvisor_faulty.so"),
                                                      "'\nentry = 'codecvisor_backend_v1'\nabi_version = 1\n", tables));
  ASSERT_TRUE((*host)->LoadBackend(manifest).ok());
}

// Forged frame records: from inside decode_frame of a request's second
// frame, the plugin appends well-formed records of its own to the response
// ring (backends/testing/forger.h): the second frame under stream index
// 1000, the true second frame plus a third nobody asked for, or batches
// with no frame that never end the answer, sent more often than the
// request timeout (each one reset the wait: the call hung for good). The host
// accepts only the frames it asked for, in number, order and index; any
// other record replaces the backend and blames the request, which is
// poison when the replay forges again. The caller never receives a frame
// under an index it did not ask for.
class ForgeryTest : public FaultTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(ForgeryTest, OnlyTheRequestedFramesAreAccepted) {
  const std::string fault = GetParam();
  const std::string video = WriteSyntheticVideo("forge_" + fault + ".syn", "fault=" + fault + " fault_frame=1");
  DecoderOptions options;
  options.request_timeout = std::chrono::milliseconds(2000);
  FaultRow& row = Row(fault + ": forged frame records for a two-frame request, then a good request");
  for (int run = 0; run < 3; ++run) {
    ++row.tries;
    auto decoder = Open(video, "faulty", options);
    ASSERT_TRUE(decoder.ok()) << decoder.status();
    const int64_t indices[] = {0, 1};
    auto frames = (*decoder)->GetFramesAt(indices);
    if (frames.ok()) {
      std::string got;
      for (const Frame& f : *frames) got += " " + std::to_string(f.index());
      row.Saw("forgery ACCEPTED: frames" + got);
      ADD_FAILURE() << "run " << run << ": the host accepted frames" << got << " for a request of 0, 1";
    } else {
      row.Saw("forged request " + CodeName(frames.status()));
      EXPECT_EQ(frames.status().code(), absl::StatusCode::kAborted) << frames.status();
      EXPECT_NE(frames.status().message().find("poison"), absl::string_view::npos) << frames.status();
    }
    auto good = (*decoder)->GetFrameAt(0);
    row.Saw("next request " + FrameOutcome(good, 0));
    ASSERT_TRUE(good.ok()) << "run " << run << ": " << good.status();
    EXPECT_TRUE(IsSyntheticFrame(*good, 0));
  }
  row.Note(absl::StrCat(StatusOf("faulty").restarts, " restarts"));
}

INSTANTIATE_TEST_SUITE_P(Forgeries, ForgeryTest, ::testing::Values("forge_index", "forge_count", "forge_empty"));

// Memory no mapping accounts for: the faulty backend fills memfds with
// fallocate up to 2 GiB, four times its manifest's memory_mb (512), and
// exits with code 42 if it got it all. RLIMIT_AS never sees such memory;
// the backend's memory cgroup charges every page, so the kernel stops the
// hog (the fallocate fails, or the cgroup's OOM killer ends the process)
// long before 2 GiB.
TEST_F(FaultTest, MemfdsFilledWithFallocateAreChargedToTheBackendsMemoryLimit) {
  FaultRow& row = Row("memfd_hog: 2 GiB of memfds filled with fallocate, memory_mb 512");
  DecoderOptions options;
  options.request_timeout = std::chrono::milliseconds(3000);
  auto decoder = Open(WriteSyntheticVideo("hog.syn", "fault=memfd_hog fault_frame=2"), "faulty", options);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  ++row.tries;
  auto frame = (*decoder)->GetFrameAt(2);
  row.Saw("hog request " + FrameOutcome(frame, 2));
  const BackendStatus after = StatusOf("faulty");
  row.Note("last exit: " + (after.last_exit.empty() ? std::string("none") : after.last_exit));
  EXPECT_EQ(after.last_exit.find("exited with code 42"), std::string::npos) << "the hog held 2 GiB";
  // Each replay meets the limit again: the OOM kills are the plugin's
  // doing, and the restart budget quarantines it, saying why.
  ASSERT_FALSE(frame.ok());
  EXPECT_NE(frame.status().message().find("out of memory (over the memory_mb of its manifest)"),
            absl::string_view::npos)
      << frame.status();
  // The host lives on, and the backend serves again once reset.
  ASSERT_TRUE(host_->ResetBackend("faulty").ok());
  auto good = (*decoder)->GetFrameAt(1);
  row.Saw("after a reset, request " + FrameOutcome(good, 1));
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_TRUE(IsSyntheticFrame(*good, 1));
}

// A backend whose open answers "out of resources" (as the runner does when
// a plugin has used up the threads it may start) is replaced, and the open
// tried on a fresh process; an open that exhausts every process is poison.
// Either way the caller hears within seconds, not after the open timeout.
TEST_F(FaultTest, AnOpenOutOfResourcesReplacesTheBackendInsteadOfWaitingOutTheTimeout) {
  FaultRow& row = Row("open answered 'out of resources' every time, open timeout 60 s");
  DecoderOptions options;
  options.open_timeout = std::chrono::seconds(60);
  ++row.tries;
  const auto start = std::chrono::steady_clock::now();
  auto decoder = Open(WriteSyntheticVideo("exhausted.syn", "fault=exhausted_open"), "faulty", options);
  const auto took = std::chrono::steady_clock::now() - start;
  row.Saw("open " + CodeName(decoder.status()));
  ASSERT_FALSE(decoder.ok());
  EXPECT_EQ(decoder.status().code(), absl::StatusCode::kAborted) << decoder.status();
  EXPECT_NE(decoder.status().message().find("out of resources"), absl::string_view::npos) << decoder.status();
  EXPECT_NE(decoder.status().message().find("poison"), absl::string_view::npos) << decoder.status();
  // Nothing crashed: the verdict names the limits the open did not fit in.
  EXPECT_NE(decoder.status().message().find("opening the file exhausted the backend twice, nothing crashed"),
            absl::string_view::npos)
      << decoder.status();
  EXPECT_NE(decoder.status().message().find("[sandbox] memory_mb = "), absl::string_view::npos) << decoder.status();
  EXPECT_EQ(StatusOf("faulty").restarts, 2) << "each exhausted open replaces the process";
  // A generous bound next to the 60 s the old retry loop spent: the three
  // attempts wait 0.5 s each, plus two restarts.
  EXPECT_LT(took, std::chrono::seconds(30));
  row.Note(absl::StrCat(StatusOf("faulty").restarts, " restarts"));
  // The backend serves other files on.
  ++row.tries;
  auto good = Open(WriteSyntheticVideo("after_exhausted.syn"), "faulty", options);
  ASSERT_TRUE(good.ok()) << good.status();
  auto frame = (*good)->GetFrameAt(2);
  row.Saw("next open's request " + FrameOutcome(frame, 2));
  EXPECT_TRUE(frame.ok() && IsSyntheticFrame(*frame, 2));
}

// A close_session that never returns: nobody waits for a close, so it kept
// its thread (and any CPU it spun) for the life of the process, seen by no
// caller. Past the manifest's close_timeout_seconds (2 s for the faulty
// backend) the runner ends, the host restarts the backend, saying why, and
// another decoder's next request is served by the new process.
TEST_F(FaultTest, ACloseThatNeverReturnsEndsTheBackendWhichIsRestarted) {
  FaultRow& row = Row("close_session that never returns, close_timeout_seconds 2");
  auto bystander = Open(WriteSyntheticVideo("bystander.syn"), "faulty");
  ASSERT_TRUE(bystander.ok()) << bystander.status();
  ASSERT_TRUE((*bystander)->GetFrameAt(1).ok());
  const int restarts = StatusOf("faulty").restarts;
  ++row.tries;
  {
    auto hung = Open(WriteSyntheticVideo("hang_close.syn", "fault=hang_close"), "faulty");
    ASSERT_TRUE(hung.ok()) << hung.status();
    ASSERT_TRUE((*hung)->GetFrameAt(0).ok());
  }  // the decoder is gone at once; its close_session hangs in the backend
  WaitUntil([&] { return StatusOf("faulty").restarts != restarts; }, std::chrono::milliseconds(20),
            std::chrono::seconds(60));
  const BackendStatus after = StatusOf("faulty");
  row.Saw(absl::StrCat(after.restarts - restarts, " restart(s)"));
  ASSERT_EQ(after.restarts, restarts + 1) << "the backend kept the hung close";
  EXPECT_NE(after.last_exit.find("close_session of a closed decoder did not return within the manifest's [restart] "
                                 "close_timeout_seconds"),
            std::string::npos)
      << after.last_exit;
  auto frame = (*bystander)->GetFrameAt(2);
  row.Saw("the other decoder's next request " + FrameOutcome(frame, 2));
  ASSERT_TRUE(frame.ok()) << frame.status();
  EXPECT_TRUE(IsSyntheticFrame(*frame, 2));
}

// The same after the plugin took every thread the backend may have (a
// decoder leaking its threads, 32 tasks at most): the close watchdog's
// thread, started at the first close, could not start then, closes went
// unwatched for good, and the hung close blocked the runner's next open
// until the open's deadline. The watchdog starts before the plugin loads.
TEST_F(FaultTest, ACloseThatNeverReturnsIsBoundedAfterThePluginTookEveryThread) {
  FaultRow& row = Row("close_session that never returns after the plugin took every thread, threads 32");
  StartHostWithFaulty(options_, &host_,
                      "[restart]\nclose_timeout_seconds = 2\nbackoff_initial_ms = 1\n[sandbox]\nthreads = 32\n"
                      "[config]\nhang_close = 1\n");
  if (HasFatalFailure()) return;
  ++row.tries;
  {
    auto taker = Open(WriteSyntheticVideo("take_threads.syn", "fault=take_threads fault_frame=0"), "faulty");
    ASSERT_TRUE(taker.ok()) << taker.status();
    ASSERT_TRUE((*taker)->GetFrameAt(0).ok());
  }  // its close_session hangs in the backend, which has no thread to spare
  WaitUntil([&] { return StatusOf("faulty").restarts != 0; }, std::chrono::milliseconds(20), std::chrono::seconds(60));
  const BackendStatus after = StatusOf("faulty");
  row.Saw(absl::StrCat(after.restarts, " restart(s)"));
  ASSERT_EQ(after.restarts, 1u) << "the backend kept the hung close";
  EXPECT_NE(after.last_exit.find("did not return within the manifest's [restart] close_timeout_seconds"),
            std::string::npos)
      << after.last_exit;
  auto next = Open(WriteSyntheticVideo("after_taker.syn"), "faulty");
  ASSERT_TRUE(next.ok()) << next.status();
  auto frame = (*next)->GetFrameAt(2);
  row.Saw("the next decoder's request " + FrameOutcome(frame, 2));
  ASSERT_TRUE(frame.ok()) << frame.status();
  EXPECT_TRUE(IsSyntheticFrame(*frame, 2));
}

// Threads a plugin starts in open_session that spin on after its decoder
// closed: no request waits on them, so no deadline saw them, and they took
// the cores for the life of the process. With no decoder on the backend,
// the heartbeat sees it use more than half a core for 10 s and stops it,
// saying why; the next decoder gets a new process.
TEST_F(FaultTest, ABackendThatSpinsWithNoDecoderOnItIsStopped) {
  FaultRow& row = Row("threads spinning on after their decoder closed");
  options_.supervision.heartbeat_interval = std::chrono::milliseconds(2'000);  // the default; the suite's are off
  StartHost();
  ++row.tries;
  {
    auto spinning = Open(WriteSyntheticVideo("spin.syn", "fault=spin_open"), "faulty");
    ASSERT_TRUE(spinning.ok()) << spinning.status();
    ASSERT_TRUE((*spinning)->GetFrameAt(0).ok());
  }
  const std::string says = "with no decoder open on it (its threads kept running after its sessions closed): stopped";
  WaitUntil([&] { return StatusOf("faulty").last_exit.find(says) != std::string::npos; }, std::chrono::milliseconds(50),
            std::chrono::seconds(120));
  const BackendStatus after = StatusOf("faulty");
  row.Saw(after.last_exit);
  ASSERT_NE(after.last_exit.find(says), std::string::npos) << after.last_exit;
  auto next = Open(WriteSyntheticVideo("after_spin.syn"), "faulty");
  ASSERT_TRUE(next.ok()) << next.status();
  auto frame = (*next)->GetFrameAt(2);
  row.Saw("the next decoder's request " + FrameOutcome(frame, 2));
  ASSERT_TRUE(frame.ok()) << frame.status();
  EXPECT_TRUE(IsSyntheticFrame(*frame, 2));
}

// A warm spare never has a decoder on it: one whose plugin's threads spin
// from create() on took a core for as long as it waited, however long the
// decoder on the backend in use stayed open. The heartbeat stops it after
// the same 10 s, starts no other spare (its plugin would spin in each),
// and leaves the backend in use and its decoder alone.
TEST_F(FaultTest, AWarmSpareThatSpinsIsStoppedAndNotReplaced) {
  FaultRow& row = Row("a warm spare whose threads spin from create() on");
  options_.supervision.heartbeat_interval = std::chrono::milliseconds(2'000);  // the default; the suite's are off
  options_.supervision.warm_spare = true;
  StartHostWithFaulty(options_, &host_, "[config]\nspin_create = 2\n");
  if (HasFatalFailure()) return;
  ++row.tries;
  auto decoder = Open(WriteSyntheticVideo("spare.syn"), "faulty");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  ASSERT_TRUE((*decoder)->GetFrameAt(0).ok());
  const pid_t in_use = StatusOf("faulty").pid;
  ASSERT_TRUE(WaitUntil([&] { return StatusOf("faulty").warm_spare; }, std::chrono::milliseconds(20)))
      << "no spare started";
  row.Saw("a spare started");
  ASSERT_TRUE(WaitUntil([&] { return !StatusOf("faulty").warm_spare; }, std::chrono::milliseconds(50),
                        std::chrono::seconds(120)))
      << "the spinning spare was kept";
  EXPECT_NE(StatusOf("faulty").spare_stopped.find("its warm spare used"), std::string::npos)
      << StatusOf("faulty").spare_stopped;
  row.Saw(StatusOf("faulty").spare_stopped);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // past a heartbeat, when a new spare would start
  const BackendStatus after = StatusOf("faulty");
  EXPECT_FALSE(after.warm_spare) << "another spare started";
  EXPECT_EQ(after.pid, in_use);
  EXPECT_EQ(after.restarts, 0u);
  row.Saw(after.warm_spare ? "another spare STARTED" : "no other spare");
  auto frame = (*decoder)->GetFrameAt(2);
  row.Saw("the decoder's next request " + FrameOutcome(frame, 2));
  ASSERT_TRUE(frame.ok()) << frame.status();
  EXPECT_TRUE(IsSyntheticFrame(*frame, 2));
}

}  // namespace
}  // namespace codecvisor::testing
