// More decoders open at once than their backend's address space holds
// sessions for (the manifest's memory_mb): the least recently used idle
// ones are parked (closed in the backend, re-opened on their next call),
// never the backend replaced with every session in it.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
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

}  // namespace
}  // namespace codecvisor::testing
