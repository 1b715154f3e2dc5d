#include "codecvisor/video_decoder.h"

#include <unistd.h>

#include <atomic>
#include <string>
#include <utility>

#include "api/convert.h"
#include "api/frame_impl.h"
#include "api/video_decoder_impl.h"

namespace codecvisor {
namespace {

Frame Wrap(internal::Frame frame) { return api::FrameAccess::Wrap(std::move(frame)); }

Result<std::vector<Frame>> WrapAll(absl::StatusOr<std::vector<internal::Frame>> frames) {
  if (!frames.ok()) return api::FromAbsl(frames.status());
  std::vector<Frame> out;
  out.reserve(frames->size());
  for (internal::Frame& f : *frames) out.push_back(Wrap(std::move(f)));
  return out;
}

Result<Frame> WrapOne(absl::StatusOr<internal::Frame> frame) {
  if (!frame.ok()) return api::FromAbsl(frame.status());
  return Wrap(*std::move(frame));
}

// Marks the decoder busy for one call; ok() false if another call is in
// progress (another thread's, or a ForEachFrame sink's own).
class OneCall {
 public:
  explicit OneCall(std::atomic<bool>& busy) : busy_(busy), ok_(!busy.exchange(true, std::memory_order_acquire)) {}
  ~OneCall() {
    if (ok_) busy_.store(false, std::memory_order_release);
  }
  OneCall(const OneCall&) = delete;
  OneCall& operator=(const OneCall&) = delete;
  bool ok() const { return ok_; }

 private:
  std::atomic<bool>& busy_;
  const bool ok_;
};

Status InUse() {
  return Status(StatusCode::kFailedPrecondition,
                "this decoder is in a call already (another thread's, or a ForEachFrame sink calling it): a "
                "decoder is used by one thread at a time");
}

// The error of a request on a decoder inherited across fork(): its channel
// and arena are shared with the parent, whose requests a child's would
// put out of step (the parent's host then blames its backend).
Status Forked(pid_t owner) {
  return Status(StatusCode::kFailedPrecondition,
                "this decoder was opened in process " + std::to_string(owner) +
                    "; a forked child must open its own, from a Host of its own");
}

}  // namespace

Result<std::unique_ptr<VideoDecoder>> api::DecoderAccess::Wrap(
    absl::StatusOr<std::unique_ptr<internal::VideoDecoder>> decoder) {
  if (!decoder.ok()) return FromAbsl(decoder.status());
  auto impl = std::make_unique<VideoDecoder::Impl>();
  impl->metadata = FromIpc((*decoder)->metadata());
  impl->decoder = *std::move(decoder);
  return std::unique_ptr<VideoDecoder>(new VideoDecoder(std::move(impl)));
}

VideoDecoder::VideoDecoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
// In a forked child the decoder is the parent's: closing it would talk to
// the parent's backend over the parent's channel, so it is left as it is.
VideoDecoder::~VideoDecoder() {
  if (impl_ != nullptr && impl_->owner != getpid()) (void)impl_.release();
}

const StreamMetadata& VideoDecoder::metadata() const { return impl_->metadata; }
const std::string& VideoDecoder::label() const { return impl_->decoder->label(); }
const std::string& VideoDecoder::backend_name() const { return impl_->decoder->backend_name(); }
uint64_t VideoDecoder::retries() const { return impl_->decoder->retries(); }

Result<Frame> VideoDecoder::GetFrameAt(int64_t index) {
  if (impl_->owner != getpid()) return Forked(impl_->owner);
  OneCall call(impl_->busy);
  if (!call.ok()) return InUse();
  return WrapOne(impl_->decoder->GetFrameAt(index));
}

Result<std::vector<Frame>> VideoDecoder::GetFramesAt(std::span<const int64_t> indices) {
  if (impl_->owner != getpid()) return Forked(impl_->owner);
  OneCall call(impl_->busy);
  if (!call.ok()) return InUse();
  return WrapAll(impl_->decoder->GetFramesAt(indices));
}

Result<std::vector<Frame>> VideoDecoder::GetFramesInRange(int64_t start, int64_t stop, int64_t step) {
  if (impl_->owner != getpid()) return Forked(impl_->owner);
  OneCall call(impl_->busy);
  if (!call.ok()) return InUse();
  return WrapAll(impl_->decoder->GetFramesInRange(start, stop, step));
}

Result<Frame> VideoDecoder::GetFramePlayedAt(double seconds) {
  if (impl_->owner != getpid()) return Forked(impl_->owner);
  OneCall call(impl_->busy);
  if (!call.ok()) return InUse();
  return WrapOne(impl_->decoder->GetFramePlayedAt(seconds));
}

Result<std::vector<Frame>> VideoDecoder::GetFramesPlayedAt(std::span<const double> seconds) {
  if (impl_->owner != getpid()) return Forked(impl_->owner);
  OneCall call(impl_->busy);
  if (!call.ok()) return InUse();
  return WrapAll(impl_->decoder->GetFramesPlayedAt(seconds));
}

Result<std::vector<Frame>> VideoDecoder::GetFramesPlayedInRange(double start, double stop) {
  if (impl_->owner != getpid()) return Forked(impl_->owner);
  OneCall call(impl_->busy);
  if (!call.ok()) return InUse();
  return WrapAll(impl_->decoder->GetFramesPlayedInRange(start, stop));
}

Status VideoDecoder::ForEachFrame(const FrameSelection& selection, const std::function<Status(Frame)>& sink) {
  if (impl_->owner != getpid()) return Forked(impl_->owner);
  OneCall call(impl_->busy);
  if (!call.ok()) return InUse();
  return api::FromAbsl(impl_->decoder->ForEachFrame(
      api::ToIpc(selection), [&sink](internal::Frame frame) { return api::ToAbsl(sink(Wrap(std::move(frame)))); }));
}

}  // namespace codecvisor
