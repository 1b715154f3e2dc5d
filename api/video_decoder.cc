#include "codecvisor/video_decoder.h"

#include <unistd.h>

#include <atomic>
#include <string>
#include <utility>

#include "api/convert.h"
#include "api/frame_impl.h"
#include "api/inherited.h"
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

// One call on a decoder, admitted only in the process that opened it
// (its channel and arena are shared with a forked child's parent, whose
// requests a child's would put out of step, and the parent's host would
// blame its backend) and only while no other call is in progress on it
// (another thread's, or a ForEachFrame sink's own). status() is why not.
// (A template, as VideoDecoder::Impl is private to VideoDecoder.)
template <typename Impl>
class OneCall {
 public:
  explicit OneCall(Impl& impl) : impl_(impl) {
    if (impl.owner != getpid()) {
      status_ = Status(StatusCode::kFailedPrecondition,
                       "this decoder was opened in process " + std::to_string(impl.owner) +
                           "; a forked child must open its own, from a Host of its own");
    } else if (int idle = Impl::kIdle;
               !impl.call.compare_exchange_strong(idle, Impl::kInCall, std::memory_order_acquire)) {
      status_ = Status(StatusCode::kFailedPrecondition,
                       "this decoder is in a call already (another thread's, or a ForEachFrame sink calling it): "
                       "a decoder is used by one thread at a time");
    } else {
      admitted_ = true;
    }
  }
  ~OneCall() {
    if (admitted_ && impl_.call.exchange(Impl::kIdle, std::memory_order_acq_rel) == Impl::kInCallDestroyed) {
      delete &impl_;  // its VideoDecoder was destroyed during this call
    }
  }
  OneCall(const OneCall&) = delete;
  OneCall& operator=(const OneCall&) = delete;
  bool admitted() const { return admitted_; }
  const Status& status() const { return status_; }

 private:
  Impl& impl_;
  Status status_;
  bool admitted_ = false;
};

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
// the parent's backend over the parent's channel, so it is left as it is,
// but for the child's copies of its descriptors, which are closed.
// Destroyed during one of its calls (by a ForEachFrame sink), the call
// keeps the Impl and deletes it when it ends.
VideoDecoder::~VideoDecoder() {
  if (impl_ == nullptr) return;
  if (impl_->owner != getpid()) {
    impl_->decoder->CloseInheritedDescriptors();
    api::LeaveInherited(impl_);
  } else if (int in_call = Impl::kInCall;
             impl_->call.compare_exchange_strong(in_call, Impl::kInCallDestroyed, std::memory_order_acq_rel)) {
    (void)impl_.release();
  }
}

const StreamMetadata& VideoDecoder::metadata() const { return impl_->metadata; }
const std::string& VideoDecoder::label() const { return impl_->decoder->label(); }
const std::string& VideoDecoder::backend_name() const { return impl_->decoder->backend_name(); }
uint64_t VideoDecoder::retries() const { return impl_->decoder->retries(); }

Result<Frame> VideoDecoder::GetFrameAt(int64_t index) {
  OneCall call(*impl_);
  if (!call.admitted()) return call.status();
  return WrapOne(impl_->decoder->GetFrameAt(index));
}

Result<std::vector<Frame>> VideoDecoder::GetFramesAt(std::span<const int64_t> indices) {
  OneCall call(*impl_);
  if (!call.admitted()) return call.status();
  return WrapAll(impl_->decoder->GetFramesAt(indices));
}

Result<std::vector<Frame>> VideoDecoder::GetFramesInRange(int64_t start, int64_t stop, int64_t step) {
  OneCall call(*impl_);
  if (!call.admitted()) return call.status();
  return WrapAll(impl_->decoder->GetFramesInRange(start, stop, step));
}

Result<Frame> VideoDecoder::GetFramePlayedAt(double seconds) {
  OneCall call(*impl_);
  if (!call.admitted()) return call.status();
  return WrapOne(impl_->decoder->GetFramePlayedAt(seconds));
}

Result<std::vector<Frame>> VideoDecoder::GetFramesPlayedAt(std::span<const double> seconds) {
  OneCall call(*impl_);
  if (!call.admitted()) return call.status();
  return WrapAll(impl_->decoder->GetFramesPlayedAt(seconds));
}

Result<std::vector<Frame>> VideoDecoder::GetFramesPlayedInRange(double start, double stop) {
  OneCall call(*impl_);
  if (!call.admitted()) return call.status();
  return WrapAll(impl_->decoder->GetFramesPlayedInRange(start, stop));
}

namespace {

// Both ForEachFrames; `interrupted` null for the one without it.
template <typename Impl>
Status StreamFrames(Impl& impl, const FrameSelection& selection, const std::function<Status(Frame)>& sink,
                    const std::atomic<bool>* interrupted) {
  OneCall call(impl);
  if (!call.admitted()) return call.status();
  const auto destroyed = [&impl] { return impl.call.load(std::memory_order_acquire) == Impl::kInCallDestroyed; };
  absl::Status sink_error;
  const absl::Status status = impl.decoder->ForEachFrame(
      api::ToIpc(selection),
      [&sink, &destroyed, &sink_error](internal::Frame frame) {
        if (destroyed())
          return absl::CancelledError("the decoder was destroyed during this ForEachFrame (by its sink)");
        sink_error = api::ToAbsl(sink(Wrap(std::move(frame))));
        return sink_error;
      },
      interrupted);
  // Destroyed by a sink (of the last frame, or one that destroyed the
  // Host too, which ends the call with the host's kUnavailable): the sink's
  // error, else cancelled all the same.
  if (destroyed()) {
    return sink_error.ok()
               ? Status(StatusCode::kCancelled, "the decoder was destroyed during this ForEachFrame (by its sink)")
               : api::FromAbsl(sink_error);
  }
  return api::FromAbsl(status);
}

}  // namespace

Status VideoDecoder::ForEachFrame(const FrameSelection& selection, const std::function<Status(Frame)>& sink) {
  return StreamFrames(*impl_, selection, sink, nullptr);
}

Status VideoDecoder::ForEachFrame(const FrameSelection& selection, const std::function<Status(Frame)>& sink,
                                  const std::atomic<bool>& interrupted) {
  return StreamFrames(*impl_, selection, sink, &interrupted);
}

}  // namespace codecvisor
