// Replay after a backend dies mid-request (tests/fault_test_support.h):
// the request in flight is re-issued on the new child and the caller sees
// latency, not failure; what the caller already said (a sink's error) and
// what the stream is (metadata, NaN included) survive the replay; a restart
// that fails is retried. Each test notes what it tried and saw in a
// FaultRow, for docs/RELIABILITY.md; TearDown checks nothing leaked.

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/manifest.h"
#include "core/process.h"
#include "core/supervisor.h"
#include "core/system_supervisor_env.h"
#include "core/video_decoder.h"
#include "tests/fault_test_support.h"

namespace codecvisor::testing {

using ::codecvisor::internal::BackendStatus;
using ::codecvisor::internal::VideoDecoder;
using ::codecvisor::internal::DecoderOptions;
using ::codecvisor::internal::Frame;
namespace {

// The request in flight when the backend is killed from outside is
// re-issued: the caller gets all 40 frames once, in order, bit-identical.
TEST_F(FaultTest, RequestInFlightIsReplayedAfterAnOutsideKill) {
  for (bool warm_spare : {false, true}) {
    options_.supervision.warm_spare = warm_spare;
    StartHost();
    FaultRow& row = Row(std::string("SIGKILL from outside during a 40-frame request (") +
                        (warm_spare ? "with" : "without") + " a warm spare)");
    ++row.tries;
    const std::string video = WriteSyntheticVideo("replay.syn");
    auto decoder = Open(video, "synthetic");
    ASSERT_TRUE(decoder.ok()) << decoder.status();
    if (warm_spare) {
      // The spare starts once the backend has served a request.
      ASSERT_TRUE((*decoder)->GetFrameAt(0).ok());
      const auto asked = std::chrono::steady_clock::now();
      while (!StatusOf("synthetic").warm_spare && std::chrono::steady_clock::now() - asked < std::chrono::seconds(10)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      ASSERT_TRUE(StatusOf("synthetic").warm_spare);
    }
    int64_t next = 0;
    absl::Status s = (*decoder)->ForEachFrame({ipc::IndexRange{0, 40, 1}}, [&](Frame f) {
      if (!IsSyntheticFrame(f, next)) return absl::InternalError("wrong frame " + std::to_string(next));
      if (++next == 15) kill(StatusOf("synthetic").pid, SIGKILL);
      return absl::OkStatus();
    });
    row.Note(absl::StrCat("request ", CodeName(s), ": ", next, " of 40 frames, in order and bit-identical"));
    row.Note(absl::StrCat("restarts ", StatusOf("synthetic").restarts, ", requests replayed ", (*decoder)->retries(),
                          ", last exit: ", StatusOf("synthetic").last_exit));
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(next, 40);
    EXPECT_EQ(StatusOf("synthetic").restarts, 1u);
    EXPECT_EQ((*decoder)->retries(), 1u);
    EXPECT_NE(StatusOf("synthetic").last_exit.find("SIGKILL"), std::string::npos) << StatusOf("synthetic").last_exit;
    EXPECT_EQ(StatusOf("synthetic").last_exit_advice, "") << "a kill from outside is no crash to look into";
  }
}

// A warm spare is started on a thread of its own: the watcher used to start
// it itself, so a death while a slow plugin's spare was starting (up to
// spawn_timeout) went unnoticed, and every request waiting on the dead
// child waited too, until the spare was up.
TEST_F(FaultTest, ADeathIsHandledWhileAWarmSpareIsStillStarting) {
  const std::string manifest = WriteFile(
      "slowstart.toml", "name = 'slowstart'\ndevices = ['slowstart']\nlibrary = '" +
                            Runfile("backends/testing/libcodecvisor_faulty.so") +
                            "'\nentry = 'faulty_slow_start'\nabi_version = 1\n"
                            "[restart]\nbackoff_initial_ms = 1\nbackoff_max_ms = 20\nwarm_spare = true\n");
  ASSERT_TRUE(host_->LoadBackend(manifest).ok());
  FaultRow& row = Row("SIGKILL from outside while the warm spare of a plugin that takes 2 s to start is starting");
  ++row.tries;
  const std::string video = WriteSyntheticVideo("slowstart.syn");
  auto decoder = Open(video, "slowstart");  // the first start: 2 s
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  // The spare starts 250 ms after the backend (no request served yet): 450
  // ms in, it has begun its 2 s start.
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  ASSERT_FALSE(StatusOf("slowstart").warm_spare);
  const auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(StatusOf("slowstart").pid, SIGKILL), 0);
  while (StatusOf("slowstart").last_exit.empty() &&
         std::chrono::steady_clock::now() - killed_at < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto noticed_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed_at).count();
  row.Saw(absl::StrCat("death recorded ", noticed_ms < 1000 ? "within 1 s" : "AFTER MORE THAN 1 S", " of the kill"));
  EXPECT_NE(StatusOf("slowstart").last_exit.find("SIGKILL"), std::string::npos) << StatusOf("slowstart").last_exit;
  // The spare still had at least 1.5 s to go: a watcher busy starting it
  // would have recorded the death no sooner than that.
  EXPECT_LT(noticed_ms, 1000);
  auto frame = (*decoder)->GetFrameAt(7);
  row.Saw("next request " + FrameOutcome(frame, 7));
  ASSERT_TRUE(frame.ok()) << frame.status();
  EXPECT_TRUE(IsSyntheticFrame(*frame, 7));
}

// A SIGSEGV or SIGABRT sent with kill() from outside (a user, a soak's
// killer) is no crash: the runner catches it and goes on, and recorded it
// as its fault (its crash handlers then spent), so that its next death, a
// plain SIGKILL, was reported as a SIGSEGV with a backtrace hint.
TEST_F(FaultTest, ASignalSentFromOutsideLeavesNoCrashRecord) {
  FaultRow& row = Row("SIGSEGV and SIGABRT sent with kill() from outside, then SIGKILL");
  ++row.tries;
  auto decoder = Open(WriteSyntheticVideo("outside.syn", ""), "synthetic");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  ASSERT_TRUE((*decoder)->GetFrameAt(1).ok());
  const pid_t pid = StatusOf("synthetic").pid;
  ASSERT_EQ(kill(pid, SIGSEGV), 0);
  ASSERT_EQ(kill(pid, SIGABRT), 0);
  ASSERT_EQ(kill(pid, SIGSYS), 0);
  ASSERT_EQ(kill(pid, SIGSEGV), 0);
  auto frame = (*decoder)->GetFrameAt(2);
  ASSERT_TRUE(frame.ok()) << frame.status();
  EXPECT_TRUE(IsSyntheticFrame(*frame, 2));
  EXPECT_EQ(StatusOf("synthetic").pid, pid) << "the runner did not go on";
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  auto after = (*decoder)->GetFrameAt(3);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(IsSyntheticFrame(*after, 3));
  const std::string last_exit = StatusOf("synthetic").last_exit;
  row.Saw("then killed: recorded as '" + last_exit + "'");
  EXPECT_NE(last_exit.find("SIGKILL"), std::string::npos) << last_exit;
  EXPECT_EQ(StatusOf("synthetic").restarts, 1u);
}

// A sink that said no keeps its answer across a replay: the replay once
// skipped the frames drained after the sink's error and fed it the rest,
// and the caller got OK with a gap in its frames.
TEST_F(FaultTest, ASinkErrorSurvivesACrashWhileTheRequestDrains) {
  FaultRow& row = Row("SIGKILL from outside right after the sink fails a 40-frame request");
  ++row.tries;
  const std::string video = WriteSyntheticVideo("sink_error.syn", "decode_ms=5");
  auto decoder = Open(video, "synthetic");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  int calls = 0;
  absl::Status s = (*decoder)->ForEachFrame({ipc::IndexRange{0, 40, 1}}, [&](Frame f) {
    if (!IsSyntheticFrame(f, calls)) return absl::InternalError("wrong frame " + std::to_string(calls));
    if (++calls < 4) return absl::OkStatus();
    kill(StatusOf("synthetic").pid, SIGKILL);
    return absl::ResourceExhaustedError("the sink is full");
  });
  row.Note(absl::StrCat("request ", CodeName(s), " after ", calls, " sink calls"));
  row.Saw(s.message() == "the sink is full" && calls == 4 ? "the sink's own error, no frame after it"
                                                          : std::string(s.message()));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(s.message(), "the sink is full");
  EXPECT_EQ(calls, 4) << "no frame reaches a sink after its error";
  auto after = (*decoder)->GetFrameAt(5);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(IsSyntheticFrame(*after, 5));
  EXPECT_EQ(StatusOf("synthetic").restarts, 1u);
}

// A sink's error cancels the request in the backend: it stops after the
// frame in hand instead of decoding the rest for nothing. Here the rest
// holds a frame that crashes the backend, 27 frames of 40 ms after the
// sink says no: a backend that went on would die there.
TEST_F(FaultTest, ASinkErrorStopsTheBackendsDecoding) {
  FaultRow& row = Row("the sink fails frame 2 of a 40-frame request whose frame 30 is a segfault");
  ++row.tries;
  const std::string video = WriteSyntheticVideo("cancel.syn", "fault=segfault fault_frame=30 decode_ms=40");
  auto decoder = Open(video, "faulty");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  int calls = 0;
  absl::Status s = (*decoder)->ForEachFrame({ipc::IndexRange{0, 40, 1}}, [&](Frame f) {
    if (!IsSyntheticFrame(f, calls)) return absl::InternalError("wrong frame " + std::to_string(calls));
    return ++calls < 3 ? absl::OkStatus() : absl::CancelledError("enough");
  });
  const BackendStatus backend = StatusOf("faulty");
  row.Note(absl::StrCat("request ", CodeName(s), " after ", calls, " sink calls; ", backend.restarts,
                        " restarts"));
  row.Verdict(absl::IsCancelled(s) && calls == 3 && backend.restarts == 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(backend.restarts, 0u) << "the backend decoded on to frame 30";
  EXPECT_EQ(backend.state, "ready");
  auto after = (*decoder)->GetFramesInRange(3, 6);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(IsSyntheticFrame((*after)[i], 3 + i)) << i;
  EXPECT_EQ(StatusOf("faulty").restarts, 0u);
}

// Outside kills blame nobody, and another session's successes keep the
// restart budget whole, so without a bound a request whose backend keeps
// being killed would replay forever. It gives up (kUnavailable) once its
// backend is still dying four request timeouts after the first death.
TEST_F(FaultTest, ARequestWhoseBackendKeepsBeingKilledGivesUpInBoundedTime) {
  FaultRow& row = Row("SIGKILL from outside every 150 ms during a 2 s request (request timeout 300 ms), while "
                      "another session's requests succeed");
  ++row.tries;
  DecoderOptions options;
  options.request_timeout = std::chrono::milliseconds(300);
  auto victim = Open(WriteSyntheticVideo("killed_often.syn", "decode_ms=50"), "synthetic", options);
  ASSERT_TRUE(victim.ok()) << victim.status();
  auto other = Open(WriteSyntheticVideo("refills_budget.syn"), "synthetic");
  ASSERT_TRUE(other.ok()) << other.status();
  std::atomic<bool> done{false};
  std::atomic<int> kills{0}, other_ok{0};
  // Each kill waits for the other session's requests to have healed the
  // restart budget (3 successes after a crash; one more for a success the
  // dying process answered): however slow the restarts, the budget never
  // runs out, and only the replay bound can end the request.
  std::thread killer([&] {
    int ok_at_kill = -4;
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      while (!done && other_ok.load() < ok_at_kill + 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (const pid_t pid = StatusOf("synthetic").pid; !done && pid > 0 && kill(pid, SIGKILL) == 0) {
        ++kills;
        ok_at_kill = other_ok.load();
      }
    }
  });
  std::thread refiller([&] {
    for (int64_t i = 0; !done; ++i) {
      if ((*other)->GetFrameAt(i % 10).ok()) ++other_ok;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  const auto started = std::chrono::steady_clock::now();
  // 40 frames of 50 ms: each replay decodes from the start, so no attempt
  // outlives the next kill.
  const absl::Status s = (*victim)->ForEachFrame({ipc::IndexRange{0, 40, 1}}, [](Frame) { return absl::OkStatus(); });
  const auto took_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  done = true;
  killer.join();
  refiller.join();
  const bool gave_up = s.message().find("giving up") != std::string::npos;
  row.Saw(absl::StrCat("request ", CodeName(s), gave_up ? ", giving up" : "", took_ms < 15'000 ? " within 15 s" : ""));
  row.Note(absl::StrCat(kills.load(), " kills; the other session's successful requests: ", other_ok.load()));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(gave_up) << s;
  EXPECT_LT(took_ms, 15'000);
  EXPECT_GT(other_ok.load(), 0);
}

// Shutting a backend down while an open is inside vendor code kills the
// child instead of waiting for the open to let go of the control channel
// (up to the open timeout, 120 s by default), and the open fails at once.
TEST_F(FaultTest, ShuttingABackendDownDuringASlowOpenDoesNotWaitForIt) {
  FaultRow& row = Row("backend shut down while an open sleeps 60 s in vendor code");
  ++row.tries;
  absl::StatusOr<BackendManifest> manifest = LoadManifest(Runfile("backends/testing/synthetic.toml"));
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  auto supervisor = std::make_shared<Supervisor>(
      *manifest, std::make_shared<SystemSupervisorEnv>(*options_.layout, std::make_shared<SystemProcessLauncher>()),
      options_.supervision);
  const std::string video = WriteSyntheticVideo("open_60s.syn", "open_ms=60000");
  ipc::UniqueFd fd(open(video.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  absl::Status opened;
  std::chrono::steady_clock::time_point open_returned;
  std::thread opener([&] {
    opened = VideoDecoder::Open(supervisor, std::move(fd), video, DecoderOptions{}).status();
    open_returned = std::chrono::steady_clock::now();
  });
  // The child is up, and the open is sleeping in vendor code.
  const bool in_vendor_code = WaitUntil([&] { return supervisor->Status().control_call_in_vendor_code; },
                                        std::chrono::milliseconds(5), std::chrono::seconds(30));
  const auto shutdown_at = std::chrono::steady_clock::now();
  supervisor->Shutdown();
  const auto shutdown_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - shutdown_at).count();
  opener.join();
  ASSERT_TRUE(in_vendor_code) << "the open never reached vendor code";
  const auto open_ms = std::chrono::duration_cast<std::chrono::milliseconds>(open_returned - shutdown_at).count();
  row.Saw(absl::StrCat("shutdown ", shutdown_ms < 5'000 ? "within 5 s" : "SLOWER THAN 5 S", "; the open ",
                       CodeName(opened), open_ms < 10'000 ? " within 10 s of it" : " LATER THAN 10 S AFTER IT"));
  EXPECT_LT(shutdown_ms, 5'000);
  EXPECT_FALSE(opened.ok());
  EXPECT_LT(open_ms, 10'000) << opened;
}

// A restart that fails (here: the library is missing for a while) is
// retried with the restart backoff, like a crash, instead of leaving the
// backend failed until someone resets it; the request in flight goes on.
TEST_F(FaultTest, AFailedRestartIsRetriedAndTheRequestGoesOn) {
  FaultRow& row = Row("restart fails while the plugin's library is missing, then it is back");
  ++row.tries;
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/flaky_install";
  mkdir(dir.c_str(), 0755);
  // The synthetic library's second entry, which no other manifest here loads.
  const std::string lib = dir + "/libcodecvisor_synthetic.so";
  {
    std::ifstream in(Runfile("backends/testing/libcodecvisor_synthetic.so"), std::ios::binary);
    std::ofstream out(lib, std::ios::binary);
    out << in.rdbuf();
  }
  std::ofstream(dir + "/late.toml") << "name='synthetic_late'\ndevices=['flaky']\n"
                                       "library='libcodecvisor_synthetic.so'\nentry='synthetic_late_v1'\n"
                                       "abi_version=1\n[restart]\nmax_restarts=50\nwindow_seconds=60\n"
                                       "backoff_initial_ms=20\nbackoff_max_ms=50\n";
  ASSERT_TRUE(host_->LoadBackend(dir + "/late.toml").ok());
  auto decoder = Open(WriteSyntheticVideo("flaky.syn", "decode_ms=2"), "flaky");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  ASSERT_TRUE((*decoder)->GetFrameAt(1).ok());
  ASSERT_EQ(rename(lib.c_str(), (lib + ".away").c_str()), 0);
  kill(StatusOf("synthetic_late").pid, SIGKILL);
  // Wait until a restart has failed on the missing library.
  WaitUntil(
      [&] { return StatusOf("synthetic_late").diagnostic.find("libcodecvisor_synthetic.so") != std::string::npos; },
      std::chrono::milliseconds(5));
  const BackendStatus failed_once = StatusOf("synthetic_late");
  row.Note("after a failed restart: state " + failed_once.state);
  EXPECT_NE(failed_once.diagnostic.find("libcodecvisor_synthetic.so"), std::string::npos) << failed_once.diagnostic;
  EXPECT_EQ(failed_once.state, "restarting") << failed_once.diagnostic;
  ASSERT_EQ(rename((lib + ".away").c_str(), lib.c_str()), 0);
  auto frame = (*decoder)->GetFrameAt(2);
  row.Saw("next request " + CodeName(frame.status()));
  ASSERT_TRUE(frame.ok()) << frame.status();
  EXPECT_TRUE(IsSyntheticFrame(*frame, 2));
  EXPECT_EQ(StatusOf("synthetic_late").state, "ready");
  EXPECT_TRUE(StatusOf("synthetic_late").diagnostic.empty()) << StatusOf("synthetic_late").diagnostic;
}

// The re-opened session must describe the stream as before; a NaN in the
// metadata (a backend's "unknown") once made that check fail on every
// replay ("describes the stream differently"). The host now takes a NaN
// rate as its unknown, 0, on every open.
TEST_F(FaultTest, AStreamWithANanRateIsReplayedAfterAnOutsideKill) {
  FaultRow& row = Row("SIGKILL from outside during a request on a stream whose rate is NaN");
  ++row.tries;
  auto decoder = Open(WriteSyntheticVideo("nan.syn", "nan_rate=1"), "synthetic");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  EXPECT_EQ((*decoder)->metadata().average_fps, 0);
  int64_t next = 0;
  absl::Status s = (*decoder)->ForEachFrame({ipc::IndexRange{0, 40, 1}}, [&](Frame f) {
    if (!IsSyntheticFrame(f, next)) return absl::InternalError("wrong frame " + std::to_string(next));
    if (++next == 15) kill(StatusOf("synthetic").pid, SIGKILL);
    return absl::OkStatus();
  });
  row.Saw("request " + CodeName(s));
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(next, 40);
  EXPECT_EQ((*decoder)->retries(), 1u);
}

// A re-open after a restart must describe the stream as the first open
// did. Where it does not, the video decides whose the fault is: a video
// that has not changed (a file as it was, bytes the host sealed) described
// two ways by two processes of one backend is the backend's inconsistency
// (kInternal), not a video that cannot be decoded (kDataLoss, which batch
// jobs skip); a file rewritten since it was opened is the video's.
TEST_F(FaultTest, AReopenDescribingAnUnchangedVideoDifferentlyIsTheBackendsError) {
  FaultRow& row = Row("a restarted backend that describes the same video differently (codec name per process)");
  const std::string path = WriteSyntheticVideo("per_process.syn", "fault=metadata_per_process");
  std::ifstream in(path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto from_file = Open(path, "faulty");
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  DecoderOptions on_faulty;
  on_faulty.device = "faulty";
  auto from_bytes = host_->OpenDecoderFromBytes(bytes, "per_process bytes", on_faulty);
  ASSERT_TRUE(from_bytes.ok()) << from_bytes.status();
  auto rewritten = Open(WriteSyntheticVideo("per_process_rewritten.syn", "fault=metadata_per_process"), "faulty");
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  for (auto* decoder : {&*from_file, &*from_bytes, &*rewritten}) ASSERT_TRUE((*decoder)->GetFrameAt(0).ok());
  // Rewritten in place with the same bytes: its modification time moves.
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  WriteSyntheticVideo("per_process_rewritten.syn", "fault=metadata_per_process");
  ++row.tries;
  ASSERT_EQ(kill(StatusOf("faulty").pid, SIGKILL), 0);
  ASSERT_TRUE(WaitUntil([&] { return !StatusOf("faulty").last_exit.empty(); }, std::chrono::milliseconds(5)));
  auto next_request_fails = [&](VideoDecoder& decoder, const std::string& what, absl::StatusCode code,
                                const std::string& message) {
    absl::StatusOr<Frame> frame = decoder.GetFrameAt(1);
    row.Saw(what + "'s next request: " + CodeName(frame.status()));
    ASSERT_FALSE(frame.ok());
    EXPECT_EQ(frame.status().code(), code) << frame.status();
    EXPECT_NE(frame.status().message().find(message), std::string::npos) << frame.status();
  };
  const std::string unchanged = "describes the stream differently from before, and the video has not changed";
  next_request_fails(**from_file, "an unchanged file", absl::StatusCode::kInternal, unchanged);
  next_request_fails(**from_bytes, "sealed bytes", absl::StatusCode::kInternal, unchanged);
  next_request_fails(**rewritten, "a rewritten file", absl::StatusCode::kDataLoss,
                     "the video's file changed since it was opened");
}

}  // namespace
}  // namespace codecvisor::testing
