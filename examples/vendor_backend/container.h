// File: examples/vendor_backend/container.h
//
// Demuxing for the dav1d plugin: libavformat reading the video through the
// descriptor the runner lends (a custom AVIOContext; the sandbox lets the
// plugin open no file), picking the AV1 stream and handing out its packets.
// libavformat only splits the container; every frame is decoded by libdav1d
// (see av1_decoder.h), never by a libavcodec decoder.
//
// Not thread-safe: one per session.

#ifndef CODECVISOR_EXAMPLES_VENDOR_BACKEND_CONTAINER_H_
#define CODECVISOR_EXAMPLES_VENDOR_BACKEND_CONTAINER_H_

#include <cstdint>
#include <memory>

#include "status.h"

extern "C" {
#include <libavformat/avformat.h>
}

namespace dav1d_plugin {

class Container {
 public:
  // Opens the container read through `fd` (borrowed: never closed, read
  // with pread so the runner's file offset is left alone) and selects
  // `stream_index`, or the best video stream when it is negative.
  // CORRUPT_DATA when libavformat cannot read the file (not a video,
  // truncated header), NOT_FOUND without such a video stream, UNSUPPORTED
  // when the stream is not AV1 ("dav1d backend decodes AV1 only; stream 0
  // is h264"). SECURITY: no demuxer may open a second resource (io_open is
  // refused, no protocol is whitelisted).
  static Status Open(int fd, int stream_index, std::unique_ptr<Container>* out);
  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;
  ~Container();

  const AVFormatContext* format() const { return format_; }
  const AVStream* stream() const { return stream_; }
  int num_video_streams() const { return num_video_streams_; }
  // Describes the file's streams, every type, into out[0..capacity) by
  // index; returns how many it wrote.
  uint32_t ListStreams(cv_stream_info* out, uint32_t capacity) const;

  // The next packet of the selected stream into `packet`: true, or false at
  // the end or on a read error (then last_error() is that error, else 0).
  bool ReadPacket(AVPacket* packet);
  int last_error() const { return last_error_; }

  // Positions the demuxer at the key frame at or before `timestamp` (in the
  // stream's time base). CORRUPT_DATA if libavformat cannot seek.
  Status Seek(int64_t timestamp);

 private:
  Container() = default;
  static int ReadCallback(void* opaque, uint8_t* buf, int size);
  static int64_t SeekCallback(void* opaque, int64_t offset, int whence);

  int fd_ = -1;
  int64_t offset_ = 0;  // where ReadCallback reads next
  AVIOContext* io_ = nullptr;
  AVFormatContext* format_ = nullptr;
  AVStream* stream_ = nullptr;
  int num_video_streams_ = 0;
  int last_error_ = 0;
};

// libavutil's text for an AVERROR code.
std::string AvError(int code);

}  // namespace dav1d_plugin

#endif  // CODECVISOR_EXAMPLES_VENDOR_BACKEND_CONTAINER_H_
