// A call interrupted while the backend decodes one long frame: the runner
// hands the cancel to the plugin through cv_cancel_check, the plugin stops,
// and the call ends with kCancelled on the same backend process, which
// goes on serving (the synthetic backend's decode_ms sleep asks the check
// every millisecond). A backend that did not stop would be killed as hung
// one second after the cancel (api_lifetime_test).

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "tests/api_host_test_fixture.h"

namespace codecvisor {
namespace {

// Runs `call` with an interrupt flag that is set after 100 ms.
Status Interrupted(const std::function<Status(const std::atomic<bool>&)>& call) {
  std::atomic<bool> interrupted{false};
  std::thread interrupter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    interrupted.store(true);
  });
  const Status s = call(interrupted);
  interrupter.join();
  return s;
}

TEST_F(ApiHostTest, AnInterruptStopsALongFrameWithoutReplacingTheBackend) {
  // Each frame takes 50 s to decode unless the request is cancelled.
  const std::string slow =
      testing::WriteFile("slow.syn", "synthetic frames=40 width=32 height=24 fps=10 start=0.5 decode_ms=50000");
  DecoderOptions options{.device = "synthetic"};
  options.request_timeout = std::chrono::seconds(60);
  auto d = host_->OpenDecoder(slow, options);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  int frames = 0;
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    const Status s = Interrupted([&](const std::atomic<bool>& flag) {
      return (*d)->ForEachFrame(
          FrameSelection::AtIndices({round == 0 ? 7 : 30}),
          [&](Frame) {
            ++frames;
            return Status();
          },
          flag);
    });
    EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  }
  EXPECT_EQ(frames, 0);
  EXPECT_EQ((*d)->retries(), 0u);
  for (const BackendInfo& b : host_->Backends()) {
    if (b.name != "synthetic") continue;
    EXPECT_EQ(b.restarts, 0u) << "the backend was replaced: " << b.last_exit;
    EXPECT_EQ(b.last_exit, "");
  }
  // The same backend serves a quick decoder.
  auto quick = Open();
  ASSERT_NE(quick, nullptr);
  auto f = quick->GetFrameAt(3);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ExpectFrame(*f, 3);
  for (const BackendInfo& b : host_->Backends()) {
    if (b.name == "synthetic") EXPECT_EQ(b.restarts, 0u) << b.last_exit;
  }
}

}  // namespace
}  // namespace codecvisor
