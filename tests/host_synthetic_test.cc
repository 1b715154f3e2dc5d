// The whole host path against a real child process, with the synthetic
// backend so that every received byte can be checked: Host -> runner spawn
// -> dlopen -> handshake -> open (fd over SCM_RIGHTS) -> session channel ->
// frames in the arena -> Frame views. The runner's threads and the late
// frame buffers have suites of their own (host_runner_threads_test,
// host_late_buffer_test); the fixture is in host_test_support.h.

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "backends/testing/synthetic_pattern.h"
#include "core/host.h"
#include "tests/fault_test_support.h"
#include "tests/host_test_support.h"

namespace codecvisor::testing {

using ::codecvisor::internal::BackendStatus;
using ::codecvisor::internal::DecoderOptions;
using ::codecvisor::internal::Frame;
using ::codecvisor::internal::HostOptions;
using ::codecvisor::internal::OutputFormat;
using ::codecvisor::internal::VideoDecoder;
namespace {

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
  EXPECT_EQ(f->plane(1)[5 * 32 + 9], SyntheticPixel(3, 9, 5, 1));
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
  auto decoder = host_->OpenDecoder(WriteFile("junk.bin", "not a video"), options);
  ASSERT_EQ(decoder.status().code(), absl::StatusCode::kDataLoss) << decoder.status();
  EXPECT_NE(decoder.status().message().find("junk.bin"), std::string::npos) << decoder.status();
  EXPECT_TRUE(Open().ok()) << "the backend still serves other files";
}

// The longest open answer a backend may give: the most streams a file may
// list (1024), each with the longest codec name. It went over the control
// channel, whose ring held 8 KiB a message: the runner could not send it and
// exited, every open of such a file counted as a crash, and after a few the
// backend was quarantined for the process (a valid 300-stream Matroska file
// did it to the cpu backend).
TEST_F(HostSyntheticTest, AFileWithTheMostStreamsOpens) {
  DecoderOptions options;
  options.device = "synthetic";
  auto decoder = host_->OpenDecoder(WriteFile("streams.syn",
                                              "synthetic frames=40 width=32 height=24 fps=10 start=0.5 "
                                              "streams=1024"),
                                    options);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  const auto& streams = (*decoder)->metadata().streams;
  ASSERT_EQ(streams.size(), 1024u);
  EXPECT_EQ(streams[1023].index, 1023);
  EXPECT_EQ(streams[1023].codec.size(), 63u) << streams[1023].codec;
  absl::StatusOr<Frame> frame = (*decoder)->GetFrameAt(3);
  ASSERT_TRUE(frame.ok()) << frame.status();
  ExpectFrame(*frame, 3);
  for (const BackendStatus& b : host_->Backends()) {
    if (b.name == "synthetic") EXPECT_EQ(b.restarts, 0u);
  }
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

// SECURITY: a path to one of the kernel's files (a dataset's symlink to
// /proc/self/mem would hand the backend this process's memory) is refused
// before any backend sees it.
TEST_F(HostSyntheticTest, AKernelFileIsNeverGivenToABackend) {
  DecoderOptions options;
  options.device = "synthetic";
  const std::string link = std::string(std::getenv("TEST_TMPDIR")) + "/clip.mp4";
  ASSERT_EQ(symlink("/proc/self/mem", link.c_str()), 0);
  for (const std::string& path : {std::string("/proc/self/mem"), std::string("/proc/self/environ"), link}) {
    auto decoder = host_->OpenDecoder(path, options);
    ASSERT_EQ(decoder.status().code(), absl::StatusCode::kInvalidArgument) << path << ": " << decoder.status();
    EXPECT_NE(decoder.status().message().find("one of the kernel's, in /proc or /sys"), std::string::npos)
        << decoder.status();
  }
}

// Naming a manifest the host has already (discovered, or loaded before),
// by its path or through a symlink, loads nothing twice and is no error;
// another file claiming the same name still is.
TEST_F(HostSyntheticTest, LoadingALoadedManifestAgainIsANoOp) {
  const std::string manifest = Runfile("backends/testing/synthetic.toml");
  EXPECT_TRUE(host_->LoadBackend(manifest).ok());
  const std::string link = TempPath("again.toml");
  ASSERT_EQ(symlink(manifest.c_str(), link.c_str()), 0);
  EXPECT_TRUE(host_->LoadBackend(link).ok());
  int listed = 0;
  for (const BackendStatus& b : host_->Backends()) listed += b.name == "synthetic";
  EXPECT_EQ(listed, 1);
  std::ifstream in(manifest);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  absl::Status copy = host_->LoadBackend(WriteFile("copy.toml", text));
  EXPECT_EQ(copy.code(), absl::StatusCode::kAlreadyExists) << copy;
  auto decoder = Open();
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  EXPECT_TRUE((*decoder)->GetFrameAt(1).ok());
}

// A device from CODECVISOR_DEFAULT_DEVICE that nothing serves: the error
// says where the name came from (the caller never gave one); and a
// malformed CODECVISOR_* variable is among the host's warnings.
TEST(HostEnvironmentTest, TheDefaultDevicesSourceAndMalformedVariablesAreNamed) {
  setenv("CODECVISOR_DEFAULT_DEVICE", "cpu0", 1);
  setenv("CODECVISOR_BACKEND_LOG_LEVEL", "warn", 1);
  HostOptions options;
  options.layout = TestLayout();
  auto host = Host::Create(options);
  unsetenv("CODECVISOR_DEFAULT_DEVICE");
  unsetenv("CODECVISOR_BACKEND_LOG_LEVEL");
  ASSERT_TRUE(host.ok()) << host.status();
  auto decoder = (*host)->OpenDecoder(WriteFile("env.syn", "synthetic frames=4 width=32 height=24 fps=10"));
  ASSERT_EQ(decoder.status().code(), absl::StatusCode::kNotFound) << decoder.status();
  EXPECT_TRUE(absl::StartsWith(decoder.status().message(), "CODECVISOR_DEFAULT_DEVICE='cpu0', the default device: "))
      << decoder.status();
  const std::vector<std::string>& warnings = (*host)->warnings();
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.starts_with("CODECVISOR_BACKEND_LOG_LEVEL='warn' is not one of quiet, ");
  })) << ::testing::PrintToString(warnings);
}

// An empty file (a download that never started) is named as such, not
// left to the backend, which can only say it cannot read it.
TEST_F(HostSyntheticTest, AnEmptyFileIsNamedEmpty) {
  DecoderOptions options;
  options.device = "synthetic";
  auto decoder = host_->OpenDecoder(WriteFile("empty.syn", ""), options);
  ASSERT_EQ(decoder.status().code(), absl::StatusCode::kInvalidArgument) << decoder.status();
  EXPECT_NE(decoder.status().message().find("empty.syn: the file is empty (0 bytes)"), std::string::npos)
      << decoder.status();
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
  const std::string unknown = WriteFile("unknown.syn", "synthetic frames=40 width=32 height=24 fps=10 start=0.5 "
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

// A sink that throws (std::bad_alloc as a batch grows) gets its exception
// back once the request is drained: the next request finds the session in
// step, and the backend is neither killed nor the request replayed.
TEST_F(HostSyntheticTest, ASinkThatThrowsGetsItsExceptionAndNoBackendIsKilled) {
  auto decoder = Open();
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  ASSERT_TRUE((*decoder)->GetFrameAt(0).ok());
  const pid_t pid = SyntheticPid(*host_);
  for (int round = 0; round < 3; ++round) {
    int seen = 0;
    EXPECT_THROW((void)(*decoder)->ForEachFrame({ipc::IndexRange{0, 30, 1}},
                                                [&](Frame) -> absl::Status {
                                                  if (++seen == 3) throw std::bad_alloc();
                                                  return absl::OkStatus();
                                                }),
                 std::bad_alloc);
    EXPECT_EQ(seen, 3) << "no frame after the exception";
    auto after = (*decoder)->GetFramesInRange(5, 9);
    ASSERT_TRUE(after.ok()) << after.status();
    ASSERT_EQ(after->size(), 4u);
    for (size_t i = 0; i < after->size(); ++i) ExpectFrame((*after)[i], 5 + static_cast<int64_t>(i));
  }
  EXPECT_EQ(SyntheticPid(*host_), pid) << "the backend was not to blame";
  EXPECT_EQ((*decoder)->retries(), 0u);
}

// A sink that ends its thread (pthread_exit, a cancellation) unwinds it:
// the unwind is not an exception to hold and rethrow (glibc aborts the
// process if one is swallowed). The decoder goes on serving others.
TEST_F(HostSyntheticTest, ASinkThatEndsItsThreadEndsOnlyTheThread) {
  auto decoder = Open();
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  int seen = 0;
  std::thread ending([&] {
    (void)(*decoder)->ForEachFrame({ipc::IndexRange{0, 30, 1}}, [&](Frame) -> absl::Status {
      if (++seen == 2) pthread_exit(nullptr);
      return absl::OkStatus();
    });
    ADD_FAILURE() << "the thread went on after pthread_exit";
  });
  ending.join();
  EXPECT_EQ(seen, 2);
  auto after = (*decoder)->GetFramesInRange(5, 9);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), 4u);
  for (size_t i = 0; i < after->size(); ++i) ExpectFrame((*after)[i], 5 + static_cast<int64_t>(i));
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
            f->data()[0] != SyntheticPixel(f->index(), 0, 0, 0)) {
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
  // Said as what happened, not as an exit that was not recorded.
  EXPECT_NE(after.status().message().find("is shut down: its host was destroyed"), std::string::npos)
      << after.status();
}

}  // namespace
}  // namespace codecvisor::testing
