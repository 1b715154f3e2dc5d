// The faulty backend's faults on one session, each kRuns times
// (fault_test_support.h): hangs killed at their deadlines, lies in an
// open's answer, a frame described as another, requests that are poison
// and backends that crash-loop. The host survives, every request returns
// correct frames or the documented error, and nothing leaks (checked in
// TearDown). Each test notes what it tried and saw in a FaultRow, for
// docs/RELIABILITY.md.

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/fault_test_support.h"

namespace codecvisor::testing {
namespace {

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
    EXPECT_NE(hung.status().message().find("a longer open timeout (open_timeout; the CLI's --open-timeout, "
                                           "conformance's --timeout) or approximate mode"),
              std::string::npos)
        << hung.status();
    auto fine = Open(WriteSyntheticVideo("after_hang.syn"), "faulty");
    in_open.Saw("next open " + CodeName(fine.status()));
    ASSERT_TRUE(fine.ok()) << fine.status();
    auto frame = (*fine)->GetFrameAt(1);
    in_open.Saw("its request " + FrameOutcome(frame, 1));
    ASSERT_TRUE(frame.ok());  // served: the poison verdicts took their crashes off the budget
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

// A frame whose duration no stream can have (a damaged Matroska block's),
// passed on by an honest plugin: the host would take it for a forgery and
// replace the backend, so the runner fails the request as the file's
// first; the frames around it decode.
TEST_F(FaultTest, AFrameWithImpossibleTimesFailsTheRequestNotTheBackend) {
  FaultRow& row = Row("a frame lasting 10^13 s");
  ++row.tries;
  auto decoder = Open(WriteSyntheticVideo("huge.syn", "fault=huge_duration fault_frame=3"), "faulty");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  const pid_t pid = StatusOf("faulty").pid;
  auto frame = (*decoder)->GetFrameAt(3);
  row.Saw("frame 3 " + CodeName(frame.status()));
  ASSERT_EQ(frame.status().code(), absl::StatusCode::kDataLoss) << frame.status();
  EXPECT_NE(frame.status().message().find("times a stream cannot have"), std::string::npos) << frame.status();
  EXPECT_EQ(StatusOf("faulty").pid, pid) << "the backend was replaced";
  EXPECT_EQ(StatusOf("faulty").restarts, 0u);
  for (int64_t i : {2, 4}) {
    auto other = (*decoder)->GetFrameAt(i);
    ASSERT_TRUE(other.ok()) << other.status();
    EXPECT_TRUE(IsSyntheticFrame(*other, i));
  }
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
  // Not the last wait's own length beside the timeout (the red-team
  // helper's "no answer within 3000 ms (timed out after 34 ms ...)").
  EXPECT_EQ(never.status().message().find("timed out after"), std::string::npos) << never.status();
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

// In exact mode the frame played at a time starts at or before it: a
// plugin answering every time with the stream's last frame had its frame
// at 0.36 s returned for 0 s, with no error. The answer is refused as the
// backend's lie, as other forged frame records are; a request by index is
// still served.
TEST_F(FaultTest, AFramePlayedLaterThanTheTimeAskedIsRefused) {
  FaultRow& row = Row("index_at_seconds answering every time with the stream's last frame (exact mode)");
  ++row.tries;
  auto decoder = Open(WriteSyntheticVideo("played_at_last.syn", "frames=10 fault=played_at_last"), "faulty");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  absl::StatusOr<Frame> f = (*decoder)->GetFramePlayedAt(0.0);
  row.Saw("the frame played at 0 s: " + CodeName(f.status()));
  ASSERT_FALSE(f.ok()) << "frame " << f->index() << " at " << f->pts_seconds() << " s";
  EXPECT_NE(f.status().message().find("as the frame played at 0 s, which a frame starting after it cannot be"),
            std::string::npos)
      << f.status();
  absl::StatusOr<Frame> fine = (*decoder)->GetFrameAt(1);
  row.Saw("frame 1 " + FrameOutcome(fine, 1));
  EXPECT_TRUE(fine.ok() && IsSyntheticFrame(*fine, 1)) << FrameOutcome(fine, 1);
}

// Codes a frame request's answer cannot honestly carry, which reached the
// caller as someone else's fault: CV_ERROR_NATIVE_CHANGED from a session
// whose frames are RGB already (it is for a session laying frames out
// natively in place of the RGB asked for, which the host then reopens for
// RGB) came as the file's error (DataLoss: a batch job would skip a sound
// video); CV_ERROR_NOT_FOUND and CV_ERROR_INVALID_ARGUMENT for a frame the
// host checked (the session open, the index within the count), codes an
// open may give, came as a missing device and as the caller's misuse
// (Python's NoSuchDeviceError and ValueError). Each is the backend's
// mistake, said as such; the backend is kept.
TEST_F(FaultTest, AFrameRefusedWithACodeThatIsNotTheFramesIsTheBackendsMistake) {
  struct Case {
    const char* fault;
    const char* row;
    const char* message;
  };
  for (const Case& c : {
           Case{"native_changed", "decode_frame returning CV_ERROR_NATIVE_CHANGED from an RGB session",
                "returned CV_ERROR_NATIVE_CHANGED for frame 2 of a session whose frames are not laid out natively"},
           Case{"not_found", "decode_frame refusing a frame the host checked with CV_ERROR_NOT_FOUND",
                "backend refused a request it should serve (not found)"},
           Case{"invalid_argument", "decode_frame refusing a frame the host checked with CV_ERROR_INVALID_ARGUMENT",
                "backend refused a request it should serve (invalid argument)"},
       }) {
    SCOPED_TRACE(c.fault);
    FaultRow& row = Row(c.row);
    ++row.tries;
    auto decoder =
        Open(WriteSyntheticVideo(absl::StrCat(c.fault, ".syn"), absl::StrCat("fault=", c.fault, " fault_frame=2")),
             "faulty");
    ASSERT_TRUE(decoder.ok()) << decoder.status();
    const pid_t pid = StatusOf("faulty").pid;
    absl::StatusOr<Frame> f = (*decoder)->GetFrameAt(2);
    row.Saw("frame 2: " + CodeName(f.status()));
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInternal) << f.status();
    EXPECT_NE(f.status().message().find(c.message), std::string::npos) << f.status();
    absl::StatusOr<Frame> fine = (*decoder)->GetFrameAt(1);
    row.Saw("frame 1 " + FrameOutcome(fine, 1));
    EXPECT_TRUE(fine.ok() && IsSyntheticFrame(*fine, 1)) << FrameOutcome(fine, 1);
    EXPECT_EQ(StatusOf("faulty").pid, pid) << "the backend was replaced";
  }
  // Not found in a file rewritten since it was opened (which may lack the
  // stream now) is the video's.
  FaultRow& row = Row("decode_frame's CV_ERROR_NOT_FOUND for a file rewritten since it was opened");
  ++row.tries;
  const std::string extra = "fault=not_found fault_frame=2";
  auto decoder = Open(WriteSyntheticVideo("not_found_rewritten.syn", extra), "faulty");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));  // its modification time moves
  WriteSyntheticVideo("not_found_rewritten.syn", extra);
  absl::StatusOr<Frame> f = (*decoder)->GetFrameAt(2);
  row.Saw("frame 2: " + CodeName(f.status()));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kDataLoss) << f.status();
  EXPECT_NE(f.status().message().find("the video's file changed since it was opened"), std::string::npos) << f.status();
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

// A range whose seventh frame crashes the backend: the frames before it
// reach the caller once, and the verdict says how far the request got, so
// that a user can find the bad frame in a long clip.
TEST_F(FaultTest, APoisonFrameInARangeIsLocated) {
  FaultRow& row = Row("segfault on frame 6 of a request for frames 0-9");
  ++row.tries;
  auto decoder = Open(WriteSyntheticVideo("bad_frame_6.syn", "fault=segfault fault_frame=6"), "faulty");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  int64_t next = 0;
  const absl::Status s = (*decoder)->ForEachFrame({ipc::IndexRange{0, 10, 1}}, [&](Frame f) {
    if (!IsSyntheticFrame(f, next)) return absl::InternalError(absl::StrCat("not frame ", next));
    ++next;
    return absl::OkStatus();
  });
  row.Saw(absl::StrCat("request ", CodeName(s), " after ", next, " frames"));
  ASSERT_TRUE(absl::IsAborted(s)) << s;
  EXPECT_EQ(next, 6);
  EXPECT_NE(s.message().find("frames [0, 10) step 1 (6 frames delivered, the next one not) killed the backend twice"),
            std::string::npos)
      << s;
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
