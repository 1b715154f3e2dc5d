#include "python/codecvisor/batch.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "base/cgroup_paths.h"
#include "base/stream_copy.h"
#include "pybind11/numpy.h"

namespace codecvisor::python {

namespace py = pybind11;

namespace {

// More than any machine maps: requests are cut here, so that rounding a
// size up to whole pages cannot overflow.
constexpr size_t kMostBytes = size_t{1} << 60;

// a * b, or kMostBytes where that is more (a count approximate mode does
// not know may be anything).
size_t SaturatingMultiply(size_t a, size_t b) {
  size_t product;
  return __builtin_mul_overflow(a, b, &product) || product > kMostBytes ? kMostBytes : product;
}

// Pages on demand for `wanted` bytes, else (the system refuses to reserve
// that much: a header promising far more frames than any machine holds)
// for at least `needed` bytes, half the memory this process may use if it
// may be.
BatchMemory Reserve(size_t wanted, size_t needed) {
  try {
    return BatchMemory(wanted, BatchMemory::Pages::kOnDemand);
  } catch (const std::bad_alloc&) {
    if (wanted <= needed) throw;
  }
  const size_t half = UsableMemoryBytes() / 2;
  if (half > needed && half < wanted) {
    try {
      return BatchMemory(half, BatchMemory::Pages::kOnDemand);
    } catch (const std::bad_alloc&) {
    }
  }
  return BatchMemory(needed, BatchMemory::Pages::kOnDemand);
}

}  // namespace

Status Batch::Add(const Frame& f) {
  const size_t w = f.width(), h = f.height();
  if (arrived_ == 0) {
    width_ = w;
    height_ = h;
    frame_bytes_ = w * h * 3;
    stream_ = SaturatingMultiply(frame_bytes_, std::max<size_t>(expected_, 1)) >= kStreamedBatchBytes;
    usable_ = UsableMemoryBytes();
  } else if (w != width_ || h != height_) {
    return Status(StatusCode::kInternal, "frames of one stream changed size mid-request");
  }
  if (scattered()) return AddScattered(f);
  const size_t at = arrived_ * frame_bytes_;
  // Frames past what was asked for come only from a time range (whose
  // count nobody knew) or a backend that will not stop: past half the
  // memory this process may use (its caller needs the rest), the batch
  // refuses them, where touching more would get the process killed.
  if (usable_ > 0 && at + frame_bytes_ > usable_ / 2) return OutOfMemory();
  if (at + frame_bytes_ > memory_.size()) {
    try {
      Grow(at);
    } catch (const std::bad_alloc&) {
      return MappingRefused(at + frame_bytes_);
    }
  }
  if (Status s = CopyPixels(f, FrameAt(arrived_), memory_.size() - at); !s.ok()) return s;
  pts_.push_back(f.pts_seconds());
  durations_.push_back(f.duration_seconds());
  ++arrived_;
  return Status();
}

Status Batch::Complete() const {
  if (scattered() && arrived_ != targets_.size()) {
    return Status(StatusCode::kInternal, "the backend sent " + std::to_string(arrived_) + " of " +
                                             std::to_string(targets_.size()) + " frames");
  }
  return Status();
}

py::tuple Batch::ToNumpy() {
  auto* memory = new BatchMemory(std::move(memory_));
  py::capsule owner(memory, [](void* p) { delete static_cast<BatchMemory*>(p); });
  const py::ssize_t n = static_cast<py::ssize_t>(scattered() ? expected_ : arrived_), h = height_, w = width_;
  std::vector<py::ssize_t> shape = planar_ ? std::vector<py::ssize_t>{n, 3, h, w} : std::vector<py::ssize_t>{n, h, w, 3};
  py::array_t<uint8_t> data(shape, memory->data(), owner);
  return py::make_tuple(data, py::array_t<double>(pts_.size(), pts_.data()),
                        py::array_t<double>(durations_.size(), durations_.data()));
}

Status Batch::AddScattered(const Frame& f) {
  if (arrived_ >= targets_.size()) return Status(StatusCode::kInternal, "the backend sent more frames than asked");
  if (memory_.size() == 0) {
    try {
      memory_ = BatchMemory(frame_bytes_ * expected_, BatchMemory::Pages::kOnDemand);
    } catch (const std::bad_alloc&) {
      return MappingRefused(frame_bytes_ * expected_);
    }
  }
  const std::vector<uint32_t>& to = targets_[arrived_++];
  if (to.empty()) return Status();
  uint8_t* first = FrameAt(to[0]);
  // Exactly the frame's room: frames land out of order, so a conversion
  // must not spill into a neighbour already written.
  if (Status s = CopyPixels(f, first, frame_bytes_); !s.ok()) return s;
  for (size_t i = 1; i < to.size(); ++i) Copy(FrameAt(to[i]), first, frame_bytes_);
  for (uint32_t p : to) {
    pts_[p] = f.pts_seconds();
    durations_[p] = f.duration_seconds();
  }
  return Status();
}

Status Batch::OutOfMemory() {
  out_of_memory_ = "the request's frames came to more than " + std::to_string(arrived_) + " of " +
                   std::to_string(frame_bytes_) + " bytes each, more than half the " +
                   std::to_string(usable_ >> 20) + " MiB of memory this process may use; ask for fewer frames";
  return Status(StatusCode::kResourceExhausted, out_of_memory_);
}

Status Batch::MappingRefused(size_t bytes) {
  // What was refused is what the batch had grown to; the request's whole
  // size is what the caller can act on.
  const size_t frames = std::max<size_t>(expected_, arrived_ + 1);
  out_of_memory_ = "the system refused the " + std::to_string(bytes >> 20) +
                   " MiB the request's frames need by frame " + std::to_string(arrived_ + 1) + " of " +
                   std::to_string(frames) + " (" + std::to_string(frame_bytes_) + " bytes each, " +
                   std::to_string(SaturatingMultiply(frame_bytes_, frames) >> 20) +
                   " MiB in all): this process's address space (`ulimit -v`) or the machine's memory is short of "
                   "it; ask for fewer frames";
  return Status(StatusCode::kResourceExhausted, out_of_memory_);
}

void Batch::Grow(size_t used) {
  // First frame: room for what the request should bring; then double, but
  // never past that. The slack after the last frame lets its conversion
  // write straight in. A request whose frames cannot all be reserved (an
  // AVI header claiming 2^31 frames, which approximate mode trusts up to
  // 2^24) gets less and ends where the stream does: the backend's
  // out-of-range answer, not a MemoryError for frames that never come.
  const size_t requested = SaturatingMultiply(frame_bytes_, std::max<size_t>(expected_, 1));
  const size_t needed = used + frame_bytes_ + RgbConverter::kSlack;
  size_t wanted = used == 0 ? requested : 2 * memory_.size() + frame_bytes_;
  if (used > 0 && requested > used) wanted = std::min(wanted, requested);
  wanted = std::min(std::max(wanted, used + frame_bytes_), kMostBytes);
  if (used == 0) {
    memory_ = Reserve(wanted + RgbConverter::kSlack, needed);
    return;
  }
  // Grown in place (the pages move, none is copied), so the batch never
  // holds its frames twice; past half the memory this process may use, Add
  // refuses the frame before it gets here.
  if (usable_ > 0) wanted = std::min(wanted, std::max(needed, usable_ / 2));
  try {
    memory_.Grow(wanted + RgbConverter::kSlack);
  } catch (const std::bad_alloc&) {
    memory_.Grow(needed);  // throws on, as a failed reservation does
  }
}

uint8_t* Batch::FrameAt(size_t position) {
  const size_t at = position * frame_bytes_;
  memory_.Populate(at, frame_bytes_);
  return memory_.data() + at;
}

void Batch::Copy(uint8_t* to, const uint8_t* from, size_t bytes) const {
  if (stream_) {
    StreamCopy(to, from, bytes);
  } else {
    std::memcpy(to, from, bytes);
  }
}

Status Batch::CopyPixels(const Frame& f, uint8_t* out, size_t room) const {
  const OutputFormat want = planar_ ? OutputFormat::kRgb24Planar : OutputFormat::kRgb24;
  if (f.format() == OutputFormat::kNative) {
    if (rgb_ == nullptr) return Status(StatusCode::kInternal, "the backend sent a native frame, which was not asked for");
    return rgb_->Convert(f, want, std::span<uint8_t>(out, room));
  }
  if (f.format() != want) {
    return Status(StatusCode::kInternal, std::string("the backend sent a ") + OutputFormatName(f.format()) +
                                             " frame for a " + OutputFormatName(want) + " request");
  }
  const size_t planes = planar_ ? 3 : 1;
  const size_t row = planar_ ? width_ : width_ * 3;
  if (f.num_planes() != planes) return Status(StatusCode::kInternal, "unexpected plane count");
  for (size_t p = 0; p < planes; ++p) {
    const std::span<const uint8_t> plane = f.plane(p);
    const size_t stride = f.stride(p);
    if (stride < row || plane.size() < stride * (height_ - 1) + row) {
      return Status(StatusCode::kInternal, "a frame plane is smaller than its size says");
    }
    uint8_t* to = out + p * height_ * row;
    if (stride == row) {  // rows without padding: one copy of the plane
      Copy(to, plane.data(), row * height_);
      continue;
    }
    for (size_t y = 0; y < height_; ++y) Copy(to + y * row, plane.data() + y * stride, row);
  }
  return Status();
}

}  // namespace codecvisor::python
