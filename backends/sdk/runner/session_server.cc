#include "backends/sdk/runner/session_server.h"

#include <cstddef>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "backends/sdk/runner/abi_convert.h"
#include "backends/sdk/runner/backend_library.h"
#include "backends/sdk/runner/cancel_check.h"
#include "backends/sdk/runner/close_watchdog.h"
#include "backends/sdk/runner/crash_hints.h"
#include "backends/sdk/runner/frame_pool.h"
#include "backends/sdk/runner/read_on.h"
#include "backends/sdk/runner/wake_policy.h"

namespace codecvisor::runner {
namespace {

using ipc::Clock;

constexpr auto kIdleWait = std::chrono::hours(24);

cv_status AcquireLateSlot(cv_frame_buffer* buffer, cv_error* error) {
  auto* target = reinterpret_cast<FrameTarget*>(buffer);
  if (target->slot.has_value()) {
    PointAt(target, *target->slot);  // again: the same slot
    return CV_OK;
  }
  absl::StatusOr<ipc::BackendArena::Slot> slot = target->channel->AcquireSlot(Clock::now() + kHostProgressTimeout);
  if (!slot.ok()) {
    target->acquire_failure = slot.status();
    if (error != nullptr) {
      std::snprintf(error->message, sizeof(error->message), "no frame buffer: %s",
                    std::string(slot.status().message()).c_str());
    }
    return absl::IsResourceExhausted(slot.status()) ? CV_ERROR_RESOURCE_EXHAUSTED : CV_ERROR_INTERNAL;
  }
  PointAt(target, *slot);
  return CV_OK;
}

}  // namespace

SessionServer::~SessionServer() {
  if (session_.session != nullptr) {
    {
      CloseWatchdog::Watch watch;
      if (session_.close_watchdog != nullptr) {
        watch = session_.close_watchdog->Start(absl::StrCat("close_session of session ", session_.opened.session_id));
      }
      VendorCall call(session_.hints);
      session_.vtable->close_session(session_.session);
    }
    if (session_.pool != nullptr) session_.pool->ReportMisuseAtClose();
  }
}

absl::Status SessionServer::SendError(uint64_t id, absl::Status status) {
  return channel_->Send({id, ToWireError(status)}, Clock::now() + kHostProgressTimeout);
}

absl::Status SessionServer::ServeFrames(uint64_t id, const ipc::FrameRequest& request) {
  absl::StatusOr<ResolvedFrames> indices = ResolveSelection(request, session_);
  if (!indices.ok()) return SendError(id, indices.status());
  if (indices->empty()) return channel_->Send({id, ipc::FrameBatch{{}, true}}, Clock::now() + kHostProgressTimeout);
  const ipc::FrameLayout& layout = session_.opened.layout;
  const bool late = WantsLateFrameBuffers(*session_.vtable);
  // Times the vendor decodes itself (a variable-rate stream's frames are
  // not at the indices' nominal times); ResolveSelection has checked each.
  // In approximate mode a time range starts at the frame playing at its
  // start, found the same way, and reads on from there.
  const bool by_time = DecodesAtSeconds(*session_.vtable);
  const auto* times = by_time ? std::get_if<ipc::PtsList>(&request.selection) : nullptr;
  const auto* span_by_time = by_time && session_.opened.metadata.num_frames_from_scan < 0
                                 ? std::get_if<ipc::PtsRange>(&request.selection)
                                 : nullptr;
  int64_t previous = -1;
  ReadOn read_on;
  // Such a range is not bounded by the header rate's count of frames in it
  // (a burst faster than the average has more): it ends at the first frame
  // at or after its stop, or at the stream's end.
  const uint64_t count = span_by_time != nullptr ? std::numeric_limits<uint64_t>::max() : indices->size();
  // A slot the host cannot free in time is the caller's doing (it holds
  // every frame): an error for this request. Any other failure to get one
  // means the host is gone.
  auto slot_failure = [&](const absl::Status& failure) {
    return absl::IsResourceExhausted(failure) ? SendError(id, failure) : failure;
  };
  for (uint64_t pos = 0; pos < count; ++pos) {
    if (pos > 0 && Cancelled(id)) {
      return channel_->Send({id, ipc::FrameBatch{{}, true}}, Clock::now() + kHostProgressTimeout);
    }
    int64_t index = span_by_time != nullptr ? -1 : (*indices)[pos];
    const double* at_seconds = times != nullptr ? &times->seconds[pos] : nullptr;
    if (span_by_time != nullptr) {
      if (pos == 0) {
        at_seconds = &span_by_time->start_seconds;
      } else {
        index = previous + 1;
      }
    }
    FrameTarget target;
    target.channel = channel_.get();
    if (late) {
      target.buffer.acquire = &AcquireLateSlot;
    } else {
      absl::StatusOr<ipc::BackendArena::Slot> slot = channel_->AcquireSlot(Clock::now() + kHostProgressTimeout);
      if (!slot.ok()) return slot_failure(slot.status());
      PointAt(&target, *slot);
    }
    cv_frame_info info{};
    info.index = index;  // a plugin that leaves it alone describes the frame asked for
    cv_error error{};
    cv_status st;
    const auto decode_start = Clock::now();
    {
      VendorCall call(session_.hints);
      // The vendor may ask, mid-frame, whether this request was cancelled.
      std::optional<CancelCheck::Scope> watch;
      if (session_.cancel != nullptr) watch.emplace(*session_.cancel, [&] { return Cancelled(id); });
      st = at_seconds != nullptr
               ? session_.vtable->decode_frame_at_seconds(session_.session, *at_seconds, &target.buffer, &info, &error)
               : session_.vtable->decode_frame(session_.session, index, &target.buffer, &info, &error);
    }
    const auto decode_time = Clock::now() - decode_start;
    if (st != CV_OK || !target.acquire_failure.ok()) {
      if (target.slot.has_value()) channel_->arena().Abandon(target.slot->index);
      // Stopped at the host's cancel: the vendor's error is not the
      // request's, and the answer ends here.
      if (cancelled_ == id) return channel_->Send({id, ipc::FrameBatch{{}, true}}, Clock::now() + kHostProgressTimeout);
      if (!target.acquire_failure.ok()) return slot_failure(target.acquire_failure);
      // Reading on from a time range's first frame: the stream ended.
      if (span_by_time != nullptr && pos > 0 && st == CV_ERROR_OUT_OF_RANGE) {
        return channel_->Send({id, ipc::FrameBatch{{}, true}}, Clock::now() + kHostProgressTimeout);
      }
      // The host reopens for RGB on this code; from a session whose frames
      // are RGB already it is the plugin's mistake, not the file's.
      if (st == CV_ERROR_NATIVE_CHANGED && layout.format != ipc::OutputFormat::kNative) {
        return SendError(id, absl::InternalError(absl::StrCat(
                                 "the backend's decode_frame returned CV_ERROR_NATIVE_CHANGED for frame ", index,
                                 " of a session whose frames are not laid out natively (the code is for sessions "
                                 "that lay frames out natively in place of the RGB asked for)")));
      }
      return SendError(id, VendorError(st, error));
    }
    if (!target.slot.has_value()) {
      return SendError(id, absl::InternalError(absl::StrCat(
                               "the backend returned frame ", index,
                               " without acquiring a buffer for it (it asks for late frame buffers, "
                               "so decode_frame must call buffer->acquire before it writes)")));
    }
    if (at_seconds == nullptr && info.index != index) {
      // A frame described as another than the one asked for: its pixels
      // and times would go out under the wrong index.
      channel_->arena().Abandon(target.slot->index);
      return SendError(
          id, absl::InternalError(absl::StrCat("the backend's decode_frame for frame ", index, " described frame ",
                                               info.index, " (cv_frame_info.index must be the index asked for)")));
    }
    if (at_seconds != nullptr) {
      if (info.index < 0) {
        channel_->arena().Abandon(target.slot->index);
        return SendError(id, absl::InternalError(absl::StrCat("the backend returned frame index ", info.index,
                                                              " for the frame played at ", *at_seconds, " s")));
      }
      index = info.index;
    }
    previous = index;
    // Reading on must move forward in time (read_on.h).
    if (span_by_time != nullptr && !read_on.Takes(info.pts_seconds)) {
      channel_->arena().Abandon(target.slot->index);
      return channel_->Send({id, ipc::FrameBatch{{}, true}}, Clock::now() + kHostProgressTimeout);
    }
    // In approximate mode (no scan), a time range's answer ends at the first
    // frame that starts at or after its stop. The list above came from the
    // vendor's frame infos, which there are estimates from the header's
    // rate: an index's estimated time can fall in a gap of a variable-rate
    // stream, and the frame found there starts after the gap. The host
    // refuses such a frame as a forgery; the range holds none of the frames
    // from there on. With a scan, infos and frames agree, and a frame past
    // the stop is the vendor's error, which the host is left to see.
    if (const auto* span = std::get_if<ipc::PtsRange>(&request.selection);
        span != nullptr && session_.opened.metadata.num_frames_from_scan < 0 &&
        !(info.pts_seconds < span->stop_seconds)) {
      channel_->arena().Abandon(target.slot->index);
      return channel_->Send({id, ipc::FrameBatch{{}, true}}, Clock::now() + kHostProgressTimeout);
    }
    // Times the host would take for a forgery (a Matroska block lasting
    // 10^13 s, a damaged cluster time): the file's, so the request fails as
    // the file's, not the backend.
    if (!ipc::FrameTimesPossible(info.pts_seconds, info.duration_seconds)) {
      channel_->arena().Abandon(target.slot->index);
      return SendError(id, absl::DataLossError(absl::StrCat(
                               "frame ", index, " is at ", info.pts_seconds, " s lasting ", info.duration_seconds,
                               " s: times a stream cannot have (finite, within ", ipc::kMaxStreamSeconds,
                               " s either way, the duration not negative); the file's timestamps are damaged")));
    }
    ipc::FrameRef ref;
    ref.slot = target.slot->index;
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
    channel_->arena().Lend(target.slot->index);
    const bool final = pos + 1 == count;
    // Cheap frames share a host wake-up (wake_policy.h). A frame waits at
    // most a few cheap decodes for it (the host's own liveness slice
    // bounds that anyway).
    const bool wake = ShouldWakeHost({.final = final,
                                      .decode_time = decode_time,
                                      .unwoken = channel_->unwoken_responses(),
                                      .free_slots = channel_->arena().FreeSlots(),
                                      .frame_bytes = layout.size});
    ipc::FrameBatch batch{{std::move(ref)}, final};
    if (absl::Status s = channel_->Send({id, std::move(batch)}, Clock::now() + kHostProgressTimeout, wake);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

bool SessionServer::Cancelled(uint64_t id) {
  if (cancelled_ == id) return true;
  if (pending_.has_value() || !channel_->HasRequest()) return false;
  absl::StatusOr<ipc::Request> request = channel_->Receive(Clock::now());
  // A broken channel ends the request at its next send.
  if (!request.ok()) return false;
  if (std::holds_alternative<ipc::Cancel>(request->body)) {
    if (request->id != id) return false;
    cancelled_ = id;
    return true;
  }
  pending_ = *std::move(request);
  return false;
}

void SessionServer::Run() {
  for (;;) {
    absl::StatusOr<ipc::Request> request =
        pending_.has_value() ? *std::exchange(pending_, std::nullopt) : channel_->Receive(Clock::now() + kIdleWait);
    if (!request.ok()) {
      if (absl::IsDeadlineExceeded(request.status())) continue;
      return;  // the host closed the session channel or broke it
    }
    // A cancel that came after its request's answer ended.
    if (std::holds_alternative<ipc::Cancel>(request->body)) continue;
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
