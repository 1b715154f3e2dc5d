// File: core/video_decoder.cc
//
// A VideoDecoder's requests: one attempt on the session and the replays
// after a backend's death. How it gets its session is in
// video_decoder_session.cc; the Get* calls that collect frames for the
// caller are in video_decoder_frames.cc.

#include "core/video_decoder.h"

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <exception>
#include <optional>
#include <variant>

#include "absl/strings/str_cat.h"
#include "core/backend_output.h"
#include "core/blame.h"
#include "core/frame_check.h"
#include "core/process_cpu.h"
#include "core/progress_watch.h"

namespace codecvisor::internal {
namespace {

using ipc::Clock;
using ipc::Deadline;

std::atomic<uint64_t> next_token{1};

// Whether a failed send or receive means the backend died, hung or broke
// the protocol (so it is replaced), rather than that the request could not
// be made (too large for the ring, say): only the former is its doing.
bool IsChannelFailure(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsCancelled(s) || absl::IsDeadlineExceeded(s) || absl::IsDataLoss(s);
}

// Whether `request` may be refused as an invalid argument: the runner
// refuses a range whose step is not positive, that starts before frame 0
// or after its stop, and a time range reversed or not a number
// (backends/sdk/runner/resolve_selection.h); a backend, a time that is
// not a number.
bool RunnerRefuses(const ipc::FrameRequest& request) {
  if (auto* range = std::get_if<ipc::IndexRange>(&request.selection)) {
    return range->step <= 0 || range->start < 0 || range->start > range->stop;
  }
  if (auto* span = std::get_if<ipc::PtsRange>(&request.selection)) {
    return !(span->start_seconds <= span->stop_seconds);
  }
  if (auto* times = std::get_if<ipc::PtsList>(&request.selection)) {
    return std::any_of(times->seconds.begin(), times->seconds.end(), [](double t) { return std::isnan(t); });
  }
  return false;
}

// A frame request's error from the backend. Nothing is found missing on
// an open session of a video that has not changed (a file rewritten since
// may lack the stream: the video's error), and a request no one refuses
// is no invalid argument: a backend saying either contradicts what the
// host knows, and it is its error (kInternal), not a missing device or the
// caller's misuse.
absl::Status FrameAnswerError(const ipc::Error& error, const ipc::FrameRequest& request, bool video_may_have_changed) {
  if (error.code != ipc::ErrorCode::kNotFound &&
      (error.code != ipc::ErrorCode::kInvalidArgument || RunnerRefuses(request))) {
    return FromWireError(error);
  }
  if (video_may_have_changed) {
    return absl::DataLossError(
        absl::StrCat("the video's file changed since it was opened (it may have been rewritten): ",
                     ReplaceUnsafeForTerminal(error.message)));
  }
  return absl::InternalError(absl::StrCat("backend refused a request it should serve (",
                                          error.code == ipc::ErrorCode::kNotFound ? "not found" : "invalid argument",
                                          "): ", ReplaceUnsafeForTerminal(error.message)));
}

}  // namespace

VideoDecoder::VideoDecoder(std::shared_ptr<Supervisor> supervisor, ipc::UniqueFd video, std::string label,
                           DecoderOptions options)
    : supervisor_(std::move(supervisor)),
      video_(std::move(video)),
      label_(std::move(label)),
      options_(std::move(options)),
      token_(next_token.fetch_add(1)) {
  supervisor_->SessionOpened();
}

absl::StatusOr<std::unique_ptr<VideoDecoder>> VideoDecoder::Open(std::shared_ptr<Supervisor> supervisor,
                                                                 ipc::UniqueFd video, std::string label,
                                                                 DecoderOptions options) {
  std::unique_ptr<VideoDecoder> decoder(
      new VideoDecoder(std::move(supervisor), std::move(video), std::move(label), std::move(options)));
  decoder->supervisor_->Enroll(decoder->token_, decoder.get());
  MutexLock lock(&decoder->call_mu_);
  if (absl::Status s = decoder->Reopen(); !s.ok()) return s;
  return decoder;
}

VideoDecoder::~VideoDecoder() {
  // No parking from here on (Withdraw waits out one in progress).
  supervisor_->Withdraw(token_);
  // Best effort: tell the session thread to close. Our channel's hang-up
  // ends it anyway if the backend is busy.
  if (session_.channel != nullptr) {
    (void)session_.channel->Send({next_id_++, ipc::Close{}}, Clock::now() + std::chrono::milliseconds(100));
  }
  supervisor_->SessionClosed();
}

void VideoDecoder::CloseInheritedDescriptors() {
  video_.reset();
  if (session_.channel != nullptr) session_.channel->CloseInheritedDescriptors();
}

void VideoDecoder::DropSession() {
  session_ = {};
  backend_.process.reset();  // a dead process's descriptors go with its last holder
  supervisor_->SessionReleased(token_);
}

bool VideoDecoder::TryClose(bool tell_backend, std::shared_ptr<void>* remains) {
  if (caller_.load(std::memory_order_relaxed) == std::this_thread::get_id()) return false;  // this thread's call
  if (!call_mu_.try_lock()) return false;  // a call of its own is running
  MutexLock lock(&call_mu_, std::adopt_lock);
  if (session_.channel != nullptr) {
    // As the destructor does; the hang-up ends the backend's session anyway.
    if (tell_backend) {
      (void)session_.channel->Send({next_id_++, ipc::Close{}}, Clock::now() + std::chrono::milliseconds(100));
    }
    if (remains != nullptr) {
      *remains = std::make_shared<std::pair<OpenedSession, std::shared_ptr<RunningBackend>>>(
          std::move(session_), std::move(backend_.process));
    }
    session_ = {};
    backend_.process.reset();
  }
  return true;
}

absl::Status VideoDecoder::Annotate(const absl::Status& status) const {
  return absl::Status(status.code(), absl::StrCat(label_, " (backend '", backend_name(), "'): ", status.message()));
}

VideoDecoder::Attempt VideoDecoder::RunOnce(const FrameSelection& selection,
                                            absl::FunctionRef<absl::Status(Frame)> sink, uint32_t* delivered,
                                            absl::Status* sink_error, bool alone) {
  SoloGate::Pass pass = PassGate(alone, options_.request_timeout);
  ipc::HostChannel& channel = *session_.channel;
  // The backend copies frames into the copy slots; the frame pool's
  // (ipc/README.md) only carry frames it decoded in place, so only held
  // copy slots can stall it.
  const uint32_t slots = channel.geometry().copy_slots();
  if (channel.arena().held_copy_count() >= slots) {
    return {Annotate(absl::FailedPreconditionError(absl::StrCat(
                "all ", slots, " frame slots are held by frames still alive; destroy or Detach() them, "
                "or open the decoder with more arena_slots"))),
            false};
  }
  const uint64_t id = next_id_++;
  if (absl::Status s = channel.Send({id, selection}, Clock::now() + options_.request_timeout); !s.ok()) {
    return {IsChannelFailure(s) ? s : Annotate(s), IsChannelFailure(s)};
  }
  // A re-issued request starts over: frames already delivered are skipped.
  const uint32_t skip = *delivered;
  absl::Status& first_error = *sink_error;
  bool cancelled = false;  // this request's Cancel was sent
  // A time range holds at most the frames a scan counted; a header's count
  // does not bound it (in approximate mode the backend reads on from the
  // range's first frame to its stop, past a count the header got wrong).
  const int64_t count = std::holds_alternative<ipc::PtsRange>(selection.selection) ? metadata_.num_frames_from_scan
                                                                                   : metadata_.known_frame_count();
  FrameCheck check(selection, count, metadata_.estimated_frame_count());
  // Native frames come only in the session's native layout's format.
  const ipc::FrameLayout& layout = session_.info.layout;
  const bool native = layout.format == ipc::OutputFormat::kNative;
  check.ExpectFormat(options_.output_format, native ? std::optional<std::string>(layout.pixel_format) : std::nullopt);
  // (Not where the time base is unknown, 0/1: how a time rounds to a
  // frame's is not known then.)
  if (const ipc::Rational& tb = metadata_.time_base; options_.seek_mode == SeekMode::kExact && tb.num > 0) {
    check.ExpectScannedTimes(static_cast<double>(tb.num) / static_cast<double>(tb.den));
  }
  // A backend still decoding past the deadline (many frames before the
  // first answer) gets more time; a hung one does not (progress_watch.h).
  const pid_t backend_pid = backend_.process != nullptr ? backend_.process->pid() : -1;
  ProgressWatch progress(options_.request_timeout);
  // Once the call is interrupted: when the backend's answer must have ended.
  std::optional<Deadline> grace_end;
  auto cancel = [&]() -> absl::Status {
    if (cancelled) return absl::OkStatus();
    cancelled = true;
    return channel.Send({id, ipc::Cancel{}}, Clock::now() + options_.request_timeout);
  };
  for (;;) {
    // The CPU sample is a procfs read: renewed only now and then, not for
    // every frame.
    if (const auto now = Clock::now(); progress.WantsSample(now)) progress.Sample(now, ProcessCpuTime(backend_pid));
    absl::StatusOr<ipc::Incoming> in = grace_end
                                           ? channel.Receive(*grace_end)
                                           : ReceiveUnlessInterrupted(channel, Clock::now() + options_.request_timeout);
    if (grace_end && absl::IsDeadlineExceeded(in.status())) {
      // No end of the answer within the grace after a Cancel: the decode
      // hung in the plugin, or one frame takes that long (a backend reads
      // a Cancel between frames: a seek deep into a long group of
      // pictures is one frame). Taken as the hang the request timeout
      // would have found, sooner: the backend is killed and replaced (a
      // thread left stuck in it would never be reclaimed), and the caller
      // gets its kCancelled, not a replay.
      return {absl::DeadlineExceededError(
                  absl::StrCat(kNoAnswerWithin, kInterruptGrace.count(), " ms of a Cancel sent for an interrupt")),
              true};
    }
    if (!grace_end && absl::IsCancelled(in.status()) && Interrupted()) {
      if (first_error.ok()) first_error = Annotate(absl::CancelledError("interrupted"));
      if (absl::Status s = cancel(); !s.ok()) return {IsChannelFailure(s) ? s : Annotate(s), IsChannelFailure(s)};
      grace_end = Clock::now() + kInterruptGrace;
      continue;
    }
    if (absl::IsDeadlineExceeded(in.status()) && channel.arena().held_copy_count() >= slots) {
      // The backend is waiting for a slot, not hung: every one is held by
      // frames the sink kept. Not its fault; this session is mid-request,
      // so the next call starts a fresh one (the runner ends this one when
      // its channel hangs up).
      DropSession();
      return {Annotate(absl::FailedPreconditionError(absl::StrCat(
                  "no frame for ", options_.request_timeout.count(), " ms while all ", slots,
                  " frame slots were held by frames still alive; a sink that keeps frames must Detach() "
                  "them or let them go, or open the decoder with more arena_slots"))),
              false};
    }
    if (absl::IsDeadlineExceeded(in.status())) {
      if (progress.KeepWaiting(Clock::now(), ProcessCpuTime(backend_pid))) {
        // KeepWaiting took a sample: the next wait is measured from it.
        continue;
      }
      if (progress.extensions() > 0) {
        in = absl::DeadlineExceededError(
            absl::StrCat(in.status().message(), "; it used ",
                         std::chrono::duration_cast<std::chrono::milliseconds>(progress.busy()).count(),
                         " ms of CPU in the ", progress.extensions() * options_.request_timeout.count(),
                         " ms it was given beyond that, and never answered"));
      }
    }
    if (!in.ok()) return {in.status(), true};
    progress.Answered();
    if (in->response.id != id) {
      return {absl::DataLossError(absl::StrCat("backend answered request ", in->response.id, " while request ",
                                               id, " was in flight")),
              true};
    }
    if (auto* error = std::get_if<ipc::Error>(&in->response.body)) {
      if (error->code == ipc::ErrorCode::kNativeChanged && !options_.native_formats.empty() && first_error.ok()) {
        return {Annotate(absl::AbortedError(error->message)), false, true};
      }
      return {first_error.ok()
                  ? Annotate(FrameAnswerError(*error, selection, VideoChangedSinceOpen() == VideoChange::kMaybe))
                  : first_error,
              false};
    }
    auto* batch = std::get_if<ipc::FrameBatch>(&in->response.body);
    if (batch == nullptr) {
      return {absl::DataLossError(absl::StrCat("backend answered a frame request with ", ipc::KindName(in->response))),
              true};
    }
    if (in->frames.empty() && !batch->final) {
      // The runner never sends one: an answer that carries nothing and
      // ends nothing would pass for progress, each resetting the wait, and
      // a plugin forging them could hold the call past every deadline.
      return {absl::DataLossError("backend sent a frame batch with no frame that does not end the answer"), true};
    }
    for (ipc::FrameLease& lease : in->frames) {
      // A frame the request did not ask for is a protocol violation: the
      // backend is replaced and the request blamed (the records may be a
      // plugin's forgery).
      if (absl::Status s = check.Next(lease.ref()); !s.ok()) return {s, true};
      if (check.received() <= skip) continue;  // delivered before the restart; the lease frees its slot
      ++*delivered;
      if (!first_error.ok()) continue;
      first_error = Interrupted() ? Annotate(absl::CancelledError("interrupted")) : sink(Frame(std::move(lease)));
      // The sink wants no more: the backend ends the answer after the frame
      // it is decoding, and the frames already on their way are drained, so
      // the next request starts clean on the same session.
      if (!first_error.ok() && !cancelled) {
        if (absl::Status s = cancel(); !s.ok()) return {IsChannelFailure(s) ? s : Annotate(s), IsChannelFailure(s)};
        if (Interrupted()) grace_end = Clock::now() + kInterruptGrace;
      }
    }
    if (batch->final) {
      if (absl::Status s = check.Final(); !s.ok() && !cancelled) return {s, true};
      return {first_error, false};
    }
  }
}

absl::StatusOr<ipc::Incoming> VideoDecoder::ReceiveUnlessInterrupted(ipc::HostChannel& channel,
                                                                     Deadline deadline) const {
  if (interrupted_ == nullptr) return channel.Receive(deadline);
  for (;;) {
    if (Interrupted()) return absl::CancelledError("interrupted");
    const Deadline slice = std::min(deadline, Clock::now() + kInterruptPoll);
    absl::StatusOr<ipc::Incoming> in = channel.Receive(slice);
    if (!absl::IsDeadlineExceeded(in.status()) || slice >= deadline) return in;
  }
}

absl::Status VideoDecoder::ForEachFrame(const FrameSelection& selection, absl::FunctionRef<absl::Status(Frame)> sink,
                                        const std::atomic<bool>* interrupted) {
  interrupted_ = interrupted;
  // Cleared however the call ends (a sink's exception goes on to the caller).
  struct Clear {
    const std::atomic<bool>*& flag;
    ~Clear() { flag = nullptr; }
  } clear{interrupted_};
  return ForEachFrame(selection, sink);
}

absl::Status VideoDecoder::ForEachFrame(const FrameSelection& selection,
                                        absl::FunctionRef<absl::Status(Frame)> sink) {
  // A range's negative bounds count from the end, as in Python: resolved
  // here, against the count this decoder's metadata gives (the scan's, the
  // header's, else the estimate the backend places negative indices by),
  // so that the request and the check of its frames name the same frames.
  if (auto* range = std::get_if<ipc::IndexRange>(&selection.selection);
      range != nullptr && (range->start < 0 || range->stop < 0)) {
    absl::StatusOr<ipc::IndexRange> resolved = CountFromEnd(*range, metadata_.estimated_frame_count());
    if (!resolved.ok()) return Annotate(resolved.status());
    return ForEachFrame(FrameSelection{*resolved}, sink);
  }
  // Long lists go in consecutive requests: one must fit the request ring.
  auto in_pieces = [&](const auto& entries, auto make) -> absl::Status {
    for (size_t first = 0; first < entries.size(); first += kMaxEntriesPerRequest) {
      if (Interrupted()) return Annotate(absl::CancelledError("interrupted"));
      const size_t last = std::min(entries.size(), first + kMaxEntriesPerRequest);
      if (absl::Status s = ForEachFrameOfOneRequest(make(entries.begin() + first, entries.begin() + last), sink);
          !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  };
  if (auto* list = std::get_if<ipc::IndexList>(&selection.selection);
      list != nullptr && list->indices.size() > kMaxEntriesPerRequest) {
    return in_pieces(list->indices, [](auto b, auto e) { return FrameSelection{ipc::IndexList{{b, e}}}; });
  }
  if (auto* list = std::get_if<ipc::PtsList>(&selection.selection);
      list != nullptr && list->seconds.size() > kMaxEntriesPerRequest) {
    return in_pieces(list->seconds, [](auto b, auto e) { return FrameSelection{ipc::PtsList{{b, e}}}; });
  }
  return ForEachFrameOfOneRequest(selection, sink);
}

absl::Status VideoDecoder::ForEachFrameOfOneRequest(const FrameSelection& selection,
                                                    absl::FunctionRef<absl::Status(Frame)> sink) {
  // A sink that throws (std::bad_alloc as a batch grows) is taken as one
  // that returned an error: the request is cancelled and its frames drained,
  // so the session stays in step, and then the exception goes on to the
  // caller. Left to unwind through the request, it would leave the answer
  // unread, and the next request would find it and have the backend killed.
  std::exception_ptr thrown;
  auto guarded = [&](Frame frame) -> absl::Status {
    try {
      return sink(std::move(frame));
    } catch (abi::__forced_unwind&) {
      throw;  // the thread is ending (pthread_exit, a cancellation): never swallowed
    } catch (...) {
      thrown = std::current_exception();
      return absl::CancelledError("the frame sink threw an exception");
    }
  };
  absl::Status status = ServeOneRequest(selection, guarded);
  if (thrown) std::rethrow_exception(thrown);
  return status;
}

absl::Status VideoDecoder::ServeOneRequest(const FrameSelection& selection,
                                           absl::FunctionRef<absl::Status(Frame)> sink) {
  if (caller_.load(std::memory_order_relaxed) == std::this_thread::get_id()) {
    return Annotate(absl::FailedPreconditionError(
        "a frame sink called its own decoder: a decoder serves one call at a time; collect the frames, then call"));
  }
  MutexLock lock(&call_mu_);
  caller_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  // Cleared before the lock is let go however the call ends.
  struct ClearCaller {
    std::atomic<std::thread::id>& caller;
    ~ClearCaller() { caller.store(std::thread::id(), std::memory_order_relaxed); }
  } clear_caller{caller_};
  uint32_t delivered = 0;
  // The sink's first error, kept across replays: once it has failed it gets
  // no more frames, and the caller gets that error.
  absl::Status sink_error;
  Replays replays(options_.request_timeout);
  for (;;) {
    if (Interrupted()) return sink_error.ok() ? Annotate(absl::CancelledError("interrupted")) : sink_error;
    if (session_.channel == nullptr) {
      if (absl::Status s = Reopen(); !s.ok()) return s;
    }
    Attempt attempt = RunOnce(selection, sink, &delivered, &sink_error, replays.alone());
    if (session_.channel != nullptr) supervisor_->SessionUsed(token_);
    if (attempt.native_changed) {
      // The stream changed format or colours part way: from here on this
      // decoder's sessions send RGB, and the frames not yet delivered come
      // from a new one (those delivered are skipped, as after a restart).
      options_.native_formats.clear();
      DropSession();
      continue;
    }
    if (!attempt.channel_failure) {
      if (attempt.status.ok()) supervisor_->RecordSuccess(backend_.generation);
      return attempt.status;
    }
    const ipc::CrashHints hints = session_.channel->ReadCrashHints();
    DeathRecord death;
    absl::StatusOr<RequestBlame> blame = Recover(attempt.status, options_.request_timeout, hints, &death);
    if (!blame.ok()) return Annotate(blame.status());
    // The backend has been replaced; the caller's sink already said no, or
    // the caller was interrupted.
    if (!sink_error.ok()) return sink_error;
    if (Interrupted()) return Annotate(absl::CancelledError("interrupted"));
    // Which frame the death came at, as near as the host knows: frames are
    // delivered in the request's order, and the backend was on a later one.
    const std::string request =
        delivered == 0 ? DescribeSelection(selection)
                       : absl::StrCat(DescribeSelection(selection), " (", delivered,
                                      delivered == 1 ? " frame" : " frames", " delivered, the next one not)");
    if (absl::Status s = replays.AfterDeath(
            *blame, death,
            {request, absl::StrCat("serving ", request),
             "; the request is poison and is not retried. The backend was restarted; other requests go on"},
            Clock::now());
        !s.ok()) {
      if (absl::IsAborted(s)) RecordPoison(replays, options_.request_timeout, DecoderOptions{}.request_timeout);
      return Annotate(s);
    }
    ++retries_;  // the request is replayed
  }
}

}  // namespace codecvisor::internal
