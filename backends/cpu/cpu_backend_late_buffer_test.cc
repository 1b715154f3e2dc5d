// File: backends/cpu/cpu_backend_late_buffer_test.cc
//
// Late frame buffers (cv_frame_buffer.acquire): the cpu backend asks for
// its output buffer only once a frame is decoded, once, never for a
// request that fails first, and treats a refused or too small buffer as
// an error after which the session goes on.

#include <cstddef>
#include <cstdio>
#include <string>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

using testing::CliFrame;
using testing::GoodMp4;
using testing::TestSession;


// A late buffer as a runner lends one: `buffer` first, so Acquire finds
// the rest from the pointer decode_frame passes it.
struct LateBuffer {
  cv_frame_buffer buffer{.data = nullptr, .capacity = 0, .acquire = &Acquire};
  std::string pixels;
  int calls = 0;
  cv_status refuse = CV_OK;  // what Acquire returns instead of lending

  static cv_status Acquire(cv_frame_buffer* b, cv_error* error) {
    auto* self = reinterpret_cast<LateBuffer*>(b);
    ++self->calls;
    if (self->refuse != CV_OK) {
      std::snprintf(error->message, sizeof(error->message), "every slot is held by the caller");
      return self->refuse;
    }
    b->data = reinterpret_cast<uint8_t*>(self->pixels.data());
    b->capacity = self->pixels.size();
    return CV_OK;
  }
};
static_assert(offsetof(LateBuffer, buffer) == 0);

TEST(LateBufferTest, TheTableAsksForLateBuffers) {
  const cv_backend_v1* t = codecvisor_backend_v1();
  EXPECT_GE(t->struct_size, offsetof(cv_backend_v1, late_frame_buffer) + sizeof(int32_t));
  EXPECT_NE(t->late_frame_buffer, 0);
}

TEST(LateBufferTest, AcquiredOnceAfterDecodingWithTheSameBytes) {
  TestSession s(GoodMp4(), TestSession::Options(), "good.mp4");
  ASSERT_TRUE(s.ok()) << s.open_message();
  const uint64_t size = s.Layout().size;
  for (int64_t index : {0, 1, 2, 17, 5, 39}) {
    LateBuffer late;
    late.pixels.assign(size + CV_BUFFER_PADDING, '\xAB');
    cv_frame_info info{};
    cv_error error{};
    ASSERT_EQ(codecvisor_backend_v1()->decode_frame(s.get(), index, &late.buffer, &info, &error), CV_OK)
        << error.message;
    EXPECT_EQ(late.calls, 1) << "frame " << index;
    EXPECT_EQ(info.index, index);
    EXPECT_TRUE(late.pixels.substr(0, size) == s.DecodeOrFail(index)) << "frame " << index << " differs";
  }
}

TEST(LateBufferTest, NoBufferIsTakenForARequestThatFailsFirst) {
  TestSession s(GoodMp4(), TestSession::Options(), "good.mp4");
  ASSERT_TRUE(s.ok()) << s.open_message();
  LateBuffer late;
  late.pixels.assign(s.Layout().size + CV_BUFFER_PADDING, '\0');
  cv_error error{};
  EXPECT_EQ(codecvisor_backend_v1()->decode_frame(s.get(), 40, &late.buffer, nullptr, &error),
            CV_ERROR_OUT_OF_RANGE);
  EXPECT_EQ(late.calls, 0);
}

TEST(LateBufferTest, ARefusedBufferIsAnErrorAndTheSessionGoesOn) {
  TestSession s(GoodMp4(), TestSession::Options(), "good.mp4");
  ASSERT_TRUE(s.ok()) << s.open_message();
  LateBuffer late;
  late.pixels.assign(s.Layout().size + CV_BUFFER_PADDING, '\0');
  late.refuse = CV_ERROR_RESOURCE_EXHAUSTED;
  cv_error error{};
  EXPECT_EQ(codecvisor_backend_v1()->decode_frame(s.get(), 3, &late.buffer, nullptr, &error),
            CV_ERROR_RESOURCE_EXHAUSTED);
  EXPECT_EQ(late.calls, 1);
  EXPECT_NE(std::string(error.message).find("every slot is held"), std::string::npos) << error.message;
  EXPECT_EQ(std::string(late.pixels.size(), '\0'), late.pixels) << "nothing may be written";
  // Asked again, as the host's retry would, the frame comes out right.
  EXPECT_TRUE(s.DecodeOrFail(3) == CliFrame(GoodMp4(), 0, 3, "format=rgb24", 64 * 48 * 3));
}

TEST(LateBufferTest, ALateBufferTooSmallIsRefused) {
  TestSession s(GoodMp4(), TestSession::Options(), "good.mp4");
  ASSERT_TRUE(s.ok()) << s.open_message();
  LateBuffer late;
  late.pixels.assign(100, '\0');
  cv_error error{};
  EXPECT_EQ(codecvisor_backend_v1()->decode_frame(s.get(), 0, &late.buffer, nullptr, &error),
            CV_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error.message).find("holds 100 bytes"), std::string::npos) << error.message;
  cv_frame_buffer none{.data = nullptr, .capacity = 0, .acquire = nullptr};
  EXPECT_EQ(codecvisor_backend_v1()->decode_frame(s.get(), 0, &none, nullptr, &error), CV_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error.message).find("neither data nor an acquire"), std::string::npos) << error.message;
}

}  // namespace
}  // namespace codecvisor::cpu
