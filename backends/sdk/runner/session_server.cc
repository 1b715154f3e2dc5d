#include "backends/sdk/runner/session_server.h"

#include "absl/strings/str_cat.h"
#include "backends/sdk/runner/abi_convert.h"
#include "backends/sdk/runner/crash_hints.h"

namespace codecvisor::runner {
namespace {

using ipc::Clock;

constexpr auto kIdleWait = std::chrono::hours(24);
// Frames decoded faster than this may be delivered two per host wake-up.
constexpr auto kQuietFrameBelow = std::chrono::milliseconds(1);

int64_t FrameCount(const ipc::StreamMetadata& m) {
  return m.num_frames_from_scan >= 0 ? m.num_frames_from_scan : m.num_frames_from_header;
}

absl::Status IndexOutOfRange(int64_t index, int64_t count) {
  return absl::OutOfRangeError(absl::StrCat("frame index ", index, " is out of range: the stream has ",
                                            count, " frames"));
}

absl::StatusOr<int64_t> IndexAt(const VendorSession& s, double seconds) {
  int64_t index = -1;
  cv_error error{};
  VendorCall call(s.hints);
  cv_status st = s.vtable->index_at_seconds(s.session, seconds, &index, &error);
  if (st != CV_OK) return VendorError(st, error);
  return index;
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> ResolveSelection(const ipc::FrameRequest& request,
                                                      const VendorSession& session) {
  const int64_t count = FrameCount(session.opened.metadata);
  std::vector<int64_t> out;
  if (auto* list = std::get_if<ipc::IndexList>(&request.selection)) {
    out.reserve(list->indices.size());
    for (int64_t i : list->indices) {
      // Negative indices count from the end, as in Python.
      const int64_t resolved = (i < 0 && count >= 0) ? i + count : i;
      if (resolved < 0 || (count >= 0 && resolved >= count)) return IndexOutOfRange(i, count);
      out.push_back(resolved);
    }
  } else if (auto* range = std::get_if<ipc::IndexRange>(&request.selection)) {
    if (range->step <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("frame range step must be positive, got ", range->step));
    }
    if (range->start < 0 || range->start > range->stop) {
      return absl::InvalidArgumentError(
          absl::StrCat("frame range [", range->start, ", ", range->stop, ") is empty or negative"));
    }
    if (count >= 0 && range->stop > count) return IndexOutOfRange(range->stop - 1, count);
    for (int64_t i = range->start; i < range->stop; i += range->step) out.push_back(i);
  } else if (auto* times = std::get_if<ipc::PtsList>(&request.selection)) {
    out.reserve(times->seconds.size());
    for (double t : times->seconds) {
      absl::StatusOr<int64_t> index = IndexAt(session, t);
      if (!index.ok()) return index.status();
      out.push_back(*index);
    }
  } else if (auto* span = std::get_if<ipc::PtsRange>(&request.selection)) {
    if (!(span->start_seconds <= span->stop_seconds)) {
      return absl::InvalidArgumentError(absl::StrCat("time range [", span->start_seconds, ", ",
                                                     span->stop_seconds, ") is reversed or not a number"));
    }
    if (span->start_seconds == span->stop_seconds) return out;
    absl::StatusOr<int64_t> first = IndexAt(session, span->start_seconds);
    if (!first.ok()) return first.status();
    for (int64_t i = *first; count < 0 || i < count; ++i) {
      cv_frame_info info{};
      cv_error error{};
      cv_status st;
      {
        VendorCall call(session.hints);
        st = session.vtable->get_frame_info(session.session, i, &info, &error);
      }
      if (st == CV_ERROR_OUT_OF_RANGE) break;
      if (st != CV_OK) return VendorError(st, error);
      if (info.pts_seconds >= span->stop_seconds) break;
      out.push_back(i);
    }
  }
  return out;
}

SessionServer::~SessionServer() {
  if (session_.session != nullptr) {
    VendorCall call(session_.hints);
    session_.vtable->close_session(session_.session);
  }
}

absl::Status SessionServer::SendError(uint64_t id, absl::Status status) {
  return channel_->Send({id, ToWireError(status)}, Clock::now() + kHostProgressTimeout);
}

absl::Status SessionServer::ServeFrames(uint64_t id, const ipc::FrameRequest& request) {
  absl::StatusOr<std::vector<int64_t>> indices = ResolveSelection(request, session_);
  if (!indices.ok()) return SendError(id, indices.status());
  if (indices->empty()) return channel_->Send({id, ipc::FrameBatch{{}, true}}, Clock::now() + kHostProgressTimeout);
  const ipc::FrameLayout& layout = session_.opened.layout;
  for (size_t pos = 0; pos < indices->size(); ++pos) {
    const int64_t index = (*indices)[pos];
    absl::StatusOr<ipc::BackendArena::Slot> slot = channel_->AcquireSlot(Clock::now() + kHostProgressTimeout);
    if (!slot.ok()) {
      if (absl::IsResourceExhausted(slot.status())) return SendError(id, slot.status());
      return slot.status();  // the host is gone
    }
    static_assert(CV_BUFFER_PADDING <= ipc::kSlotPadding, "slots must have the padding the SDK promises");
    cv_frame_buffer buffer{slot->bytes.data(), slot->bytes.size()};
    cv_frame_info info{};
    cv_error error{};
    cv_status st;
    const auto decode_start = Clock::now();
    {
      VendorCall call(session_.hints);
      st = session_.vtable->decode_frame(session_.session, index, &buffer, &info, &error);
    }
    const auto decode_time = Clock::now() - decode_start;
    if (st != CV_OK) {
      channel_->arena().Abandon(slot->index);
      return SendError(id, VendorError(st, error));
    }
    ipc::FrameRef ref;
    ref.slot = slot->index;
    ref.offset = 0;
    ref.size = layout.size;
    ref.width = layout.width;
    ref.height = layout.height;
    ref.format = layout.format;
    ref.pixel_format = layout.pixel_format;
    ref.planes = layout.planes;
    ref.pts_seconds = info.pts_seconds;
    ref.duration_seconds = info.duration_seconds;
    ref.pts = info.pts;
    ref.key_frame = info.key_frame != 0;
    ref.index = index;
    ref.request_position = static_cast<uint32_t>(pos);
    channel_->arena().Lend(slot->index);
    const bool final = pos + 1 == indices->size();
    // Waking the host costs both processes a context switch, which at a few
    // hundred microseconds a frame is a few percent of the decode. A frame
    // that was cheap to decode goes out without waking the host when the
    // one before did: the host wakes once per two frames and this one waits
    // for at most one more frame (as cheap, most likely; the host's own
    // liveness slice bounds it anyway). The last frame always wakes it.
    const bool wake = final || channel_->host_wake_pending() || decode_time >= kQuietFrameBelow;
    ipc::FrameBatch batch{{std::move(ref)}, final};
    if (absl::Status s = channel_->Send({id, std::move(batch)}, Clock::now() + kHostProgressTimeout, wake);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

void SessionServer::Run() {
  for (;;) {
    absl::StatusOr<ipc::Request> request = channel_->Receive(Clock::now() + kIdleWait);
    if (!request.ok()) {
      if (absl::IsDeadlineExceeded(request.status())) continue;
      return;  // the host closed the session channel or broke it
    }
    const uint64_t id = request->id;
    absl::Status sent;
    if (std::holds_alternative<ipc::MetadataRequest>(request->body)) {
      sent = channel_->Send({id, session_.opened.metadata}, Clock::now() + kHostProgressTimeout);
    } else if (auto* frames = std::get_if<ipc::FrameRequest>(&request->body)) {
      sent = ServeFrames(id, *frames);
    } else if (auto* ping = std::get_if<ipc::Ping>(&request->body)) {
      sent = channel_->Send({id, ipc::Pong{ping->nonce}}, Clock::now() + kHostProgressTimeout);
    } else if (std::holds_alternative<ipc::Close>(request->body)) {
      (void)channel_->Send({id, ipc::Closed{}}, Clock::now() + kHostProgressTimeout);
      return;
    } else {
      sent = SendError(id, absl::InvalidArgumentError(absl::StrCat(
                               "a ", ipc::KindName(*request), " request is not valid on a session channel")));
    }
    if (!sent.ok()) return;
  }
}

}  // namespace codecvisor::runner
