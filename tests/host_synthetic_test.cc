// The whole host path against a real child process, with the synthetic
// backend so that every received byte can be checked: Host -> runner spawn
// -> dlopen -> handshake -> open (fd over SCM_RIGHTS) -> session channel ->
// frames in the arena -> Frame views.

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "backends/sdk/runner/runner_args.h"
#include "backends/testing/synthetic_pattern.h"
#include "core/host.h"
#include "ipc/hangup_watcher.h"

namespace codecvisor {
namespace {

std::string Runfile(const std::string& path) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/codecvisor/" + path;
}

std::string WriteVideo(const std::string& name, const std::string& text) {
  std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// The pid of the backend named `name` (0 while it has no process).
pid_t BackendPid(const Host& host, const std::string& name) {
  for (const auto& backend : host.Backends()) {
    if (backend.name == name) return backend.pid;
  }
  return 0;
}

pid_t SyntheticPid(const Host& host) { return BackendPid(host, "synthetic"); }

class HostSyntheticTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HostOptions options;
    options.layout = InstallLayout{Runfile("backends/sdk/runner/codecvisor-backend"), Runfile("backends/cpu")};
    auto host = Host::Create(options);
    ASSERT_TRUE(host.ok()) << host.status();
    host_ = *std::move(host);
    ASSERT_TRUE(host_->LoadBackend(Runfile("backends/testing/synthetic.toml")).ok());
    video_ = WriteVideo("clip.syn", "synthetic frames=40 width=32 height=24 fps=10 start=0.5");
  }

  absl::StatusOr<std::unique_ptr<VideoDecoder>> Open(DecoderOptions options = {}) {
    options.device = "synthetic";
    return host_->OpenDecoder(video_, options);
  }

  // Two decoders that have each had a frame (so each has its session
  // thread), and the pid of their backend.
  void OpenTwoSessions(std::unique_ptr<VideoDecoder>* a, std::unique_ptr<VideoDecoder>* b, pid_t* pid) {
    for (std::unique_ptr<VideoDecoder>* d : {a, b}) {
      auto decoder = Open();
      ASSERT_TRUE(decoder.ok()) << decoder.status();
      ASSERT_TRUE((*decoder)->GetFrameAt(1).ok());
      *d = *std::move(decoder);
    }
    *pid = SyntheticPid(*host_);
    ASSERT_GT(*pid, 0);
  }

  std::unique_ptr<Host> host_;
  std::string video_;
};

void ExpectFrame(const Frame& f, int64_t index, OutputFormat format = OutputFormat::kRgb24) {
  ASSERT_EQ(f.index(), index);
  ASSERT_EQ(f.width(), 32u);
  ASSERT_EQ(f.height(), 24u);
  EXPECT_DOUBLE_EQ(f.pts_seconds(), 0.5 + index / 10.0);
  const testing::SyntheticVideo v{.frames = 40, .width = 32, .height = 24, .fps = 10, .start = 0.5};
  std::vector<uint8_t> want(32 * 24 * 3);
  testing::FillSyntheticFrame(v, static_cast<cv_output_format>(format), index, want.data());
  auto got = f.data();
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << "frame " << index << " bytes differ";
}

TEST_F(HostSyntheticTest, MetadataComesFromTheBackend) {
  auto decoder = Open();
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  EXPECT_EQ((*decoder)->metadata().codec, "synthetic");
  EXPECT_EQ((*decoder)->metadata().num_frames_from_scan, 40);
  EXPECT_DOUBLE_EQ((*decoder)->metadata().begin_stream_seconds, 0.5);
  auto backends = host_->Backends();
  bool ready = false;
  for (const auto& b : backends) {
    if (b.name == "synthetic") {
      ready = b.state == "ready" && b.pid > 0;
      EXPECT_NE(b.pid, getpid()) << "the backend must run in another process";
    }
  }
  EXPECT_TRUE(ready);
}

// Calls `fn(tid, comm)` for each thread of process `pid` (/proc/PID/task).
template <typename Fn>
void ForEachThread(pid_t pid, Fn fn) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* tasks = opendir(dir.c_str())) {
    while (const dirent* e = readdir(tasks)) {
      if (e->d_name[0] == '.') continue;
      std::string comm;
      std::getline(std::ifstream(dir + "/" + e->d_name + "/comm"), comm);
      fn(std::string(e->d_name), comm);
    }
    closedir(tasks);
  }
}

// Threads of process `pid` named `name`.
int ThreadsNamed(pid_t pid, const std::string& name) {
  int n = 0;
  ForEachThread(pid, [&](const std::string&, const std::string& comm) { n += comm == name; });
  return n;
}

// Each session is served on a runner thread of its own, named so that
// tools (bench decode's CPU split, top -H) can tell it from the vendor's
// threads; it ends when its decoder closes.
TEST_F(HostSyntheticTest, EachSessionHasANamedRunnerThread) {
  std::unique_ptr<VideoDecoder> a, b;
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(OpenTwoSessions(&a, &b, &pid));
  EXPECT_EQ(ThreadsNamed(pid, runner::kSessionThreadName), 2);
  a.reset();
  int left = -1;
  for (int i = 0; i < 200 && left != 1; ++i) {  // the thread ends after the close reaches it
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    left = ThreadsNamed(pid, runner::kSessionThreadName);
  }
  EXPECT_EQ(left, 1);
}

// Context switches (voluntary and not) of the runner's own threads in
// process `pid`: the main (control) thread, the session threads and the
// hang-up watcher. Not a sanitizer runtime's background thread.
int64_t RunnerContextSwitches(pid_t pid) {
  int64_t total = 0;
  ForEachThread(pid, [&](const std::string& tid, const std::string& comm) {
    if (tid != std::to_string(pid) && comm != runner::kSessionThreadName && comm != ipc::kHangupThreadName) return;
    std::ifstream status("/proc/" + std::to_string(pid) + "/task/" + tid + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.find("ctxt_switches:") != std::string::npos) total += std::stoll(line.substr(line.find(':') + 1));
    }
  });
  return total;
}

// An open but idle decoder costs no CPU: the runner's control and session
// threads sleep until the host asks for something (ipc/hangup_watcher.h).
// Polling the sockets every 10 ms instead would switch them in about 100
// times a second each, 300 here.
TEST_F(HostSyntheticTest, AnIdleBackendSleeps) {
  std::unique_ptr<VideoDecoder> a, b;
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(OpenTwoSessions(&a, &b, &pid));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const int64_t before = RunnerContextSwitches(pid);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const int64_t switches = RunnerContextSwitches(pid) - before;
  // The host's idle heartbeat (every 2 s) may fall in the second: a ping
  // and its answer on the control thread.
  EXPECT_LE(switches, 6) << "the idle runner's threads were switched in " << switches << " times in 1 s";
  // Still serving.
  EXPECT_TRUE(a->GetFrameAt(3).ok());
}

TEST_F(HostSyntheticTest, EveryAccessMethodReturnsTheRightFrames) {
  auto decoder = Open();
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  VideoDecoder& d = **decoder;
  auto one = d.GetFrameAt(7);
  ASSERT_TRUE(one.ok()) << one.status();
  ExpectFrame(*one, 7);
  EXPECT_TRUE(one->shared()) << "a single frame is a zero-copy view";

  auto last = d.GetFrameAt(-1);
  ASSERT_TRUE(last.ok()) << last.status();
  ExpectFrame(*last, 39);

  const int64_t indices[] = {5, 3, 5, 0, 39, 12, 12};
  auto many = d.GetFramesAt(indices);
  ASSERT_TRUE(many.ok()) << many.status();
  ASSERT_EQ(many->size(), 7u);
  for (size_t i = 0; i < 7; ++i) ExpectFrame((*many)[i], indices[i]);

  auto range = d.GetFramesInRange(2, 30, 3);
  ASSERT_TRUE(range.ok()) << range.status();
  ASSERT_EQ(range->size(), 10u);
  for (size_t i = 0; i < range->size(); ++i) ExpectFrame((*range)[i], 2 + 3 * static_cast<int64_t>(i));

  auto at = d.GetFramePlayedAt(1.26);  // frame 7 plays over [1.2, 1.3)
  ASSERT_TRUE(at.ok()) << at.status();
  ExpectFrame(*at, 7);

  const double times[] = {0.5, 4.45, 2.0};
  auto played = d.GetFramesPlayedAt(times);
  ASSERT_TRUE(played.ok()) << played.status();
  ExpectFrame((*played)[0], 0);
  ExpectFrame((*played)[1], 39);
  ExpectFrame((*played)[2], 15);

  auto span = d.GetFramesPlayedInRange(1.0, 1.55);
  ASSERT_TRUE(span.ok()) << span.status();
  ASSERT_EQ(span->size(), 6u);  // frames 5..10 start in [1.0, 1.55)
  for (size_t i = 0; i < span->size(); ++i) ExpectFrame((*span)[i], 5 + static_cast<int64_t>(i));
}

TEST_F(HostSyntheticTest, PlanarOutputIsTheTransposeOfInterleaved) {
  DecoderOptions options;
  options.output_format = OutputFormat::kRgb24Planar;
  auto decoder = Open(options);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  auto f = (*decoder)->GetFrameAt(3);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->num_planes(), 3u);
  EXPECT_EQ(f->plane(1)[5 * 32 + 9], testing::SyntheticPixel(3, 9, 5, 1));
  ExpectFrame(*f, 3, OutputFormat::kRgb24Planar);
}

TEST_F(HostSyntheticTest, BatchLargerThanTheArenaIsCopiedNotDeadlocked) {
  DecoderOptions options;
  options.arena_slots = 2;
  auto decoder = Open(options);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  auto all = (*decoder)->GetFramesInRange(0, 40);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 40u);
  for (size_t i = 0; i < all->size(); ++i) ExpectFrame((*all)[i], static_cast<int64_t>(i));
  EXPECT_TRUE(all->back().shared());
  EXPECT_FALSE(all->front().shared());
}

TEST_F(HostSyntheticTest, FramesKeptPastTheArenaBecomeCopiesAndCallsKeepWorking) {
  DecoderOptions options;
  options.arena_slots = 2;
  auto decoder = Open(options);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  std::vector<Frame> kept;
  for (int64_t i = 0; i < 6; ++i) {
    auto f = (*decoder)->GetFrameAt(i);
    ASSERT_TRUE(f.ok()) << "frame " << i << ": " << f.status();
    kept.push_back(*std::move(f));
  }
  EXPECT_TRUE(kept[0].shared()) << "the first frame fits in the arena and stays zero-copy";
  for (int64_t i = 1; i < 6; ++i) {
    EXPECT_FALSE(kept[i].shared()) << "frame " << i << " was copied to keep a slot free";
  }
  for (int64_t i = 0; i < 6; ++i) ExpectFrame(kept[i], i);
}

// With 2 slots, both held by the caller: the next frame is a clear error,
// and a slot given back lets it through.
void ExpectHoldingEverySlotIsAClearError(absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder) {
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  std::vector<Frame> kept;
  ASSERT_TRUE((*decoder)->ForEachFrame({ipc::IndexRange{0, 2, 1}}, [&](Frame f) {
    kept.push_back(std::move(f));
    return absl::OkStatus();
  }).ok());
  auto c = (*decoder)->GetFrameAt(2);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition) << c.status();
  EXPECT_NE(c.status().message().find("frame slots"), std::string::npos);
  kept[0].Detach();  // gives its slot back
  auto d = (*decoder)->GetFrameAt(2);
  ASSERT_TRUE(d.ok()) << d.status();
  ExpectFrame(*d, 2);
  ExpectFrame(kept[0], 0);  // still valid as a copy
  ExpectFrame(kept[1], 1);
}

TEST_F(HostSyntheticTest, ASinkHoldingEverySlotIsAClearErrorNotAHang) {
  DecoderOptions options;
  options.arena_slots = 2;
  ExpectHoldingEverySlotIsAClearError(Open(options));
}

TEST_F(HostSyntheticTest, StreamingKeepsMemoryBounded) {
  auto decoder = Open();
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  int64_t next = 0;
  absl::Status s = (*decoder)->ForEachFrame({ipc::IndexRange{0, 40, 1}}, [&](Frame f) {
    ExpectFrame(f, next++);
    return absl::OkStatus();
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(next, 40);
}

TEST_F(HostSyntheticTest, ErrorsNameTheFileAndLeaveTheDecoderUsable) {
  auto decoder = Open();
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  auto past = (*decoder)->GetFrameAt(40);
  ASSERT_EQ(past.status().code(), absl::StatusCode::kOutOfRange) << past.status();
  EXPECT_NE(past.status().message().find("clip.syn"), std::string::npos) << past.status();
  auto early = (*decoder)->GetFramePlayedAt(0.1);
  EXPECT_EQ(early.status().code(), absl::StatusCode::kOutOfRange) << early.status();
  auto bad_step = (*decoder)->GetFramesInRange(0, 10, 0);
  EXPECT_EQ(bad_step.status().code(), absl::StatusCode::kInvalidArgument) << bad_step.status();
  auto sink_error = (*decoder)->ForEachFrame({ipc::IndexRange{0, 10, 1}},
                                            [](Frame) { return absl::CancelledError("enough"); });
  EXPECT_EQ(sink_error.code(), absl::StatusCode::kCancelled);
  auto after = (*decoder)->GetFrameAt(9);
  ASSERT_TRUE(after.ok()) << after.status();
  ExpectFrame(*after, 9);
}

TEST_F(HostSyntheticTest, NotAVideoIsAClearOpenError) {
  DecoderOptions options;
  options.device = "synthetic";
  auto decoder = host_->OpenDecoder(WriteVideo("junk.bin", "not a video"), options);
  ASSERT_EQ(decoder.status().code(), absl::StatusCode::kDataLoss) << decoder.status();
  EXPECT_NE(decoder.status().message().find("junk.bin"), std::string::npos) << decoder.status();
  EXPECT_TRUE(Open().ok()) << "the backend still serves other files";
}

TEST_F(HostSyntheticTest, UnknownDeviceAndMissingFile) {
  DecoderOptions options;
  options.device = "acme:1";
  EXPECT_EQ(host_->OpenDecoder(video_, options).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(host_->OpenDecoder("/nonexistent.mp4").status().code(), absl::StatusCode::kNotFound);
}

// A FIFO with no writer once blocked open() forever; a folder or a pipe
// cannot be decoded (the backend reads at offsets): both are clear errors.
TEST_F(HostSyntheticTest, AFifoOrAFolderIsAnErrorNotAHang) {
  const std::string fifo = std::string(std::getenv("TEST_TMPDIR")) + "/clip.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  DecoderOptions options;
  options.device = "synthetic";
  for (const std::string& path : {fifo, std::string(std::getenv("TEST_TMPDIR"))}) {
    auto decoder = host_->OpenDecoder(path, options);
    ASSERT_EQ(decoder.status().code(), absl::StatusCode::kInvalidArgument) << path << ": " << decoder.status();
    EXPECT_NE(decoder.status().message().find("not a regular file"), std::string::npos) << decoder.status();
  }
}

// An index list must fit the 64 KiB request ring: a longer one goes in
// several requests. Sent whole, it once failed to send, and that failure
// was taken for a broken backend: killed twice and reported as poison.
TEST_F(HostSyntheticTest, ALongIndexListIsServedInSeveralRequests) {
  auto decoder = Open();
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  ASSERT_TRUE((*decoder)->GetFrameAt(0).ok());
  const pid_t pid = SyntheticPid(*host_);
  std::vector<int64_t> indices(10'000);
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int64_t>((i * 7) % 40);
  int64_t seen = 0;
  absl::Status s = (*decoder)->ForEachFrame({ipc::IndexList{indices}}, [&](Frame f) {
    if (f.index() != indices[static_cast<size_t>(seen)]) return absl::InternalError("wrong frame");
    if (seen % 997 == 0) ExpectFrame(f, f.index());
    ++seen;
    return absl::OkStatus();
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(seen, 10'000);
  std::vector<double> times(5'000);
  for (size_t i = 0; i < times.size(); ++i) times[i] = 0.5 + static_cast<double>(i % 40) / 10.0;
  auto played = (*decoder)->GetFramesPlayedAt(times);
  ASSERT_TRUE(played.ok()) << played.status();
  ASSERT_EQ(played->size(), times.size());
  EXPECT_EQ((*played)[4'099].index(), 4'099 % 40);
  EXPECT_EQ(SyntheticPid(*host_), pid) << "no restart";
}

// A range is not expanded into a list in the runner: with no frame count
// known its stop may be anywhere, and a step near INT64_MAX must not wrap.
TEST_F(HostSyntheticTest, ARangeFarPastAnUnknownEndStopsAtTheEnd) {
  const std::string unknown = WriteVideo("unknown.syn", "synthetic frames=40 width=32 height=24 fps=10 start=0.5 "
                                                        "count_unknown=1");
  DecoderOptions options;
  options.device = "synthetic";
  auto decoder = host_->OpenDecoder(unknown, options);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  EXPECT_EQ((*decoder)->metadata().num_frames_from_scan, -1);
  const pid_t pid = SyntheticPid(*host_);
  int64_t next = 0;
  absl::Status s = (*decoder)->ForEachFrame({ipc::IndexRange{0, int64_t{1} << 62, 1}}, [&](Frame f) {
    ExpectFrame(f, next++);
    return absl::OkStatus();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_EQ(next, 40) << "every frame up to the end, then the error";
  auto last = (*decoder)->GetFramesInRange(39, std::numeric_limits<int64_t>::max(),
                                           std::numeric_limits<int64_t>::max());
  ASSERT_TRUE(last.ok()) << last.status();
  ASSERT_EQ(last->size(), 1u);
  ExpectFrame((*last)[0], 39);
  EXPECT_EQ(SyntheticPid(*host_), pid) << "no restart";
}

// A sink that keeps every frame leaves the backend waiting for a slot: a
// clear error for the caller, not a hang that gets the backend killed.
TEST_F(HostSyntheticTest, ASinkKeepingEveryFrameIsAnErrorAndNoBackendIsKilled) {
  DecoderOptions options;
  options.arena_slots = 2;
  options.request_timeout = std::chrono::milliseconds(500);
  auto decoder = Open(options);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  ASSERT_TRUE((*decoder)->GetFrameAt(0).ok());
  const pid_t pid = SyntheticPid(*host_);
  std::vector<Frame> kept;
  absl::Status s = (*decoder)->ForEachFrame({ipc::IndexRange{0, 6, 1}}, [&](Frame f) {
    kept.push_back(std::move(f));
    return absl::OkStatus();
  });
  ASSERT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("frame slots were held"), std::string::npos) << s;
  ASSERT_EQ(kept.size(), 2u);
  ExpectFrame(kept[0], 0);
  ExpectFrame(kept[1], 1);
  EXPECT_EQ(SyntheticPid(*host_), pid) << "the backend was not to blame";
  kept.clear();
  auto after = (*decoder)->GetFramesInRange(2, 6);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), 4u);
  for (size_t i = 0; i < after->size(); ++i) ExpectFrame((*after)[i], 2 + static_cast<int64_t>(i));
  EXPECT_EQ(SyntheticPid(*host_), pid);
}

TEST_F(HostSyntheticTest, ManyDecodersFromManyThreads) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto decoder = Open();
      if (!decoder.ok()) {
        ADD_FAILURE() << decoder.status();
        return;
      }
      for (int i = 0; i < 10; ++i) {
        auto f = (*decoder)->GetFrameAt((t * 5 + i) % 40);
        if (!f.ok() || f->index() != (t * 5 + i) % 40 ||
            f->data()[0] != testing::SyntheticPixel(f->index(), 0, 0, 0)) {
          ADD_FAILURE() << "thread " << t << " frame " << i << ": " << f.status();
          return;
        }
      }
      ok.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8);
}

TEST_F(HostSyntheticTest, DestroyingTheHostStopsTheChild) {
  auto decoder = Open();
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  const pid_t pid = SyntheticPid(*host_);
  ASSERT_GT(pid, 0);
  host_.reset();
  EXPECT_EQ(kill(pid, 0), -1) << "the child was reaped";
  auto after = (*decoder)->GetFrameAt(1);
  EXPECT_EQ(after.status().code(), absl::StatusCode::kUnavailable) << after.status();
}

// The same paths with the table that asks for late frame buffers: the
// backend takes each frame's slot through cv_frame_buffer.acquire once the
// frame is decoded.
class LateBufferHostTest : public HostSyntheticTest {
 protected:
  void SetUp() override {
    HostSyntheticTest::SetUp();
    ASSERT_TRUE(host_->LoadBackend(Runfile("backends/testing/synthetic_late.toml")).ok());
  }

  absl::StatusOr<std::unique_ptr<VideoDecoder>> OpenLate(const std::string& extra, DecoderOptions options = {}) {
    options.device = "synthetic_late";
    return host_->OpenDecoder(
        WriteVideo("late.syn", "synthetic frames=40 width=32 height=24 fps=10 start=0.5 " + extra), options);
  }

  pid_t LatePid() const { return BackendPid(*host_, "synthetic_late"); }
};

TEST_F(LateBufferHostTest, EveryAccessMethodReturnsTheRightFrames) {
  auto decoder = OpenLate("");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  int64_t next = 0;
  ASSERT_TRUE((*decoder)->ForEachFrame({ipc::IndexRange{0, 40, 1}}, [&](Frame f) {
    ExpectFrame(f, next++);
    return absl::OkStatus();
  }).ok());
  EXPECT_EQ(next, 40);
  const int64_t wanted[] = {7, 3, 3, 39, 0};
  auto some = (*decoder)->GetFramesAt(wanted);
  ASSERT_TRUE(some.ok()) << some.status();
  ASSERT_EQ(some->size(), 5u);
  for (size_t i = 0; i < 5; ++i) ExpectFrame((*some)[i], wanted[i]);
}

TEST_F(LateBufferHostTest, ABatchLargerThanTheArenaWaitsForSlots) {
  DecoderOptions options;
  options.arena_slots = 2;
  auto decoder = OpenLate("", options);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  auto all = (*decoder)->GetFramesInRange(0, 40);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 40u);
  for (size_t i = 0; i < all->size(); ++i) ExpectFrame((*all)[i], static_cast<int64_t>(i));
}

TEST_F(LateBufferHostTest, ASinkHoldingEverySlotIsAClearErrorNotAHang) {
  DecoderOptions options;
  options.arena_slots = 2;
  ExpectHoldingEverySlotIsAClearError(OpenLate("", options));
}

TEST_F(LateBufferHostTest, AFrameReturnedWithoutItsBufferIsAnErrorAndTheSessionGoesOn) {
  auto decoder = OpenLate("late_skip=5");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  const pid_t pid = LatePid();
  ASSERT_GT(pid, 0);
  int64_t next = 0;
  absl::Status s = (*decoder)->ForEachFrame({ipc::IndexRange{0, 10, 1}}, [&](Frame f) {
    ExpectFrame(f, next++);
    return absl::OkStatus();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_NE(s.message().find("returned frame 5 without acquiring a buffer"), std::string::npos) << s;
  EXPECT_EQ(next, 5) << "the frames before the broken one arrive";
  auto after = (*decoder)->GetFramesInRange(6, 10);
  ASSERT_TRUE(after.ok()) << after.status();
  for (size_t i = 0; i < after->size(); ++i) ExpectFrame((*after)[i], 6 + static_cast<int64_t>(i));
  EXPECT_EQ(LatePid(), pid) << "a plugin's bad answer is an error, not a restart";
}

TEST_F(LateBufferHostTest, AcquiringAgainLendsTheSameSlot) {
  auto decoder = OpenLate("late_twice=1");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  auto all = (*decoder)->GetFramesInRange(0, 12);
  ASSERT_TRUE(all.ok()) << all.status();
  for (size_t i = 0; i < all->size(); ++i) ExpectFrame((*all)[i], static_cast<int64_t>(i));
}

// What late buffers are for: a caller that lets go of each frame before the
// next one is decoded (here 20 ms later) gets every frame in the same slot.
TEST_F(LateBufferHostTest, FramesLandInOneSlotWhenTheCallerLetsGoOfEach) {
  auto decoder = OpenLate("decode_ms=20");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  std::set<const uint8_t*> slots;
  int64_t next = 0;
  ASSERT_TRUE((*decoder)->ForEachFrame({ipc::IndexRange{0, 8, 1}}, [&](Frame f) {
    ExpectFrame(f, next++);
    slots.insert(f.data().data());
    return absl::OkStatus();
  }).ok());
  EXPECT_EQ(next, 8);
  EXPECT_EQ(slots.size(), 1u) << "frames were spread over " << slots.size() << " slots";
}

}  // namespace
}  // namespace codecvisor
