#include "tests/host_test_support.h"

#include <algorithm>
#include <vector>

#include "backends/testing/synthetic_pattern.h"
#include "tests/fault_test_support.h"

namespace codecvisor::testing {

using ::codecvisor::internal::Host;
using ::codecvisor::internal::HostOptions;
using ::codecvisor::internal::VideoDecoder;
using ::codecvisor::internal::DecoderOptions;
using ::codecvisor::internal::Frame;
using ::codecvisor::internal::OutputFormat;

InstallLayout TestLayout() {
  return InstallLayout{Runfile("backends/sdk/runner/codecvisor-backend"), Runfile("backends/cpu")};
}

pid_t BackendPid(const Host& host, const std::string& name) {
  for (const auto& backend : host.Backends()) {
    if (backend.name == name) return backend.pid;
  }
  return 0;
}

void HostSyntheticTest::SetUp() {
  HostOptions options;
  options.layout = TestLayout();
  auto host = Host::Create(options);
  ASSERT_TRUE(host.ok()) << host.status();
  host_ = *std::move(host);
  ASSERT_TRUE(host_->LoadBackend(Runfile("backends/testing/synthetic.toml")).ok());
  video_ = WriteFile("clip.syn", "synthetic frames=40 width=32 height=24 fps=10 start=0.5");
}

absl::StatusOr<std::unique_ptr<VideoDecoder>> HostSyntheticTest::Open(DecoderOptions options) {
  options.device = "synthetic";
  return host_->OpenDecoder(video_, options);
}

void HostSyntheticTest::OpenTwoSessions(std::unique_ptr<VideoDecoder>* a, std::unique_ptr<VideoDecoder>* b,
                                        pid_t* pid) {
  for (std::unique_ptr<VideoDecoder>* d : {a, b}) {
    auto decoder = Open();
    ASSERT_TRUE(decoder.ok()) << decoder.status();
    ASSERT_TRUE((*decoder)->GetFrameAt(1).ok());
    *d = *std::move(decoder);
  }
  *pid = SyntheticPid(*host_);
  ASSERT_GT(*pid, 0);
}

void ExpectFrame(const Frame& f, int64_t index, OutputFormat format) {
  ASSERT_EQ(f.index(), index);
  ASSERT_EQ(f.width(), 32u);
  ASSERT_EQ(f.height(), 24u);
  EXPECT_DOUBLE_EQ(f.pts_seconds(), 0.5 + index / 10.0);
  const SyntheticVideo v{.frames = 40, .width = 32, .height = 24, .fps = 10, .start = 0.5};
  std::vector<uint8_t> want(32 * 24 * 3);
  FillSyntheticFrame(v, static_cast<cv_output_format>(format), index, want.data());
  auto got = f.data();
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << "frame " << index << " bytes differ";
}

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

}  // namespace codecvisor::testing
