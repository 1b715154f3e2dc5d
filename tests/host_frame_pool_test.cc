// The frame pool (ipc/README.md) through the real runner and the cpu
// backend: native frames arrive in pool slots, decoded there with no copy,
// and are the same frames, byte for byte, as with the pool turned off
// (CODECVISOR_FRAME_POOL_SLOTS=0, every frame copied into a copy slot);
// sessions that get RGB, or native frames they asked for, have no pool.

#include <stdlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/host.h"
#include "tests/test_paths.h"
#include "tools/common/test_video.h"

namespace codecvisor::testing {
namespace {

using ::codecvisor::internal::DecoderOptions;
using ::codecvisor::internal::Host;
using ::codecvisor::internal::HostOptions;
using ::codecvisor::internal::Frame;
using ::codecvisor::internal::VideoDecoder;

class HostFramePoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HostOptions options;
    options.layout = InstallLayout{Runfile("backends/sdk/runner/codecvisor-backend"), Runfile("backends/cpu")};
    auto host = Host::Create(options);
    ASSERT_TRUE(host.ok()) << host.status();
    host_ = *std::move(host);
    // As large as frame-threaded sessions get native frames from
    // (kFrameThreadedNativeMinPixels in backends/cpu/session.h).
    video_ = MakeVideo("pool.mp4", "960x540", 60);
  }
  void TearDown() override { unsetenv("CODECVISOR_FRAME_POOL_SLOTS"); }

  // H.264 with B-frames (the decoder keeps references and reorders) of
  // `size` and `frames`, in the test's temporary folder.
  static std::string MakeVideo(const std::string& name, const std::string& size, int frames) {
    const std::string path = TempPath(name);
    EXPECT_TRUE(tools::MakeTestVideo("-f lavfi -i testsrc2=size=" + size + ":rate=25 -frames:v " +
                                         std::to_string(frames) +
                                         " -c:v libx264 -preset veryfast -bf 3 -g 20 -pix_fmt yuv420p",
                                     path)
                    .ok());
    return path;
  }

  struct Seen {
    std::vector<std::string> visible;  // each frame's visible rows, tight
    int in_pool = 0;                    // frames that came in a pool slot
  };
  // Every frame, native (the caller converts yuv420p), each let go before
  // the next arrives, with `pool_slots` in CODECVISOR_FRAME_POOL_SLOTS.
  Seen Decode(const char* pool_slots, uint32_t threads) {
    setenv("CODECVISOR_FRAME_POOL_SLOTS", pool_slots, 1);
    DecoderOptions options;
    options.device = "cpu";
    options.decoder_threads = threads;
    options.native_formats = {"yuv420p"};
    auto decoder = host_->OpenDecoder(video_, options);
    Seen seen;
    EXPECT_TRUE(decoder.ok()) << decoder.status();
    if (!decoder.ok()) return seen;
    absl::Status s = (*decoder)->ForEachFrame({ipc::IndexRange{0, 60, 1}}, [&](Frame f) {
      EXPECT_EQ(f.format(), ipc::OutputFormat::kNative);
      std::string visible;
      for (size_t p = 0; p < f.num_planes(); ++p) {
        const uint32_t row_bytes = p == 0 ? f.width() : (f.width() + 1) / 2;
        const uint32_t rows = p == 0 ? f.height() : (f.height() + 1) / 2;
        for (uint32_t r = 0; r < rows; ++r) {
          visible.append(reinterpret_cast<const char*>(f.plane(p).data()) + size_t{r} * f.stride(p), row_bytes);
        }
      }
      seen.visible.push_back(std::move(visible));
      if (f.slot().has_value() && *f.slot() >= options.arena_slots) ++seen.in_pool;
      return absl::OkStatus();
    });
    EXPECT_TRUE(s.ok()) << s;
    return seen;
  }

  std::unique_ptr<Host> host_;
  std::string video_;
};

TEST_F(HostFramePoolTest, NativeFramesAreDecodedInPlaceAndEqualCopiedOnes) {
  for (uint32_t threads : {1u, 0u}) {
    SCOPED_TRACE(threads);
    const Seen pooled = Decode("16", threads);
    const Seen copied = Decode("0", threads);
    ASSERT_EQ(pooled.visible.size(), 60u);
    ASSERT_EQ(copied.visible.size(), 60u);
    EXPECT_EQ(copied.in_pool, 0) << "no pool: every frame in a copy slot";
    // How many depends on how far the backend runs ahead of this caller
    // (it copies once the pool is dry), but the first picture always
    // finds the pool empty.
    EXPECT_GE(pooled.in_pool, 1) << "no frame was decoded in place";
    for (size_t i = 0; i < 60; ++i) EXPECT_TRUE(pooled.visible[i] == copied.visible[i]) << "frame " << i;
  }
}

// Small frames from a frame-threaded decoder come as RGB, offered native or
// not (kFrameThreadedNativeMinPixels in backends/cpu/session.h), with no
// pool; a one-thread session of the same video gets native frames, in place.
TEST_F(HostFramePoolTest, SmallFrameThreadedFramesComeAsRgb) {
  const std::string small = MakeVideo("small.mp4", "176x144", 20);
  for (uint32_t threads : {2u, 1u}) {
    SCOPED_TRACE(threads);
    DecoderOptions options;
    options.device = "cpu";
    options.decoder_threads = threads;
    options.native_formats = {"yuv420p"};
    auto decoder = host_->OpenDecoder(small, options);
    ASSERT_TRUE(decoder.ok()) << decoder.status();
    int frames = 0, in_pool = 0;
    ASSERT_TRUE((*decoder)->ForEachFrame({ipc::IndexRange{0, 20, 1}}, [&](Frame f) {
      ++frames;
      EXPECT_EQ(f.format(), threads == 1 ? ipc::OutputFormat::kNative : ipc::OutputFormat::kRgb24);
      in_pool += f.slot().value_or(0) >= options.arena_slots;
      return absl::OkStatus();
    }).ok());
    EXPECT_EQ(frames, 20);
    if (threads == 1) {
      EXPECT_GE(in_pool, 1) << "native frames are decoded in place";
    } else {
      EXPECT_EQ(in_pool, 0) << "RGB sessions have no pool";
    }
  }
}

// Frames converted in the backend, and native frames a caller asked for
// (it gets them as they are laid out), come in copy slots only.
TEST_F(HostFramePoolTest, OnlyNativeFramesForAnRgbCallerUseThePool) {
  for (ipc::OutputFormat format : {ipc::OutputFormat::kRgb24, ipc::OutputFormat::kNative}) {
    DecoderOptions options;
    options.device = "cpu";
    options.output_format = format;
    auto decoder = host_->OpenDecoder(video_, options);
    ASSERT_TRUE(decoder.ok()) << decoder.status();
    int in_pool = 0, frames = 0;
    ASSERT_TRUE((*decoder)->ForEachFrame({ipc::IndexRange{0, 20, 1}}, [&](Frame f) {
      ++frames;
      EXPECT_EQ(f.format(), format);
      in_pool += f.slot().value_or(0) >= options.arena_slots;
      return absl::OkStatus();
    }).ok());
    EXPECT_EQ(frames, 20);
    EXPECT_EQ(in_pool, 0);
  }
}

}  // namespace
}  // namespace codecvisor::testing
