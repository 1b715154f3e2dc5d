// Batch: the frames of one request, copied as they arrive into one buffer
// laid out as the batch tensor: N x H x W x 3 (interleaved) or N x 3 x H x W.
// A frame the backend sent in its native format (DecoderOptions::
// native_formats) is converted to RGB straight into its place by the
// request's RgbConverter instead of copied.
// Scattered (the samplers' hook): arriving frame k goes to every output
// position in targets[k], so a request for distinct frames fills a batch
// that repeats some; the repeats cost a copy, not a decode.

#ifndef CODECVISOR_PYTHON_CODECVISOR_BATCH_H_
#define CODECVISOR_PYTHON_CODECVISOR_BATCH_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codecvisor/codecvisor.h"
#include "pybind11/pybind11.h"
#include "base/batch_memory.h"

namespace codecvisor::python {

class Batch {
 public:
  // `expected` frames in request order (the memory grows if more come), as
  // `format` (kRgb24: interleaved, kRgb24Planar: planar).
  Batch(size_t expected, OutputFormat format) : expected_(expected), planar_(format == OutputFormat::kRgb24Planar) {}
  // `outputs` frames; arriving frame k goes to every position in targets[k].
  Batch(std::vector<std::vector<uint32_t>> targets, size_t outputs, OutputFormat format)
      : expected_(outputs),
        targets_(std::move(targets)),
        pts_(outputs),
        durations_(outputs),
        planar_(format == OutputFormat::kRgb24Planar) {}

  // Converts the native frames that come (none without one: an error).
  void UseConverter(RgbConverter* rgb) { rgb_ = rgb; }

  // Copies the next arriving frame in (called with the GIL released).
  Status Add(const Frame& f);
  // Whether every frame asked for came (a scattered batch must be whole).
  Status Complete() const;
  // Why the batch stopped taking frames because they would take more than
  // half the memory this process may use (a time range whose count nobody knew
  // beforehand, a backend that keeps sending): raised as MemoryError. ""
  // if it did not.
  const std::string& out_of_memory() const { return out_of_memory_; }
  // (data, pts_seconds, duration_seconds) as numpy arrays that own their
  // memory; needs the GIL.
  pybind11::tuple ToNumpy();

 private:
  bool scattered() const { return !targets_.empty(); }
  Status AddScattered(const Frame& f);
  // Makes room for the frame after the first `used` bytes, growing the
  // memory in place (Add refuses a frame past half the memory this process
  // may use before it gets here).
  void Grow(size_t used);
  // Sets out_of_memory_; its kResourceExhausted: past half the usable
  // memory, or `bytes` the kernel would not map.
  Status OutOfMemory();
  Status MappingRefused(size_t bytes);
  // Where the frame at output `position` goes, its pages made resident:
  // each frame's pages are populated as it arrives, so the first frame
  // does not wait for the whole batch's (the backend decodes on meanwhile
  // into the arena's other slots).
  uint8_t* FrameAt(size_t position);
  // The frame's pixels at `out`, rows one by one (a backend may pad its
  // rows: stride > row), or converted from its native format. `room`: bytes
  // from `out` that may be written, at least frame_bytes_; a conversion
  // with RgbConverter::kSlack more writes straight into it.
  Status CopyPixels(const Frame& f, uint8_t* out, size_t room) const;
  // memcpy, or for a large batch StreamCopy: its frames go to memory
  // without evicting the backend's and the caller's working sets from the
  // shared cache, and nobody reads them before the batch is whole.
  void Copy(uint8_t* to, const uint8_t* from, size_t bytes) const;

  // A batch this large is copied into with non-temporal stores.
  static constexpr size_t kStreamedBatchBytes = size_t{8} << 20;

  std::string out_of_memory_;
  size_t usable_ = 0;  // UsableMemoryBytes() when the first frame came
  const size_t expected_;
  const std::vector<std::vector<uint32_t>> targets_;
  BatchMemory memory_;
  std::vector<double> pts_, durations_;
  size_t arrived_ = 0, width_ = 0, height_ = 0, frame_bytes_ = 0;
  const bool planar_;
  bool stream_ = false;
  RgbConverter* rgb_ = nullptr;
};

}  // namespace codecvisor::python

#endif  // CODECVISOR_PYTHON_CODECVISOR_BATCH_H_
