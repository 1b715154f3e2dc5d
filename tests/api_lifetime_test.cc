// The public C++ API's lifetimes, threads and fork, end to end on the
// synthetic backend in a real child: frames that outlive their decoder and
// Host, zero copy until detached, calls that overlap on one decoder, and a
// child forked with the parent's objects.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/api_host_test_fixture.h"

namespace codecvisor {
namespace {

using testing::Runfile;

// A child forked from a process with a Host, a decoder and a frame on an
// arena slot: its calls on them fail (they are the parent's, over the
// parent's channel), it can make a Host of its own, and it leaves by
// returning, destroying what it inherited, without waiting on the parent's
// threads or touching the parent's channel: the parent decodes on, with
// no restart. Before, the child hung in the inherited Host's destructor
// and the parent's next request timed out.
TEST_F(ApiHostTest, AForkedChildLeavesItsParentsObjectsAlone) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  auto held = d->GetFrameAt(3);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  const int status = ExitStatusInChild([&] {
    int code = 0;
    {
      std::unique_ptr<Host> inherited = std::move(host_);
      std::unique_ptr<VideoDecoder> decoder = std::move(d);
      Frame frame = *std::move(held);
      if (decoder->GetFrameAt(1).status().code() != StatusCode::kFailedPrecondition) code |= 1;
      if (inherited->OpenDecoder(clip_, DecoderOptions{.device = "synthetic"}).status().code() !=
          StatusCode::kFailedPrecondition) {
        code |= 2;
      }
      // Nothing read behind locks the parent's threads may have held.
      if (!inherited->Backends().empty() || !inherited->warnings().empty()) code |= 32;
      frame.Detach();  // a copy; the slot stays the parent's
      if (frame.shared() || frame.data().size() != kWidth * kHeight * 3) code |= 4;
      HostOptions options;
      options.backend_path = {Runfile("backends/testing")};
      auto own = Host::Create(options);
      if (!own.ok()) {
        code |= 8;
      } else {
        auto mine = (*own)->OpenDecoder(clip_, DecoderOptions{.device = "synthetic"});
        if (!mine.ok() || !(*mine)->GetFrameAt(2).ok()) code |= 16;
      }
    }  // everything inherited is destroyed here, as a return from main would
    return code;
  });
  EXPECT_EQ(status, 0) << "1: a call on the parent's decoder, 2: on its Host, 4: Detach, 8/16: a Host of its own, "
                          "32: Backends() or warnings() read, 128+: a signal";
  ExpectFrame(*held, 3);
  for (int64_t i : {10, 0, 39}) {
    auto f = d->GetFrameAt(i);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ExpectFrame(*f, i);
  }
  EXPECT_EQ(d->retries(), 0u);
}

// One decoder called from four threads at once (documented misuse) and
// from its own ForEachFrame sink: each call is either served whole or
// refused with kFailedPrecondition; before, the threads' requests shared
// the channel and the process crashed (SIGSEGV in the ring) or the
// backend was killed as malformed.
TEST_F(ApiHostTest, ACallWhileAnotherIsInProgressIsRefused) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  std::atomic<int> served{0}, refused{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 50; ++k) {
        const int64_t i = (t * 7 + k) % 40;
        auto f = d->GetFramesInRange(i, std::min<int64_t>(i + 3, 40));
        if (f.ok()) {
          ++served;
          if (f->empty() || (*f)[0].index() != i) ++wrong;
        } else if (f.status().code() == StatusCode::kFailedPrecondition) {
          ++refused;
        } else {
          ++wrong;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(served.load() + refused.load(), 200);
  EXPECT_GT(served.load(), 0);
  EXPECT_EQ(d->retries(), 0u);
  Status inner;
  Status outer = d->ForEachFrame(FrameSelection::InRange(0, 2), [&](Frame) {
    inner = d->GetFrameAt(5).status();
    return Status();
  });
  EXPECT_TRUE(outer.ok()) << outer.ToString();
  EXPECT_EQ(inner.code(), StatusCode::kFailedPrecondition);
  auto after = d->GetFrameAt(5);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  ExpectFrame(*after, 5);
}

TEST_F(ApiHostTest, AFrameHasNoPlanePastItsLastAndTimeoutsArePositive) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  auto f = d->GetFrameAt(1);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->num_planes(), 1u);
  EXPECT_TRUE(f->plane(1).empty());
  EXPECT_EQ(f->stride(7), 0u);
  const Frame empty;
  EXPECT_TRUE(empty.plane(0).empty());
  for (auto [request, open] : {std::pair{0, 1000}, std::pair{1000, 0}, std::pair{-5, 1000}}) {
    DecoderOptions options;
    options.device = "synthetic";
    options.request_timeout = std::chrono::milliseconds(request);
    options.open_timeout = std::chrono::milliseconds(open);
    EXPECT_EQ(host_->OpenDecoder(clip_, options).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(host_->StartBackend("synthetic", std::chrono::milliseconds(-5)).code(), StatusCode::kInvalidArgument);
}

// milliseconds::max() is "no limit", taken as a long one: a deadline of now
// plus it overflowed into the past, and the backend was killed at once.
TEST_F(ApiHostTest, TheLongestTimeoutsWaitAndKillNothing) {
  ASSERT_TRUE(host_->StartBackend("synthetic", std::chrono::milliseconds::max()).ok());
  DecoderOptions options;
  options.device = "synthetic";
  options.request_timeout = std::chrono::milliseconds::max();
  options.open_timeout = std::chrono::milliseconds::max();
  auto d = host_->OpenDecoder(clip_, options);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  auto frames = (*d)->GetFramesInRange(0, 5);
  ASSERT_TRUE(frames.ok()) << frames.status().ToString();
  EXPECT_EQ(frames->size(), 5u);
  EXPECT_EQ((*d)->retries(), 0u);
  for (const BackendInfo& b : host_->Backends()) {
    if (b.name == "synthetic") EXPECT_EQ(b.restarts, 0u);
  }
}

TEST_F(ApiHostTest, FramesAreZeroCopyUntilDetached) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  auto f = d->GetFrameAt(3);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->shared());
  Frame copy = f->CopyOut();
  EXPECT_FALSE(copy.shared());
  ExpectFrame(copy, 3);
  f->Detach();
  EXPECT_FALSE(f->shared());
  ExpectFrame(*f, 3);
  Frame moved = std::move(*f);
  ExpectFrame(moved, 3);
}

TEST_F(ApiHostTest, AFrameOutlivesItsDecoderAndHost) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  auto f = d->GetFrameAt(11);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(f->shared());
  d.reset();
  host_.reset();  // stops the backend's process
  ExpectFrame(*f, 11);
}

// A sink that destroys its own decoder: the call ends cancelled and the
// session closes once it does (the request loop read the freed decoder's
// channel before: SIGSEGV).
TEST_F(ApiHostTest, ASinkMayDestroyItsOwnDecoder) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  int frames = 0;
  std::optional<Frame> kept;
  Status status = d->ForEachFrame(FrameSelection::InRange(0, 20), [&](Frame f) {
    ++frames;
    kept = std::move(f);
    d.reset();
    return Status();
  });
  EXPECT_EQ(status.code(), StatusCode::kCancelled) << status.ToString();
  EXPECT_EQ(frames, 1);
  ASSERT_TRUE(kept.has_value());
  ExpectFrame(*kept, 0);
  for (const BackendInfo& b : host_->Backends()) EXPECT_EQ(b.sessions, 0) << b.name;
  auto again = Open();
  ASSERT_NE(again, nullptr);
  auto f = again->GetFrameAt(7);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ExpectFrame(*f, 7);
  EXPECT_EQ(again->retries(), 0u);
  // Destroyed by the sink of the last frame: cancelled too.
  frames = 0;
  status = again->ForEachFrame(FrameSelection::InRange(0, 3), [&](Frame) {
    if (++frames == 3) again.reset();
    return Status();
  });
  EXPECT_EQ(status.code(), StatusCode::kCancelled) << status.ToString();
  EXPECT_EQ(frames, 3);
}

// A sink that destroys its decoder and then the Host (whose end the call
// sees next, as kUnavailable): cancelled too, or the sink's own error.
TEST_F(ApiHostTest, ASinkMayDestroyItsDecoderAndItsHost) {
  for (const bool sink_fails : {false, true}) {
    auto d = Open();
    ASSERT_NE(d, nullptr);
    std::optional<Frame> kept;
    Status status = d->ForEachFrame(FrameSelection::InRange(0, 20), [&](Frame f) {
      kept = std::move(f);
      d.reset();
      host_.reset();
      return sink_fails ? Status(StatusCode::kAborted, "the sink's own") : Status();
    });
    EXPECT_EQ(status.code(), sink_fails ? StatusCode::kAborted : StatusCode::kCancelled) << status.ToString();
    ASSERT_TRUE(kept.has_value());
    ExpectFrame(*kept, 0);
    SetUp();  // a Host again, for the next round and TearDown
  }
}

// Memory refused below the half a batch may take (an address-space limit
// the process's own data mostly fills) is kResourceExhausted, and the
// decoder goes on; std::bad_alloc came out of GetFramesInRange before. In
// a child of its own, whose address space is limited.
TEST_F(ApiHostTest, ABatchRefusedMemoryIsAStatusNotAnException) {
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer's shadow memory fits under no address-space limit (the plain run checks this)";
#endif
  const std::string big = testing::WriteFile("big.syn", "synthetic frames=100 width=1024 height=1024 fps=10");
  const int status = ExitStatusInChild([&] {
    HostOptions options;
    options.backend_path = {Runfile("backends/testing")};
    auto host = Host::Create(options);
    if (!host.ok()) return 10;
    auto d = (*host)->OpenDecoder(big, DecoderOptions{.device = "synthetic"});
    if (!d.ok() || !(*d)->GetFrameAt(0).ok()) return 11;
    // The process's own data: 1 GiB of address space. Then room for about
    // 32 more frames of 3 MiB, where 64 are asked for (192 MiB, under half
    // the limit).
    constexpr size_t kOwn = size_t{1} << 30, kRoom = size_t{96} << 20;
    if (mmap(nullptr, kOwn, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) == MAP_FAILED) return 12;
    std::ifstream statm("/proc/self/statm");
    size_t pages = 0;
    if (!(statm >> pages)) return 13;
    const rlimit limit{pages * sysconf(_SC_PAGESIZE) + kRoom, RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &limit) != 0) return 14;
    int code = 0;
    try {
      auto frames = (*d)->GetFramesInRange(0, 64);
      if (frames.ok() || frames.status().code() != StatusCode::kResourceExhausted ||
          frames.status().message().find("out of memory keeping the request's frames") == std::string::npos) {
        code |= 1;
      }
    } catch (...) {
      code |= 2;
    }
    auto after = (*d)->GetFrameAt(5);
    if (!after.ok() || after->index() != 5) code |= 4;
    return code;
  });
  EXPECT_EQ(status, 0) << "1: not kResourceExhausted out of memory, 2: an exception, 4: the next call failed, "
                          "10-14: set-up, 128+: a signal";
}

TEST_F(ApiHostTest, ADecoderOutlivingItsHostFailsAsUnavailable) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  host_.reset();
  auto f = d->GetFrameAt(1);
  EXPECT_EQ(f.status().code(), StatusCode::kUnavailable) << f.status().ToString();
}

// A host started with stdin, stdout and stderr closed (a daemon, `2>&-`):
// its first descriptors would take 0-2, and a write to stderr anywhere in
// A child that exits as a program does (exit(), not _exit()) while its
// parent's backend runs: nothing the host allocated may look leaked there,
// where the host's threads do not exist (LeakSanitizer, in the ASan
// configuration, ends such a child with its own exit code).
TEST_F(ApiHostTest, AForkedChildExitsCleanlyWithItsParentsHostRunning) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(d->GetFrameAt(0).ok());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) std::exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "child status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's exit reported a problem (a leak report, under ASan)";
}

// the process (the host's warnings, a backend's relayed output, the user's
// logging) went into one of them: the backend read its control socket's
// garbage as a forged message and was restarted. The host fills them with
// /dev/null before it opens anything.
TEST_F(ApiHostTest, AHostStartedWithStdioClosedKeepsItsDescriptorsOffThem) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = 0;
    {
      host_.reset();
      close(0);
      close(1);
      close(2);
      HostOptions options;
      options.backend_path = {testing::Runfile("backends/testing")};
      auto host = Host::Create(options);
      if (!host.ok()) _exit(1);
      auto d = (*host)->OpenDecoder(clip_, DecoderOptions{.device = "synthetic"});
      if (!d.ok()) _exit(2);
      for (int fd = 0; fd <= 2; ++fd) {
        struct stat st {};
        if (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode) || major(st.st_rdev) != 1 || minor(st.st_rdev) != 3) {
          code |= 4;
        }
        // What any stderr or stdout writer in the process might send.
        constexpr char kNoise[] = "\x01\x02noise written to a standard stream\n";
        (void)!write(fd, kNoise, sizeof(kNoise));
      }
      for (int64_t i : {0, 7, 39, 3}) {
        auto f = (*d)->GetFrameAt(i);
        if (!f.ok() || f->index() != i) code |= 8;
      }
      if ((*d)->retries() != 0) code |= 16;
      for (const BackendInfo& b : (*host)->Backends()) {
        if (b.name == "synthetic" && b.restarts != 0) code |= 32;
      }
    }
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "child status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: Host::Create, 2: open, 4: 0-2 not /dev/null, 8: a frame, 16: retried, "
                                       "32: the backend restarted";
}

// A call waiting on a backend whose decode hangs (its heartbeats still
// answered) ends soon after its `interrupted` flag is set, with kCancelled:
// not after the request timeout, a kill and a replay. The backend, given
// 1 s to stop, is killed once as hung; the frames before the hang reach the
// sink, and the decoder goes on on the new backend.
TEST_F(ApiHostTest, AnInterruptedCallEndsWithoutWaitingForAHungBackend) {
  const std::string hang = testing::WriteFile(
      "hang.syn", "synthetic frames=40 width=32 height=24 fps=10 decode_ms=5 fault=hang fault_frame=20");
  DecoderOptions options{.device = "faulty"};
  options.request_timeout = std::chrono::seconds(60);
  auto d = host_->OpenDecoder(hang, options);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  std::atomic<bool> interrupted{false};
  std::atomic<int64_t> delivered{0};
  // Once frame 19 has arrived, the backend is in frame 20's hang.
  std::thread interrupter([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (delivered.load() < 20 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    interrupted.store(true);
  });
  const Status s = (*d)->ForEachFrame(
      FrameSelection::InRange(0, 40),
      [&](Frame f) {
        EXPECT_EQ(f.index(), delivered.load());
        ++delivered;
        return Status();
      },
      interrupted);
  interrupter.join();
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  EXPECT_EQ(delivered.load(), 20) << "the frames before the hang";
  EXPECT_EQ((*d)->retries(), 0u) << "the interrupted request was replayed";
  for (const BackendInfo& b : host_->Backends()) {
    if (b.name != "faulty") continue;
    EXPECT_EQ(b.restarts, 1u) << "the hung backend was not killed once, as hung";
    // Killed for the grace after the Cancel, not the request's 60 s.
    EXPECT_NE(b.last_exit.find("no answer within 1000 ms of a Cancel sent for an interrupt"), std::string::npos)
        << b.last_exit;
    EXPECT_EQ(b.last_exit.find("60000"), std::string::npos) << b.last_exit;
  }
  interrupted.store(false);
  auto f = (*d)->GetFrameAt(3);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->index(), 3);
}

}  // namespace
}  // namespace codecvisor
