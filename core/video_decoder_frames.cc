// File: core/video_decoder_frames.cc
//
// A VideoDecoder's Get* calls: the frames of a selection collected for the
// caller (copied past the arena, bounded by memory), index and time lists
// asked for in stream order. The requests themselves are in
// video_decoder.cc.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <new>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/cgroup_paths.h"
#include "core/video_decoder.h"

namespace codecvisor::internal {
namespace {

// What a frame of a result costs beside its pixels: its Frame, its buffer's
// allocation, its place in the index list. Counted so that a list of
// millions of tiny frames (2x2 pixels) is refused as a list of large ones
// is, rather than fitting by its pixels and taking the process past its
// memory in bookkeeping.
constexpr uint64_t kFrameBookkeepingBytes = 256;

}  // namespace
namespace {

absl::StatusOr<Frame> Single(absl::StatusOr<std::vector<Frame>> frames) {
  if (!frames.ok()) return frames.status();
  if (frames->size() != 1) return absl::InternalError("expected exactly one frame");
  return std::move(frames->front());
}

}  // namespace

absl::Status VideoDecoder::RefuseUnlessFits(size_t count) const {
  const size_t usable = UsableMemoryBytes();
  const uint64_t width = options_.output_width > 0 ? options_.output_width : metadata_.width;
  const uint64_t height = options_.output_height > 0 ? options_.output_height : metadata_.height;
  // (Native frames are counted at RGB's size: a backend may send RGB
  // instead, and most native formats are smaller.)
  const uint64_t rgb_bytes = width * height * 3;
  if (usable == 0 || rgb_bytes == 0 || count <= usable / 2 / (rgb_bytes + kFrameBookkeepingBytes)) {
    return absl::OkStatus();
  }
  return Annotate(absl::ResourceExhaustedError(
      absl::StrCat(count, " frames of ", rgb_bytes, " bytes each would take more than half the ", usable >> 20,
                   " MiB of memory this process may use (with ", kFrameBookkeepingBytes,
                   " bytes a frame of bookkeeping); ask for fewer frames")));
}

absl::StatusOr<std::vector<Frame>> VideoDecoder::Collect(const FrameSelection& selection) {
  std::vector<Frame> frames;
  size_t next_to_detach = 0;
  // The frames kept are copies past the arena: a time range whose count
  // nobody knew, or a backend that keeps sending, stops at half the memory
  // this process may use (the caller needs the rest) instead of growing
  // until the kernel kills it.
  const size_t usable = UsableMemoryBytes();
  size_t kept_bytes = 0;
  absl::Status s = ForEachFrame(selection, [&](Frame frame) {
    kept_bytes += frame.data().size();
    if (usable > 0 && kept_bytes > usable / 2) {
      return absl::ResourceExhaustedError(absl::StrCat("the request's frames came to more than ", frames.size(),
                                                       " frames of ", frame.data().size(),
                                                       " bytes each, more than half the ", usable >> 20,
                                                       " MiB of memory this process may use; ask for fewer frames"));
    }
    // The backend needs a free slot for the next frame: copy out the oldest
    // frames of this batch until one is free. A batch larger than the arena
    // therefore costs one copy per frame beyond it. Memory refused below
    // the half (an address-space limit the process's own data fills) ends
    // the request as the half does.
    const size_t frame_bytes = frame.data().size();
    try {
      frames.push_back(std::move(frame));
      const ipc::HostChannel& channel = *session_.channel;
      while (channel.arena().held_copy_count() >= channel.geometry().copy_slots() && next_to_detach < frames.size()) {
        frames[next_to_detach++].Detach();
      }
    } catch (const std::bad_alloc&) {
      // The slots go back at once: a backend waiting for one would not
      // read the cancel until the request timed out.
      const size_t kept = frames.size();
      frames.clear();
      frames.shrink_to_fit();
      return absl::ResourceExhaustedError(absl::StrCat("out of memory keeping the request's frames: ", kept,
                                                       " frames of ", frame_bytes, " bytes each were kept"));
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return frames;
}

absl::StatusOr<Frame> VideoDecoder::GetFrameAt(int64_t index) { return Single(Collect({ipc::IndexList{{index}}})); }

namespace {

// The frames of `asked` (indices or times), in the order asked, from one
// `collect` of the distinct entries in stream order: asked in another
// order, each frame would seek back to its key frame and decode forward
// again, a cost that grows with the square of the GOP's length. A repeated
// entry's frame is a copy.
template <typename T, typename CollectFn, typename AnnotateFn>
absl::StatusOr<std::vector<Frame>> InStreamOrder(std::span<const T> asked, CollectFn collect, AnnotateFn annotate) {
  std::vector<T> distinct(asked.begin(), asked.end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (std::equal(asked.begin(), asked.end(), distinct.begin(), distinct.end())) return collect(std::move(distinct));
  absl::StatusOr<std::vector<Frame>> got = collect(distinct);
  if (!got.ok()) return got;
  std::vector<Frame> out;
  out.reserve(asked.size());
  std::vector<size_t> placed(distinct.size(), SIZE_MAX);  // where each went in `out`
  for (const T& entry : asked) {
    const size_t k = static_cast<size_t>(std::lower_bound(distinct.begin(), distinct.end(), entry) - distinct.begin());
    if (placed[k] == SIZE_MAX) {
      placed[k] = out.size();
      out.push_back(std::move((*got)[k]));
    } else {
      try {
        Frame copy = out[placed[k]].CopyOut();
        out.push_back(std::move(copy));
      } catch (const std::bad_alloc&) {
        return annotate(absl::ResourceExhaustedError(
            absl::StrCat("out of memory copying a repeated frame, ", out.size(), " of ", asked.size(), " placed")));
      }
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<Frame>> VideoDecoder::GetFramesAt(std::span<const int64_t> indices) {
  if (absl::Status s = RefuseUnlessFits(indices.size()); !s.ok()) return s;
  // Negative indices count from the end, placed as the runner places them
  // (the known count, else the estimate), so that they too are asked for
  // in stream order; a list with one the count does not reach goes as given,
  // for the runner's error.
  const int64_t known = metadata_.known_frame_count();
  const int64_t count = known >= 0 ? known : metadata_.estimated_frame_count();
  std::vector<int64_t> placed;
  if (std::any_of(indices.begin(), indices.end(), [](int64_t i) { return i < 0; })) {
    if (count <= 0 || std::any_of(indices.begin(), indices.end(), [&](int64_t i) { return i < -count; })) {
      return Collect({ipc::IndexList{{indices.begin(), indices.end()}}});
    }
    placed.reserve(indices.size());
    for (int64_t i : indices) placed.push_back(i < 0 ? count + i : i);
    indices = placed;
  }
  return InStreamOrder(
      indices, [this](std::vector<int64_t> distinct) { return Collect({ipc::IndexList{std::move(distinct)}}); },
      [this](const absl::Status& s) { return Annotate(s); });
}

absl::StatusOr<std::vector<Frame>> VideoDecoder::GetFramesInRange(int64_t start, int64_t stop, int64_t step) {
  return Collect({ipc::IndexRange{start, stop, step}});
}

absl::StatusOr<Frame> VideoDecoder::GetFramePlayedAt(double seconds) {
  return Single(Collect({ipc::PtsList{{seconds}}}));
}

absl::StatusOr<std::vector<Frame>> VideoDecoder::GetFramesPlayedAt(std::span<const double> seconds) {
  if (absl::Status s = RefuseUnlessFits(seconds.size()); !s.ok()) return s;
  // A NaN has no order: the backend refuses it, as asked.
  if (std::any_of(seconds.begin(), seconds.end(), [](double s) { return std::isnan(s); })) {
    return Collect({ipc::PtsList{{seconds.begin(), seconds.end()}}});
  }
  return InStreamOrder(
      seconds, [this](std::vector<double> distinct) { return Collect({ipc::PtsList{std::move(distinct)}}); },
      [this](const absl::Status& s) { return Annotate(s); });
}

absl::StatusOr<std::vector<Frame>> VideoDecoder::GetFramesPlayedInRange(double start, double stop) {
  return Collect({ipc::PtsRange{start, stop}});
}

}  // namespace codecvisor::internal
