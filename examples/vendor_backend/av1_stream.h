// File: examples/vendor_backend/av1_stream.h
//
// The decoded pictures of one AV1 stream: packets from a Container fed to
// libdav1d, pictures taken out in presentation order (AV1 never reorders
// output), with repositioning by container seek + dav1d_flush. Each picture
// carries its packet's pts (or dts) in m.timestamp and duration in
// m.duration, so the session can tell which frame it is.
//
// Not thread-safe: one per session. libdav1d runs its own worker threads.

#ifndef CODECVISOR_EXAMPLES_VENDOR_BACKEND_AV1_STREAM_H_
#define CODECVISOR_EXAMPLES_VENDOR_BACKEND_AV1_STREAM_H_

#include <dav1d/dav1d.h>

#include <cstdint>
#include <limits>
#include <memory>

#include "container.h"
#include "status.h"

namespace dav1d_plugin {

class Av1Stream {
 public:
  static constexpr int64_t kNoTimestamp = std::numeric_limits<int64_t>::min();
  // libdav1d accepts at most 256 worker threads.
  static constexpr uint32_t kMaxThreads = 256;

  // A decoder over `container` (borrowed; must outlive this) with `threads`
  // workers, 0 letting libdav1d choose (one per CPU). Settings as libavcodec's
  // libdav1d wrapper makes them, so the pictures are the same: film grain
  // applied, only the highest spatial layer output.
  static Status Open(Container* container, uint32_t threads, std::unique_ptr<Av1Stream>* out);
  Av1Stream(const Av1Stream&) = delete;
  Av1Stream& operator=(const Av1Stream&) = delete;
  ~Av1Stream();

  // Decodes up to the next picture: true with it in picture(), false at the
  // end of the stream. CORRUPT_DATA when libdav1d rejects data many times in
  // a row (a damaged stretch is skipped; garbage is not decoded to the end).
  Status Next(bool* got);
  const Dav1dPicture& picture() const { return picture_; }
  bool has_picture() const { return picture_.data[0] != nullptr; }
  // The pts of the picture last output, kNoTimestamp before the first.
  int64_t last_pts() const { return last_pts_; }
  // How many packets have been sent since the last Restart (or open).
  int64_t packets_read() const { return packets_read_; }
  bool ended() const { return ended_; }
  // libdav1d's or libavformat's last error, as text ("" if none).
  std::string last_error() const;

  // Seeks the container to the key frame at or before `timestamp` and
  // empties the decoder.
  Status Restart(int64_t timestamp);
  // The pts (or dts) of the packet the container will hand out next,
  // kNoTimestamp at the end; read ahead, and still sent to the decoder.
  int64_t PeekTimestamp();

 private:
  Av1Stream() = default;
  // Takes the next packet into pending_: false at the end of the stream.
  bool LoadPacket();

  Container* container_ = nullptr;
  Dav1dContext* dav1d_ = nullptr;
  AVPacket* packet_ = nullptr;
  Dav1dData pending_{};  // data libdav1d has not taken yet
  bool pending_loaded_ = false;
  Dav1dPicture picture_{};
  int64_t last_pts_ = kNoTimestamp;
  int64_t packets_read_ = 0;
  bool input_done_ = false;
  bool ended_ = false;
  int last_dav1d_error_ = 0;
};

}  // namespace dav1d_plugin

#endif  // CODECVISOR_EXAMPLES_VENDOR_BACKEND_AV1_STREAM_H_
