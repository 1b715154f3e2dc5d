// File: backends/cpu/fd_io.cc
//
// The AVIOContext callbacks over a borrowed descriptor. See fd_io.h.

#include "backends/cpu/fd_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

extern "C" {
#include <libavutil/error.h>
#include <libavutil/mem.h>
}

namespace codecvisor::cpu {
namespace {

// Large enough that a sequential demux makes few syscalls, small enough that
// a session's footprint stays modest.
constexpr int kBufferBytes = 64 * 1024;

}  // namespace

absl::StatusOr<std::unique_ptr<FdInput>> FdInput::Create(int fd) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("file descriptor ", fd, " is not open: ", std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("file descriptor ", fd, " is a directory, not a video file"));
  }
  if (lseek(fd, 0, SEEK_CUR) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("file descriptor ", fd, " is not seekable: ", std::strerror(errno)));
  }
  std::unique_ptr<FdInput> input(new FdInput(fd));
  auto* buffer = static_cast<unsigned char*>(av_malloc(kBufferBytes));
  if (buffer == nullptr) return absl::ResourceExhaustedError("out of memory for the I/O buffer");
  input->avio_ = avio_alloc_context(buffer, kBufferBytes, /*write_flag=*/0, input.get(),
                                    &FdInput::Read, /*write_packet=*/nullptr, &FdInput::Seek);
  if (input->avio_ == nullptr) {
    av_free(buffer);
    return absl::ResourceExhaustedError("out of memory for the I/O context");
  }
  return input;
}

FdInput::~FdInput() {
  if (avio_ != nullptr) {
    // libavformat may have replaced the buffer; free whatever it holds now.
    av_freep(&avio_->buffer);
    avio_context_free(&avio_);
  }
}

int FdInput::Read(void* opaque, uint8_t* buf, int size) {
  auto* self = static_cast<FdInput*>(opaque);
  if (size <= 0) return 0;
  ssize_t n;
  do {
    n = pread(self->fd_, buf, static_cast<size_t>(size), self->position_);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return AVERROR(errno);
  if (n == 0) return AVERROR_EOF;
  self->position_ += n;
  return static_cast<int>(n);
}

int64_t FdInput::Size() const {
  off_t size = lseek(fd_, 0, SEEK_END);
  if (size < 0) return AVERROR(errno);
  return size;
}

int64_t FdInput::Seek(void* opaque, int64_t offset, int whence) {
  auto* self = static_cast<FdInput*>(opaque);
  whence &= ~AVSEEK_FORCE;
  int64_t target;
  switch (whence) {
    case AVSEEK_SIZE:
      return self->Size();
    case SEEK_SET:
      target = offset;
      break;
    case SEEK_CUR:
      if (__builtin_add_overflow(self->position_, offset, &target)) return AVERROR(EINVAL);
      break;
    case SEEK_END: {
      int64_t size = self->Size();
      if (size < 0) return size;
      if (__builtin_add_overflow(size, offset, &target)) return AVERROR(EINVAL);
      break;
    }
    default:
      return AVERROR(EINVAL);
  }
  if (target < 0) return AVERROR(EINVAL);
  self->position_ = target;
  return target;
}

}  // namespace codecvisor::cpu
