#include "core/video_decoder.h"

#include "absl/strings/str_cat.h"

namespace codecvisor {
namespace {

using ipc::Clock;

absl::StatusOr<Frame> Single(absl::StatusOr<std::vector<Frame>> frames) {
  if (!frames.ok()) return frames.status();
  if (frames->size() != 1) return absl::InternalError("expected exactly one frame");
  return std::move(frames->front());
}

}  // namespace

VideoDecoder::VideoDecoder(std::shared_ptr<BackendProcess> backend, OpenedSession session, ipc::UniqueFd video,
                           std::string label, DecoderOptions options)
    : backend_(std::move(backend)),
      session_(std::move(session)),
      video_(std::move(video)),
      label_(std::move(label)),
      options_(std::move(options)) {}

VideoDecoder::~VideoDecoder() {
  // Best effort: tell the session thread to close. Our channel's hang-up
  // ends it anyway if the backend is busy.
  if (session_.channel != nullptr) {
    (void)session_.channel->Send({next_id_++, ipc::Close{}}, Clock::now() + std::chrono::milliseconds(100));
  }
}

absl::Status VideoDecoder::Annotate(const absl::Status& status) const {
  return absl::Status(status.code(), absl::StrCat(label_, " (backend '", backend_name(), "'): ", status.message()));
}

absl::Status VideoDecoder::ForEachFrame(const FrameSelection& selection,
                                        absl::FunctionRef<absl::Status(Frame)> sink) {
  ipc::HostChannel& channel = *session_.channel;
  const uint32_t slots = channel.geometry().slot_count;
  if (channel.arena().held_count() >= slots) {
    return Annotate(absl::FailedPreconditionError(absl::StrCat(
        "all ", slots, " frame slots are held by frames still alive; destroy or Detach() them, "
        "or open the decoder with more arena_slots")));
  }
  const uint64_t id = next_id_++;
  if (absl::Status s = channel.Send({id, selection}, Clock::now() + options_.request_timeout); !s.ok()) {
    return Annotate(s);
  }
  absl::Status first_error;
  uint32_t expected_position = 0;
  for (;;) {
    absl::StatusOr<ipc::Incoming> in = channel.Receive(Clock::now() + options_.request_timeout);
    if (!in.ok()) return Annotate(in.status());
    if (in->response.id != id) {
      return Annotate(absl::DataLossError(
          absl::StrCat("backend answered request ", in->response.id, " while request ", id, " was in flight")));
    }
    if (auto* error = std::get_if<ipc::Error>(&in->response.body)) {
      return first_error.ok() ? Annotate(FromWireError(*error)) : first_error;
    }
    auto* batch = std::get_if<ipc::FrameBatch>(&in->response.body);
    if (batch == nullptr) {
      return Annotate(absl::DataLossError(absl::StrCat("backend answered a frame request with ",
                                                       ipc::KindName(in->response))));
    }
    for (ipc::FrameLease& lease : in->frames) {
      if (lease.ref().request_position != expected_position++) {
        return Annotate(absl::DataLossError("backend sent frames out of request order"));
      }
      // After a sink error, keep draining so the next request starts clean.
      if (first_error.ok()) first_error = sink(Frame(std::move(lease)));
    }
    if (batch->final) return first_error;
  }
}

absl::StatusOr<std::vector<Frame>> VideoDecoder::Collect(const FrameSelection& selection) {
  std::vector<Frame> frames;
  size_t next_to_detach = 0;
  const uint32_t slots = session_.channel->geometry().slot_count;
  absl::Status s = ForEachFrame(selection, [&](Frame frame) {
    frames.push_back(std::move(frame));
    // The backend needs a free slot for the next frame: copy out the oldest
    // frames of this batch until one is free. A batch larger than the arena
    // therefore costs one copy per frame beyond it.
    while (session_.channel->arena().held_count() >= slots && next_to_detach < frames.size()) {
      frames[next_to_detach++].Detach();
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return frames;
}

absl::StatusOr<Frame> VideoDecoder::GetFrameAt(int64_t index) {
  return Single(Collect({ipc::IndexList{{index}}}));
}

absl::StatusOr<std::vector<Frame>> VideoDecoder::GetFramesAt(std::span<const int64_t> indices) {
  return Collect({ipc::IndexList{{indices.begin(), indices.end()}}});
}

absl::StatusOr<std::vector<Frame>> VideoDecoder::GetFramesInRange(int64_t start, int64_t stop, int64_t step) {
  return Collect({ipc::IndexRange{start, stop, step}});
}

absl::StatusOr<Frame> VideoDecoder::GetFramePlayedAt(double seconds) {
  return Single(Collect({ipc::PtsList{{seconds}}}));
}

absl::StatusOr<std::vector<Frame>> VideoDecoder::GetFramesPlayedAt(std::span<const double> seconds) {
  return Collect({ipc::PtsList{{seconds.begin(), seconds.end()}}});
}

absl::StatusOr<std::vector<Frame>> VideoDecoder::GetFramesPlayedInRange(double start, double stop) {
  return Collect({ipc::PtsRange{start, stop}});
}

}  // namespace codecvisor
