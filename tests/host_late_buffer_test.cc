// The host path with the synthetic table that asks for late frame buffers
// (backends/sdk/README.md, "Frame buffers"): the backend takes each frame's
// slot through cv_frame_buffer.acquire once the frame is decoded.

#include <gtest/gtest.h>
#include <sys/types.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "core/host.h"
#include "tests/fault_test_support.h"
#include "tests/host_test_support.h"

namespace codecvisor::testing {

using ::codecvisor::internal::VideoDecoder;
using ::codecvisor::internal::DecoderOptions;
using ::codecvisor::internal::Frame;
namespace {

class LateBufferHostTest : public HostSyntheticTest {
 protected:
  void SetUp() override {
    HostSyntheticTest::SetUp();
    ASSERT_TRUE(host_->LoadBackend(Runfile("backends/testing/synthetic_late.toml")).ok());
  }

  absl::StatusOr<std::unique_ptr<VideoDecoder>> OpenLate(const std::string& extra, DecoderOptions options = {}) {
    options.device = "synthetic_late";
    return host_->OpenDecoder(
        WriteFile("late.syn", "synthetic frames=40 width=32 height=24 fps=10 start=0.5 " + extra), options);
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
// next one is decoded gets every frame in the same slot. The backend waits
// to acquire frame i's buffer until the caller has appended a byte to the
// video's file (late_gate), which it does once it has let go of frame i - 1.
TEST_F(LateBufferHostTest, FramesLandInOneSlotWhenTheCallerLetsGoOfEach) {
  auto decoder = OpenLate("late_gate=1");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  std::ofstream gate(TempPath("late.syn"), std::ios::app);
  std::set<const uint8_t*> slots;
  int64_t next = 0;
  absl::Status s = (*decoder)->ForEachFrame({ipc::IndexRange{0, 8, 1}}, [&](Frame f) {
    {
      const Frame mine = std::move(f);
      ExpectFrame(mine, next++);
      slots.insert(mine.data().data());
    }
    gate << '\n' << std::flush;
    return absl::OkStatus();
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(next, 8);
  EXPECT_EQ(slots.size(), 1u) << "frames were spread over " << slots.size() << " slots";
}

}  // namespace
}  // namespace codecvisor::testing
