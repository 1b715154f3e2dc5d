// Fuzzes the cpu backend's demux and decode entry in process, through the
// same C ABI the runner calls: the input is the video file. In production a
// crash here is contained by the sandboxed child, but it should still be
// found. Each input is opened in both seek modes, its metadata read, and
// up to three frames (first, second, last) decoded to RGB24.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/sdk/codecvisor_backend.h"

namespace {

// Frames larger than this are not decoded: a header may claim any size,
// and the backend would rightly allocate it.
constexpr uint64_t kMaxFrameBytes = 64 << 20;
constexpr size_t kGuardBytes = 4096;
constexpr uint8_t kGuard = 0xa5;

const cv_backend_v1* Table() {
  static const cv_backend_v1* table = codecvisor_backend_v1();
  return table;
}

cv_backend* Backend() {
  static cv_backend* backend = [] {
    cv_backend* b = nullptr;
    cv_error error{};
    if (Table()->create("", &b, &error) != CV_OK) __builtin_trap();
    return b;
  }();
  return backend;
}

void DecodeSome(cv_session* session) {
  const cv_backend_v1* t = Table();
  cv_error error{};
  cv_stream_metadata metadata{};
  if (t->get_metadata(session, &metadata, &error) != CV_OK) return;
  cv_frame_layout layout{};
  if (t->get_frame_layout(session, &layout, &error) != CV_OK || layout.size == 0 || layout.size > kMaxFrameBytes) {
    return;
  }
  // The buffer is lent as the runner lends a slot, layout.size plus the
  // padding the SDK allows writing into, followed by guard bytes that must
  // survive: FFmpeg is not instrumented, so an overrun by its code would
  // otherwise surface only later, as heap corruption.
  const uint64_t lent = layout.size + CV_BUFFER_PADDING;
  std::vector<uint8_t> buffer(lent + kGuardBytes, kGuard);
  cv_frame_buffer frame{.data = buffer.data(), .capacity = lent};
  const int64_t count = metadata.num_frames_from_scan > 0 ? metadata.num_frames_from_scan
                                                          : metadata.num_frames_from_header;
  auto check_guard = [&] {
    for (size_t i = lent; i < buffer.size(); ++i) {
      if (buffer[i] != kGuard) __builtin_trap();  // wrote past the lent buffer
    }
  };
  for (int64_t index : {int64_t{0}, int64_t{1}, count - 1}) {
    if (index < 0) continue;
    cv_frame_info info{};
    const cv_status st = t->decode_frame(session, index, &frame, &info, &error);
    check_guard();
    if (st != CV_OK) return;
  }
  int64_t at = -1;
  (void)t->index_at_seconds(session, metadata.begin_stream_seconds + 0.5, &at, &error);
  // By time: approximate mode searches by pts (back, then on), not by index.
  for (double seconds :
       {metadata.begin_stream_seconds + 0.5, metadata.begin_stream_seconds, metadata.begin_stream_seconds + 0.1}) {
    cv_frame_info info{};
    (void)t->decode_frame_at_seconds(session, seconds, &frame, &info, &error);
    check_guard();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("fuzz-video", MFD_CLOEXEC);
  if (fd < 0) return 0;
  size_t written = 0;
  while (written < size) {
    const ssize_t n = write(fd, data + written, size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  for (cv_seek_mode mode : {CV_SEEK_EXACT, CV_SEEK_APPROXIMATE}) {
    lseek(fd, 0, SEEK_SET);
    cv_open_options options{};
    options.struct_size = sizeof(options);
    options.stream_index = -1;
    options.seek_mode = mode;
    options.output_format = CV_OUTPUT_RGB24;
    options.decoder_threads = 1;
    options.device = "cpu";
    options.file_label = "fuzz-input";
    cv_session* session = nullptr;
    cv_error error{};
    if (Table()->open_session(Backend(), fd, &options, &session, &error) == CV_OK) {
      DecodeSome(session);
      Table()->close_session(session);
    }
  }
  close(fd);
  return 0;
}
