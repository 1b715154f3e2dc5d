// File: backends/cpu/picture_pool_test.cc
//
// Frames decoded straight into the runner's frame pool (picture_pool.h),
// through the cpu backend's C ABI in process, with a fake pool that keeps
// the runner's rules (a slot is borrowed by the decoder, held by the host
// once lent, and reusable only when both let go): on every unrotated video
// of the catalogue, the frames equal the CLI's in the decoder's format,
// whether they were lent in place or copied, and every borrow ends by the
// time the session closes.

#include "backends/cpu/picture_pool.h"

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/session.h"
#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

extern "C" {
#include <libavutil/cpu.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

namespace codecvisor::cpu {
namespace {

using testing::CliAllFrames;
using testing::TestSession;
using testing::TestVideo;
using testing::TestVideoPath;

// The runner's frame pool as the vendor sees it, with the host's side
// played by the test: Release() is the host letting a lent frame go.
class FakePool {
 public:
  FakePool(size_t slots, size_t bytes) : bytes_(bytes) {
    for (size_t i = 0; i < slots; ++i) {
      slots_.push_back({static_cast<uint8_t*>(std::aligned_alloc(4096, bytes)), false, false});
    }
  }
  ~FakePool() {
    for (Slot& s : slots_) std::free(s.data);
  }
  cv_frame_pool* abi() { return &abi_; }

  bool IsSlot(const uint8_t* data) const { return Find(data) != nullptr; }
  void Release(const uint8_t* data) {
    std::lock_guard<std::mutex> lock(mu_);
    if (Slot* s = Find(data)) s->held = false;
  }
  size_t borrowed() const {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const Slot& s : slots_) n += s.borrowed;
    return n;
  }
  int lends() const { return lends_; }
  int refused_lends() const { return refused_lends_; }

 private:
  struct Slot {
    uint8_t* data;
    bool borrowed;
    bool held;  // lent to the host and not yet released
  };
  Slot* Find(const uint8_t* data) const {
    for (const Slot& s : slots_) {
      if (s.data == data) return const_cast<Slot*>(&s);
    }
    return nullptr;
  }
  static FakePool* From(cv_frame_pool* self) { return reinterpret_cast<FakePool*>(self); }
  static uint8_t* Borrow(cv_frame_pool* self, uint64_t* capacity) {
    FakePool* p = From(self);
    std::lock_guard<std::mutex> lock(p->mu_);
    for (Slot& s : p->slots_) {
      if (!s.borrowed && !s.held) {
        s.borrowed = true;
        *capacity = p->bytes_;
        return s.data;
      }
    }
    return nullptr;
  }
  static void GiveBack(cv_frame_pool* self, uint8_t* data) {
    FakePool* p = From(self);
    std::lock_guard<std::mutex> lock(p->mu_);
    Slot* s = p->Find(data);
    ASSERT_NE(s, nullptr) << "gave back an address the pool never lent";
    ASSERT_TRUE(s->borrowed) << "gave back a slot twice";
    s->borrowed = false;
  }
  static cv_status Lend(cv_frame_pool* self, cv_frame_buffer* buffer, uint8_t* data, cv_error* error) {
    FakePool* p = From(self);
    std::lock_guard<std::mutex> lock(p->mu_);
    Slot* s = p->Find(data);
    if (s == nullptr || !s->borrowed || s->held) {
      ++p->refused_lends_;
      std::snprintf(error->message, sizeof(error->message), "not lendable");
      return CV_ERROR_INVALID_ARGUMENT;
    }
    s->held = true;
    buffer->data = data;
    buffer->capacity = p->bytes_;
    ++p->lends_;
    return CV_OK;
  }

  cv_frame_pool abi_{&FakePool::Borrow, &FakePool::GiveBack, &FakePool::Lend};  // first
  size_t bytes_;
  mutable std::mutex mu_;
  std::vector<Slot> slots_;
  int lends_ = 0;
  int refused_lends_ = 0;
};

// A late buffer whose acquire() lends the test's copy buffer.
struct LateBuffer {
  cv_frame_buffer buffer{};
  std::vector<uint8_t>* copy = nullptr;
};
cv_status AcquireCopy(cv_frame_buffer* b, cv_error*) {
  auto* late = reinterpret_cast<LateBuffer*>(b);
  b->data = late->copy->data();
  b->capacity = late->copy->size();
  return CV_OK;
}

// The visible planes of a frame at `layout`, tightly packed, as the CLI's
// rawvideo output has them.
std::string Visible(const uint8_t* frame, const cv_frame_layout& layout) {
  const AVPixelFormat format = av_get_pix_fmt(layout.pixel_format);
  int tight[4] = {};
  EXPECT_GE(av_image_fill_linesizes(tight, format, static_cast<int>(layout.width)), 0);
  std::string out;
  for (uint32_t p = 0; p < layout.num_planes; ++p) {
    for (uint32_t row = 0; row < layout.plane_rows[p]; ++row) {
      const uint8_t* start = frame + layout.plane_offset[p] + uint64_t{row} * layout.plane_stride[p];
      out.append(reinterpret_cast<const char*>(start), static_cast<size_t>(tight[p]));
    }
  }
  return out;
}

class PicturePoolTest : public ::testing::TestWithParam<TestVideo> {
 protected:
  // The catalogue's videos are small: with frame threads they would come
  // as RGB (kFrameThreadedNativeMinPixels), and these tests are about the
  // pool, frame threads included.
  void SetUp() override { SetFrameThreadedNativeMinPixelsForTest(0); }
  void TearDown() override { SetFrameThreadedNativeMinPixelsForTest(kFrameThreadedNativeMinPixels); }

  // Opens the video asking for RGB, with its own pixel format offered
  // natively and `pool` as the frame pool.
  std::unique_ptr<TestSession> Open(FakePool* pool, uint32_t threads = 0) {
    TestSession probe(TestVideoPath(GetParam()));
    EXPECT_TRUE(probe.ok()) << probe.open_message();
    format_ = probe.Metadata().pixel_format;
    TestSession::Options o;
    o.stream_index = GetParam().stream;
    o.decoder_threads = threads;
    o.native_formats = format_.c_str();
    o.frame_pool = pool != nullptr ? pool->abi() : nullptr;
    return std::make_unique<TestSession>(TestVideoPath(GetParam()), o);
  }
  // Decodes frame `index` as the runner does for a late-buffer backend.
  // Returns its visible bytes; `*slot` is the pool slot it came in, or
  // nullptr for a copy.
  std::string Decode(TestSession& s, FakePool& pool, int64_t index, const uint8_t** slot) {
    std::vector<uint8_t> copy(s.Layout().size + CV_BUFFER_PADDING);
    LateBuffer late;
    late.buffer.acquire = &AcquireCopy;
    late.copy = &copy;
    cv_error error{};
    cv_frame_info info{};
    const cv_status st = codecvisor_backend_v1()->decode_frame(s.get(), index, &late.buffer, &info, &error);
    EXPECT_EQ(st, CV_OK) << "frame " << index << ": " << error.message;
    *slot = nullptr;
    if (st != CV_OK) return "";
    if (pool.IsSlot(late.buffer.data)) *slot = late.buffer.data;
    return Visible(late.buffer.data, s.Layout());
  }
  // Every frame of the video as the CLI decodes it, in the decoder's format.
  std::vector<std::string> CliFrames(int64_t n) {
    const std::string all = CliAllFrames(TestVideoPath(GetParam()), GetParam().stream, "format=" + format_);
    const size_t bytes = all.size() / static_cast<size_t>(n);
    EXPECT_EQ(all.size(), bytes * n);
    std::vector<std::string> frames;
    for (int64_t i = 0; i < n; ++i) frames.push_back(all.substr(i * bytes, bytes));
    return frames;
  }
  std::string format_;
};

TEST_P(PicturePoolTest, FramesLentInPlaceAreTheDecodersFrames) {
  const TestVideo& video = GetParam();
  FakePool pool(16, 16 << 20);
  {
    // 3 frame threads (not the machine's count): with the pictures the
    // decoder keeps, fewer than the pool's 16 are ever out at once.
    std::unique_ptr<TestSession> s = Open(&pool, /*threads=*/3);
    ASSERT_TRUE(s->ok()) << s->open_message();
    const cv_frame_layout layout = s->Layout();
    ASSERT_EQ(layout.format, CV_OUTPUT_NATIVE);
    for (uint32_t p = 0; p < layout.num_planes; ++p) {
      EXPECT_EQ(layout.plane_stride[p] % kPictureAlign, 0u) << "plane " << p;
      EXPECT_EQ(layout.plane_offset[p] % kPictureAlign, 0u) << "plane " << p;
      if (p + 1 < layout.num_planes) {
        EXPECT_LE(layout.plane_offset[p] + uint64_t{layout.plane_stride[p]} * layout.plane_rows[p],
                  layout.plane_offset[p + 1]);
      }
    }
    const int64_t n = s->Metadata().num_frames_from_scan;
    const std::vector<std::string> want = CliFrames(n);
    ASSERT_EQ(static_cast<int64_t>(want.size()), n);
    // Sequentially, the host letting each frame go once it has the next;
    // then at random (seeks drop the decoder's pictures and take new ones).
    std::vector<int64_t> order;
    for (int64_t i = 0; i < n; ++i) order.push_back(i);
    for (int64_t i : {n - 1, int64_t{0}, n / 2, n / 3, n - 2}) order.push_back(i);
    int in_place = 0;
    const uint8_t* held = nullptr;
    for (int64_t i : order) {
      const uint8_t* slot = nullptr;
      std::string got = Decode(*s, pool, i, &slot);
      ASSERT_TRUE(got == want[i]) << video.name << ": frame " << i << (slot ? " (in place)" : " (copied)");
      if (held != nullptr) pool.Release(held);
      held = slot;
      in_place += slot != nullptr;
    }
    EXPECT_EQ(pool.lends(), in_place);
    EXPECT_EQ(FramesLentInPlaceForTest(s->get()), in_place);
    const PicturePool* pictures = PicturesForTest(s->get());
    ASSERT_NE(pictures, nullptr);
    if (std::string(video.name).rfind("h264", 0) == 0 || std::string(video.name).rfind("hevc", 0) == 0) {
      EXPECT_GT(pictures->pooled_pictures(), 0u) << "H.264 and HEVC decoders take their pictures from the pool";
    }
    // Frames the host still held from the random-access pass were not rewritten.
    if (held != nullptr) EXPECT_TRUE(Visible(held, s->Layout()) == want[order.back()]);
    if (pictures->pooled_pictures() > 0) {
      EXPECT_GT(in_place, static_cast<int>(order.size()) / 2)
          << "pictures came from the pool, so most frames should be lent in place";
    }
  }
  EXPECT_EQ(pool.borrowed(), 0u) << "every borrow ends by the time the session closes";
}

// A host that keeps every frame: the pool runs dry, the decoder takes its
// pictures from its own memory, and those frames are copied, still exact.
TEST_P(PicturePoolTest, AHostThatKeepsEveryFrameGetsCopies) {
  const TestVideo& video = GetParam();
  FakePool pool(4, 16 << 20);
  {
    std::unique_ptr<TestSession> s = Open(&pool, /*threads=*/1);
    ASSERT_TRUE(s->ok()) << s->open_message();
    const int64_t n = s->Metadata().num_frames_from_scan;
    const std::vector<std::string> want = CliFrames(n);
    int copied = 0;
    std::vector<std::pair<const uint8_t*, int64_t>> held;  // lent slots, all still held
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* slot = nullptr;
      ASSERT_TRUE(Decode(*s, pool, i, &slot) == want[i]) << video.name << ": frame " << i;
      copied += slot == nullptr;
      if (slot != nullptr) held.emplace_back(slot, i);
    }
    EXPECT_LE(pool.lends(), 4) << "a slot the host holds is never lent again";
    EXPECT_GE(copied, n - 4);
    // Nothing the decoder did afterwards touched a frame the host holds.
    for (const auto& [slot, i] : held) {
      EXPECT_TRUE(Visible(slot, s->Layout()) == want[i]) << video.name << ": held frame " << i << " changed";
    }
  }
  EXPECT_EQ(pool.borrowed(), 0u);
}

// Without a pool (a runner from before it), native frames keep the tight
// layout of `ffmpeg -f rawvideo`.
TEST_P(PicturePoolTest, WithoutAPoolTheLayoutIsTight) {
  std::unique_ptr<TestSession> s = Open(nullptr);
  ASSERT_TRUE(s->ok()) << s->open_message();
  const cv_frame_layout l = s->Layout();
  ASSERT_EQ(l.format, CV_OUTPUT_NATIVE);
  int tight[4] = {};
  ASSERT_GE(av_image_fill_linesizes(tight, av_get_pix_fmt(l.pixel_format), static_cast<int>(l.width)), 0);
  uint64_t end = 0;
  for (uint32_t p = 0; p < l.num_planes; ++p) {
    EXPECT_EQ(l.plane_stride[p], static_cast<uint32_t>(tight[p]));
    EXPECT_EQ(l.plane_offset[p], end);
    end += uint64_t{l.plane_stride[p]} * l.plane_rows[p];
  }
  EXPECT_EQ(l.size, end);
  EXPECT_EQ(PicturesForTest(s->get()), nullptr);
}

// Offered to convert native frames itself, the host gets them unless the
// decoder runs frame threads on frames below kFrameThreadedNativeMinPixels:
// then RGB, the frames an RGB-only session sends.
TEST(FrameThreadedNativeTest, SmallFramesOnFrameThreadsComeAsRgb) {
  const std::string path = TestVideoPath(testing::FindTestVideo("h264.mp4"));
  TestSession rgb(path);
  ASSERT_TRUE(rgb.ok()) << rgb.open_message();
  const cv_stream_metadata m = rgb.Metadata();
  const int64_t pixels = int64_t{m.width} * m.height;
  ASSERT_LT(pixels, kFrameThreadedNativeMinPixels);
  struct Case {
    uint32_t threads;
    int64_t bound;
    int32_t format;
  };
  for (const Case& c : {Case{1, kFrameThreadedNativeMinPixels, CV_OUTPUT_NATIVE},
                        Case{2, kFrameThreadedNativeMinPixels, CV_OUTPUT_RGB24},
                        // Automatic: the machine's count plus one, frame threads but on one CPU.
                        Case{0, kFrameThreadedNativeMinPixels, av_cpu_count() > 1 ? CV_OUTPUT_RGB24 : CV_OUTPUT_NATIVE},
                        Case{2, pixels + 1, CV_OUTPUT_RGB24},
                        Case{2, pixels, CV_OUTPUT_NATIVE}}) {
    SCOPED_TRACE(::testing::Message() << c.threads << " threads, bound " << c.bound);
    SetFrameThreadedNativeMinPixelsForTest(c.bound);
    TestSession::Options o;
    o.decoder_threads = c.threads;
    o.native_formats = m.pixel_format;
    TestSession s(path, o);
    SetFrameThreadedNativeMinPixelsForTest(kFrameThreadedNativeMinPixels);
    ASSERT_TRUE(s.ok()) << s.open_message();
    EXPECT_EQ(s.Layout().format, c.format);
    if (c.format == CV_OUTPUT_RGB24) {
      for (int64_t i : {0, 5}) EXPECT_TRUE(s.DecodeOrFail(i) == rgb.DecodeOrFail(i)) << "frame " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Catalogue, PicturePoolTest, ::testing::ValuesIn([] {
                           std::vector<TestVideo> unrotated;
                           for (const TestVideo& v : testing::TestVideos()) {
                             if (std::string(v.name).find("rotation") == std::string::npos) unrotated.push_back(v);
                           }
                           return unrotated;
                         }()),
                         [](const ::testing::TestParamInfo<TestVideo>& info) { return testing::TestName(info.param); });

}  // namespace
}  // namespace codecvisor::cpu
