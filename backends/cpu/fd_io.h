// File: backends/cpu/fd_io.h
//
// FdInput: an AVIOContext that reads a video through a file descriptor the
// runner lent us, so libavformat never opens a path. Reads use pread() at an
// offset FdInput tracks itself (the descriptor's own offset is never relied
// on), seeks are arithmetic checked against the size lseek(SEEK_END) reports.
//
// Ownership: FdInput owns the AVIOContext and its buffer, never the
// descriptor: it does not close it. Not thread-safe; one session uses it.

#ifndef CODECVISOR_BACKENDS_CPU_FD_IO_H_
#define CODECVISOR_BACKENDS_CPU_FD_IO_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"

extern "C" {
#include <libavformat/avio.h>
}

namespace codecvisor::cpu {

class FdInput {
 public:
  // Wraps `fd`, which must be open, readable and seekable (a regular file or
  // a memfd). Returns InvalidArgument if it is not; never closes it.
  static absl::StatusOr<std::unique_ptr<FdInput>> Create(int fd);

  FdInput(const FdInput&) = delete;
  FdInput& operator=(const FdInput&) = delete;
  ~FdInput();

  // The context to hand to AVFormatContext::pb; valid while *this lives.
  AVIOContext* context() const { return avio_; }

 private:
  explicit FdInput(int fd) : fd_(fd) {}

  // AVIOContext callbacks; `opaque` is the FdInput.
  static int Read(void* opaque, uint8_t* buf, int size);
  static int64_t Seek(void* opaque, int64_t offset, int whence);

  // The file's current size, from lseek(SEEK_END); negative AVERROR on failure.
  int64_t Size() const;

  int fd_;
  int64_t position_ = 0;
  AVIOContext* avio_ = nullptr;
};

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_FD_IO_H_
