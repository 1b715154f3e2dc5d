// RgbConverter on frames whose records a backend could have written: real
// arena slots, frame records claimed by the host as any backend's are, and
// every number in them that the converter must not trust.

#include "codecvisor/rgb_converter.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "api/frame_impl.h"
#include "gtest/gtest.h"
#include "ipc/frame_arena.h"
#include "ipc/region.h"

namespace codecvisor {
namespace {

constexpr uint32_t kW = 64, kH = 48;
constexpr uint64_t kLuma = kW * kH, kChroma = (kW / 2) * (kH / 2);

StreamMetadata Stream() {
  StreamMetadata m;
  m.width = kW;
  m.height = kH;
  m.pixel_format = "yuv420p";
  m.color_space = "bt709";
  m.color_range = "tv";
  return m;
}

// A yuv420p frame laid out as the cpu backend lays it out: Y, U, V planes
// packed one after another from the slot's start.
ipc::FrameRef Yuv420p(uint32_t slot) {
  ipc::FrameRef f;
  f.slot = slot;
  f.size = kLuma + 2 * kChroma;
  f.width = kW;
  f.height = kH;
  f.format = ipc::OutputFormat::kNative;
  f.pixel_format = "yuv420p";
  f.planes = {{0, kW, kH}, {kLuma, kW / 2, kH / 2}, {kLuma + kChroma, kW / 2, kH / 2}};
  return f;
}

class RgbConverterFramesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto region = ipc::Region::Create({4096, 4096, 8, ipc::Geometry::SlotBytesFor(kLuma * 3)});
    ASSERT_TRUE(region.ok()) << region.status();
    region_ = std::make_shared<ipc::Region>(*std::move(region));
    arena_ = std::make_shared<ipc::HostArena>(region_);
    for (uint32_t s = 0; s < 8; ++s) {
      // White in limited range: Y 235, U = V = 128.
      std::memset(region_->slot(s), 235, kLuma);
      std::memset(region_->slot(s) + kLuma, 128, 2 * kChroma);
    }
  }

  // The frame the host makes of `ref` once it has claimed it (validated).
  Frame Claimed(const ipc::FrameRef& ref) {
    const absl::Status claimed = arena_->Claim(ref);
    EXPECT_TRUE(claimed.ok()) << claimed;
    return api::FrameAccess::Wrap(internal::Frame(ipc::FrameLease(arena_, ref)));
  }

  std::shared_ptr<ipc::Region> region_;
  std::shared_ptr<ipc::HostArena> arena_;
};

TEST_F(RgbConverterFramesTest, AnHonestFrameConvertsFromItsPlanes) {
  RgbConverter rgb(Stream());
  std::vector<uint8_t> out(kLuma * 3 + RgbConverter::kSlack, 7);
  ASSERT_TRUE(rgb.Convert(Claimed(Yuv420p(0)), OutputFormat::kRgb24, out).ok());
  for (size_t i = 0; i < kLuma * 3; ++i) ASSERT_EQ(out[i], 255) << i;
  // Rows padded past their width (stride > row) are read at their stride.
  ipc::FrameRef padded = Yuv420p(1);
  padded.planes = {{0, kW + 16, kH}, {(kW + 16) * kH, kW / 2, kH / 2}, {(kW + 16) * kH + kChroma, kW / 2, kH / 2}};
  padded.size = (kW + 16) * kH + 2 * kChroma;
  std::memset(region_->slot(1), 235, (kW + 16) * kH);
  std::memset(region_->slot(1) + (kW + 16) * kH, 128, 2 * kChroma);
  std::vector<uint8_t> planar(kLuma * 3, 7);
  ASSERT_TRUE(rgb.Convert(Claimed(padded), OutputFormat::kRgb24Planar, planar).ok());
  for (size_t i = 0; i < kLuma * 3; ++i) ASSERT_EQ(planar[i], 255) << i;
}

// The caller's mistake is the caller's error, not the backend's DataLoss.
TEST_F(RgbConverterFramesTest, AnEmptyFrameIsTheCallersError) {
  RgbConverter rgb(Stream());
  std::vector<uint8_t> out(kLuma * 3 + RgbConverter::kSlack, 7);
  const Status s = rgb.Convert(Frame(), OutputFormat::kRgb24, out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(out[0], 7) << "nothing written";
}

TEST_F(RgbConverterFramesTest, ABackendsLiesAreDataLossAndWriteNothing) {
  struct Lie {
    const char* what;
    void (*apply)(ipc::FrameRef&);
  };
  const Lie lies[] = {
      {"a luma plane a row short", [](ipc::FrameRef& f) { f.planes[0].rows = kH - 1; }},
      {"a chroma plane a row short", [](ipc::FrameRef& f) { f.planes[2].rows = kH / 2 - 1; }},
      {"a luma stride narrower than a row", [](ipc::FrameRef& f) { f.planes[0].stride = kW - 1; }},
      {"a chroma stride narrower than a row", [](ipc::FrameRef& f) { f.planes[1].stride = kW / 2 - 1; }},
      {"two planes", [](ipc::FrameRef& f) { f.planes.pop_back(); }},
      {"another pixel format", [](ipc::FrameRef& f) { f.pixel_format = "nv12"; }},
      {"another size", [](ipc::FrameRef& f) { f.width = kW - 2; }},
      {"RGB for a native stream",
       [](ipc::FrameRef& f) {
         f.format = ipc::OutputFormat::kRgb24;
         f.pixel_format = "rgb24";
         f.planes = {{0, kW * 3, kH}};
         f.size = kLuma * 3;
       }},
  };
  RgbConverter rgb(Stream());
  uint32_t slot = 0;
  for (const Lie& lie : lies) {
    ipc::FrameRef ref = Yuv420p(slot++);
    lie.apply(ref);
    std::vector<uint8_t> out(kLuma * 3 + RgbConverter::kSlack, 7);
    const Status s = rgb.Convert(Claimed(ref), OutputFormat::kRgb24, out);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << lie.what << ": " << s.ToString();
    EXPECT_EQ(out, std::vector<uint8_t>(kLuma * 3 + RgbConverter::kSlack, 7)) << lie.what;
  }
}

}  // namespace
}  // namespace codecvisor
