// Many decoders opening and open at once on one backend. More of them than
// the backend's address space holds sessions for (the manifest's
// memory_mb): the least recently used idle ones are parked (closed in the
// backend, re-opened on their next call), never the backend replaced with
// every session in it. Opens queued behind slow ones keep their timeout.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/testing/synthetic_pattern.h"
#include "tests/fault_test_support.h"

namespace codecvisor::testing {
namespace {

// A 1080p RGB frame is 6.2 MB: a session with the default 4 arena slots
// takes ~25 MB of the backend's address space, and a stack. 48 of them are
// about 1.6 GB, past a 1 GiB backend's limit.
constexpr int kDecoders = 48;

const SyntheticVideo kVideo{.frames = 12, .width = 1920, .height = 1080, .fps = 10, .start = 0};
constexpr char kVideoText[] = "synthetic frames=12 width=1920 height=1080 fps=10";

bool IsFrame(const Frame& frame, int64_t index) {
  if (frame.index() != index || frame.width() != kVideo.width || frame.height() != kVideo.height) return false;
  std::vector<uint8_t> want(size_t{kVideo.width} * kVideo.height * 3);
  FillSyntheticFrame(kVideo, CV_OUTPUT_RGB24, index, want.data());
  auto got = frame.data();
  return got.size() == want.size() && std::equal(got.begin(), got.end(), want.begin());
}

class ParkingTest : public FaultTest {
 protected:
  // The synthetic library under a manifest of its own whose backend may
  // map 1 GiB, in a host that loads no other.
  void LoadSmallBackend() {
    host_.reset();
    auto host = internal::Host::Create(options_);
    ASSERT_TRUE(host.ok()) << host.status();
    host_ = *std::move(host);
    const std::string manifest = WriteFile("small.toml", "name='synthetic'\ndevices=['synthetic']\nlibrary='" +
                                                             Runfile("backends/testing/libcodecvisor_synthetic.so") +
                                                             "'\nabi_version=1\n[sandbox]\nmemory_mb=1024\n");
    ASSERT_TRUE(host_->LoadBackend(manifest).ok());
  }
};

TEST_F(ParkingTest, DecodersPastTheBackendsAddressSpaceAreParkedNotTheBackendReplaced) {
  LoadSmallBackend();
  const std::string video = WriteFile("big.syn", kVideoText);
  std::vector<std::unique_ptr<VideoDecoder>> decoders;
  for (int i = 0; i < kDecoders; ++i) {
    auto decoder = Open(video, "synthetic");
    ASSERT_TRUE(decoder.ok()) << "decoder " << i << ": " << decoder.status();
    decoders.push_back(*std::move(decoder));
  }
  // In turn, twice: each call finds its session parked by the later ones.
  for (int64_t round = 0; round < 2; ++round) {
    for (size_t i = 0; i < decoders.size(); ++i) {
      const int64_t index = (round * 5 + static_cast<int64_t>(i)) % 12;
      absl::StatusOr<Frame> frame = decoders[i]->GetFrameAt(index);
      ASSERT_TRUE(frame.ok()) << "round " << round << ", decoder " << i << ": " << frame.status();
      EXPECT_TRUE(IsFrame(*frame, index)) << "round " << round << ", decoder " << i;
    }
  }
  const BackendStatus status = StatusOf("synthetic");
  EXPECT_EQ(status.restarts, 0u) << status.last_exit;
  EXPECT_GT(status.parked, 0u);
  EXPECT_EQ(status.sessions, kDecoders);
  for (const auto& decoder : decoders) EXPECT_EQ(decoder->retries(), 0u);
}

// A decoder whose session was parked re-opens it where it left off: the
// same metadata, frames still held from before stay valid.
TEST_F(ParkingTest, AParkedDecodersFramesOutliveItsSession) {
  LoadSmallBackend();
  const std::string video = WriteFile("big.syn", kVideoText);
  auto first = Open(video, "synthetic");
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<Frame> kept = (*first)->GetFrameAt(3);  // a view of the first session's arena
  ASSERT_TRUE(kept.ok()) << kept.status();
  std::vector<std::unique_ptr<VideoDecoder>> others;
  for (int i = 0; i < kDecoders && StatusOf("synthetic").parked == 0; ++i) {
    auto decoder = Open(video, "synthetic");
    ASSERT_TRUE(decoder.ok()) << "decoder " << i << ": " << decoder.status();
    others.push_back(*std::move(decoder));
  }
  ASSERT_GT(StatusOf("synthetic").parked, 0u) << "no session parked with " << kDecoders << " more decoders open";
  EXPECT_TRUE(IsFrame(*kept, 3));
  absl::StatusOr<Frame> again = (*first)->GetFrameAt(4);  // the least recently used: parked, re-opened
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(IsFrame(*again, 4));
  EXPECT_TRUE(IsFrame(*kept, 3));
  EXPECT_EQ((*first)->retries(), 0u);
  EXPECT_EQ(StatusOf("synthetic").restarts, 0u);
}

// An open the backend refuses for want of resources on its own account (the
// faulty backend's exhausted_open) parks a few idle sessions to make room,
// not every one, before the backend is replaced (review helper: with the
// parks unbounded, 20 idle decoders were all closed, each to be re-opened
// later): at most 4 for the open. The idle ones decode on one thread, so
// that their sessions fit the backend's budget and nothing else parks them.
TEST_F(FaultTest, AnOpenThatExhaustsTheBackendParksAFewSessionsNotAll) {
  DecoderOptions one_thread;
  one_thread.decoder_threads = 1;
  std::vector<std::unique_ptr<VideoDecoder>> idle;
  for (int i = 0; i < 20; ++i) {
    auto decoder = Open(WriteSyntheticVideo("idle.syn"), "faulty", one_thread);
    ASSERT_TRUE(decoder.ok()) << decoder.status();
    idle.push_back(*std::move(decoder));
  }
  auto exhausted = Open(WriteSyntheticVideo("exhausted.syn", "fault=exhausted_open"), "faulty");
  ASSERT_FALSE(exhausted.ok());
  EXPECT_NE(exhausted.status().message().find("poison"), std::string::npos) << exhausted.status();
  EXPECT_LE(StatusOf("faulty").parked, 4u);
  for (auto& decoder : idle) {
    absl::StatusOr<Frame> frame = decoder->GetFrameAt(1);
    ASSERT_TRUE(frame.ok()) << frame.status();
  }
}

// A sink that calls its own decoder gets an error (a decoder serves one
// call at a time), not a deadlock on the decoder's own lock.
TEST_F(FaultTest, ASinkCallingItsOwnDecoderIsAnErrorNotADeadlock) {
  auto decoder = Open(WriteSyntheticVideo("again.syn"), "synthetic");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  absl::Status inner;
  const absl::Status outer = (*decoder)->ForEachFrame({ipc::IndexRange{0, 2, 1}}, [&](Frame) {
    inner = (*decoder)->GetFrameAt(5).status();
    return absl::OkStatus();
  });
  EXPECT_TRUE(outer.ok()) << outer;
  EXPECT_EQ(inner.code(), absl::StatusCode::kFailedPrecondition) << inner;
  EXPECT_NE(inner.message().find("a frame sink called its own decoder"), std::string::npos) << inner;
  absl::StatusOr<Frame> after = (*decoder)->GetFrameAt(5);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(IsSyntheticFrame(*after, 5));
}

// Opens go to a backend one at a time (its main thread runs them); each
// one's open_timeout counts from when it is sent, not from when it joined
// the queue: four sound opens of 1 s each, from four threads at once, with
// a 2.5 s timeout, all succeed, and the backend is never killed for them
// (the last two used to be, and then judged poison).
TEST_F(FaultTest, AnOpenQueuedBehindSlowOnesHasItsWholeTimeout) {
  ASSERT_TRUE(Open(WriteSyntheticVideo("warm.syn"), "synthetic").ok());  // started: its start is not an open
  const std::string video = WriteSyntheticVideo("slow.syn", "open_ms=1000");
  DecoderOptions options;
  options.open_timeout = std::chrono::milliseconds(2500);
  std::vector<absl::Status> opened(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < opened.size(); ++i) {
    threads.emplace_back([&, i] { opened[i] = Open(video, "synthetic", options).status(); });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < opened.size(); ++i) EXPECT_TRUE(opened[i].ok()) << "open " << i << ": " << opened[i];
  const BackendStatus status = StatusOf("synthetic");
  EXPECT_EQ(status.restarts, 0u) << status.last_exit;
}

}  // namespace
}  // namespace codecvisor::testing
