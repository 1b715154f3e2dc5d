// File: backends/cpu/demuxer.h
//
// Demuxer: one container opened with libavformat over an FdInput, with one
// video stream selected. Every other stream is set to AVDISCARD_ALL so the
// demuxer skips it where it can.
//
// SECURITY: the file is untrusted. libavformat reads it only through the
// descriptor, the io_open callback refuses every nested open (HLS
// playlists, concat lists, image sequences, "file:" references) and the
// protocol whitelist is empty (for demuxers such as rtsp/sdp that open URLs
// directly), so a crafted container cannot make the backend open another
// file or a URL. The sandbox forbids both as well; this is defence in depth.
//
// Not thread-safe: one session drives it.

#ifndef CODECVISOR_BACKENDS_CPU_DEMUXER_H_
#define CODECVISOR_BACKENDS_CPU_DEMUXER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cpu/fd_io.h"
#include "backends/cpu/stream_splices.h"

extern "C" {
#include <libavformat/avformat.h>
}

namespace codecvisor::cpu {

class Demuxer {
 public:
  // Opens the container read through `fd` (not closed, ever) and selects the
  // video stream `stream_index`, or av_find_best_stream's choice when it is
  // negative. Cover images (attached pictures) are not video streams.
  // Errors: InvalidArgument for an unusable descriptor; DataLoss when the
  // bytes cannot be demuxed (not a container, truncated header); NotFound
  // when there is no video stream or `stream_index` is not one.
  static absl::StatusOr<std::unique_ptr<Demuxer>> Open(int fd, int stream_index);

  Demuxer(const Demuxer&) = delete;
  Demuxer& operator=(const Demuxer&) = delete;
  ~Demuxer();

  AVFormatContext* format() const { return format_; }
  AVStream* stream() const { return stream_; }
  int stream_index() const { return stream_->index; }
  // Video streams in the container, cover images excluded.
  int num_video_streams() const { return num_video_streams_; }

  // Reads the next packet of the selected stream into `packet` (which it
  // unreferences first). Returns false at the end of the data: end of file,
  // or a read error, which last_error() then holds (0 for a clean EOF).
  bool ReadPacket(AVPacket* packet);
  int last_error() const { return last_error_; }

  // Seeks so that the next packet read is, as far as the demuxer can tell, a
  // key frame at or before `timestamp` (in the stream's time base). Callers
  // must check where it landed: demuxers differ in whether their index holds
  // pts or dts. A demuxer that cannot seek by time (raw elementary streams:
  // .h264, .hevc) starts over from the stream's first packet (the first read
  // before any seek), by its byte position: before any target, so a reader
  // decodes forward to it.
  // Where the demuxer refuses the seek, or its positions are not the
  // pictures' (a stream of PNM or BMP pictures), the container is opened again
  // (stream() and format() then change), which reads from the start.
  // DataLoss if that fails too.
  absl::Status Seek(int64_t timestamp);

  // From now on, packet times are moved by `splices` (when active()), and
  // Seek goes to the byte position of the key frame at or before the
  // (moved) timestamp, or opens the container again when none is.
  void UseSplices(StreamSplices splices) { splices_ = std::move(splices); }

  // Opens the container again over the same descriptor, with the same
  // stream selected (stream() and format() change): the next packet read is
  // the first. For a file whose seeks to its start land later.
  absl::Status Reopen();

 private:
  Demuxer() = default;
  // Open without reading the palette.
  static absl::StatusOr<std::unique_ptr<Demuxer>> OpenContainer(int fd, int stream_index);
  // A paletted stream's demuxer (AVI, MOV) sends the palette once, as side
  // data of the first packet it reads: a decoder started after a seek, or
  // after a scan read that packet, would make black frames. The last
  // palette read is kept and given to each packet that comes without one.
  void KeepPalette(AVPacket* packet);

  int fd_ = -1;
  std::unique_ptr<FdInput> input_;
  AVFormatContext* format_ = nullptr;
  AVStream* stream_ = nullptr;
  int num_video_streams_ = 0;
  int last_error_ = 0;
  int64_t first_packet_pos_ = -1;  // byte position of the first packet read before any seek
  bool seeked_ = false;
  StreamSplices splices_{0};  // none until UseSplices
  int64_t last_offset_ = 0;  // the splice offset of the last packet read
  std::vector<uint8_t> palette_;  // the last AV_PKT_DATA_PALETTE read; empty until one is
};

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_DEMUXER_H_
