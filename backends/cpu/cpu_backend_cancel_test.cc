// File: backends/cpu/cpu_backend_cancel_test.cc
//
// The cancel check (cv_open_options.cancel_check): a decode that reads
// many packets for one frame (a frame far from its key frame) asks before
// each packet and stops once the request is cancelled; the session then
// decodes every frame as a fresh one would, in both seek modes.

#include <cstddef>
#include <string>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

using testing::MakeVideo;
using testing::TestSession;

// A check as the runner lends one: `abi` first, so Cancelled finds the rest.
struct FakeCheck {
  cv_cancel_check abi{.cancelled = &Cancelled};
  int calls = 0;
  int cancel_at = -1;  // the call from which it says "cancelled"; -1: never

  static int32_t Cancelled(cv_cancel_check* self) {
    auto* check = reinterpret_cast<FakeCheck*>(self);
    ++check->calls;
    return check->cancel_at >= 0 && check->calls >= check->cancel_at ? 1 : 0;
  }
};
static_assert(offsetof(FakeCheck, abi) == 0);

// 120 frames with one key frame: frame 100 takes 101 packets to reach.
std::string LongGop() {
  return MakeVideo("long_gop.mp4",
                   "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 120 -c:v libx264 -g 1000 -bf 2 "
                   "-pix_fmt yuv420p");
}

class CancelTest : public ::testing::TestWithParam<int32_t> {
 protected:
  TestSession::Options Options(FakeCheck* check) const {
    TestSession::Options o;
    o.seek_mode = GetParam();
    o.decoder_threads = 1;
    o.cancel_check = &check->abi;
    return o;
  }
};

TEST_P(CancelTest, ADeepSeekStopsAtTheCheckAndTheSessionGoesOn) {
  FakeCheck check;
  TestSession s(LongGop(), Options(&check), "long_gop.mp4");
  ASSERT_TRUE(s.ok()) << s.open_message();
  TestSession fresh(LongGop(), Options(&check), "long_gop.mp4");
  ASSERT_TRUE(fresh.ok()) << fresh.open_message();
  check.calls = 0;

  check.cancel_at = 10;
  std::string pixels;
  std::string message;
  EXPECT_NE(s.Decode(100, &pixels, nullptr, &message), CV_OK) << "the decode did not stop";
  EXPECT_EQ(check.calls, 10) << "asked after it said cancelled, or never got that far";

  // Not cancelled: every frame as a fresh session decodes it, including
  // the one the cancelled call was on its way to, and frames before it.
  check.cancel_at = -1;
  for (int64_t index : {100, 101, 3, 60}) {
    SCOPED_TRACE(index);
    std::string again;
    std::string expected;
    ASSERT_EQ(s.Decode(index, &again), CV_OK);
    ASSERT_EQ(fresh.Decode(index, &expected), CV_OK);
    EXPECT_TRUE(again == expected);
  }
  EXPECT_GT(check.calls, 100) << "a deep seek asks once a packet";
}

TEST_P(CancelTest, AFrameAtATimeStopsToo) {
  FakeCheck check;
  TestSession s(LongGop(), Options(&check), "long_gop.mp4");
  ASSERT_TRUE(s.ok()) << s.open_message();
  check.calls = 0;
  check.cancel_at = 5;
  std::string pixels;
  EXPECT_NE(s.DecodeAt(4.0, &pixels), CV_OK);
  EXPECT_EQ(check.calls, 5);
  check.cancel_at = -1;
  cv_frame_info info{};
  ASSERT_EQ(s.DecodeAt(4.0, &pixels, &info), CV_OK);
  EXPECT_EQ(info.index, 100);
}

TEST_P(CancelTest, NoCheckNoStop) {
  TestSession::Options o;
  o.seek_mode = GetParam();
  TestSession s(LongGop(), o, "long_gop.mp4");
  ASSERT_TRUE(s.ok()) << s.open_message();
  std::string pixels;
  EXPECT_EQ(s.Decode(100, &pixels), CV_OK);
}

INSTANTIATE_TEST_SUITE_P(SeekModes, CancelTest, ::testing::Values(CV_SEEK_EXACT, CV_SEEK_APPROXIMATE),
                         [](const ::testing::TestParamInfo<int32_t>& info) {
                           return info.param == CV_SEEK_EXACT ? std::string("Exact") : std::string("Approximate");
                         });

}  // namespace
}  // namespace codecvisor::cpu
