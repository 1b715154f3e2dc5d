// File: core/video_decoder_session.cc
//
// How a VideoDecoder gets its session, and gets it back: the open (and
// re-open after a backend's death, which must describe the same stream),
// the recovery that reports a failure and waits for the backend's exit to
// be recorded, the solo gate a suspect request replays through, and the
// record of a poison request. The requests themselves are in
// video_decoder.cc.

#include <fcntl.h>
#include <sys/stat.h>

#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/blame.h"
#include "core/session_budget.h"
#include "core/video_decoder.h"

namespace codecvisor::internal {
namespace {

using ipc::Clock;
using ipc::Deadline;

// What says whether the video behind `fd` changed since it was opened: a
// memfd sealed against writes and resizing (bytes the host holds) cannot;
// a file's identity, size and modification and change times say whether
// it may have been rewritten (the change time moves for a chmod or a new
// link too: "may"). nullopt where nothing tells (a pipe).
std::optional<std::string> VideoStamp(int fd) {
  constexpr int kFixed = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW;
  if (const int seals = fcntl(fd, F_GET_SEALS); seals >= 0 && (seals & kFixed) == kFixed) return "sealed";
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return absl::StrCat(st.st_dev, ":", st.st_ino, ":", st.st_size, ":", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, ":",
                      st.st_ctim.tv_sec, ".", st.st_ctim.tv_nsec);
}

// How long a request that gave up on its backend waits for its exit to be recorded.
constexpr auto kExitWait = std::chrono::seconds(10);

// Whether a re-opened session describes the stream exactly as before,
// bit for bit: a NaN a backend reports (an unknown rate, say) equals
// itself here, where operator== would call every re-open a different stream.
bool SameStream(const ipc::StreamMetadata& a, const ipc::StreamMetadata& b) {
  absl::StatusOr<kj::Array<capnp::word>> x = ipc::EncodeResponse({0, a});
  absl::StatusOr<kj::Array<capnp::word>> y = ipc::EncodeResponse({0, b});
  return x.ok() && y.ok() && x->size() == y->size() &&
         std::memcmp(x->begin(), y->begin(), x->size() * sizeof(capnp::word)) == 0;
}

constexpr auto kBusyRetry = std::chrono::milliseconds(50);
constexpr int kBusyRetries = 4;  // 0.5 s in all
// Waits for threads the user's other processes give back, doubling from
// kBusyRetry: 1.55 s in all.
constexpr int kShortageWaits = 5;
// Sessions an open refused for want of resources parks to make room
// (Reopen).
constexpr int kMaxParksPerOpen = 4;

}  // namespace

absl::StatusOr<RequestBlame> VideoDecoder::Recover(const absl::Status& failure, std::chrono::milliseconds timeout,
                                           ipc::CrashHints hints, DeathRecord* death, bool replace) {
  // A hang or a malformed message leaves the child alive: the supervisor
  // kills it for us, and the blame is ours.
  std::string reason;
  if (absl::IsDeadlineExceeded(failure)) {
    // The wait's own "timed out after N ms" times its last slice only (a
    // wait renewed while the backend works, or polled for an interrupt),
    // which read as a contradiction beside the timeout; what follows it
    // (the CPU the backend used) is kept.
    absl::string_view detail = failure.message();
    if (absl::StartsWith(detail, "timed out after ")) {
      const size_t more = detail.find("; ");
      detail = more == absl::string_view::npos ? absl::string_view() : detail.substr(more + 2);
    }
    if (absl::StartsWith(detail, kNoAnswerWithin)) {
      reason = std::string(detail);  // its own limit (an interrupt's grace), not the request timeout
    } else {
      reason = detail.empty() ? absl::StrCat(kNoAnswerWithin, timeout.count(), " ms")
                              : absl::StrCat(kNoAnswerWithin, timeout.count(), " ms (", detail, ")");
    }
  } else if (absl::IsDataLoss(failure)) {
    reason = absl::StrCat("malformed message: ", failure.message());
  } else {
    reason = std::string(failure.message());
  }
  if (replace) reason = absl::StrCat("out of resources: ", failure.message());
  const bool kill = replace || absl::IsDeadlineExceeded(failure) || absl::IsDataLoss(failure);
  absl::StatusOr<DeathRecord> record =
      supervisor_->ReportFailure(backend_.generation, token_, kill, reason, Clock::now() + kExitWait);
  DropSession();
  if (!record.ok()) return record.status();
  *death = *record;
  return Judge(*death, hints, token_);
}

VideoDecoder::VideoChange VideoDecoder::VideoChangedSinceOpen() const {
  if (!video_stamp_.has_value()) return VideoChange::kUnknown;
  const std::optional<std::string> now = VideoStamp(video_.get());
  if (!now.has_value()) return VideoChange::kUnknown;
  return *now == *video_stamp_ ? VideoChange::kNo : VideoChange::kMaybe;
}

absl::Status VideoDecoder::Reopen() {
  // The first open's stamp, kept if the video did not change during the
  // open (a file still being written as the backend scanned it).
  const std::optional<std::string> stamp_before = session_opened_before_ ? std::nullopt : VideoStamp(video_.get());
  ipc::OpenSession open;
  open.file_label = label_;
  open.stream_index = options_.stream_index;
  open.seek_mode = options_.seek_mode;
  open.output_format = options_.output_format;
  open.decoder_threads = options_.decoder_threads;
  open.device = options_.device;
  open.output_width = options_.output_width;
  open.output_height = options_.output_height;
  open.native_formats = options_.native_formats;
  const Deadline open_deadline = Clock::now() + options_.open_timeout;
  int busy_retries = 0;
  int shortage_waits = 0;
  int parks = 0;
  bool only_exhaustion = true;  // every death of this open so far was a replacement of an exhausted process
  Replays replays(options_.open_timeout);
  for (;;) {
    // Waiting for a (re)start is not the open: a short open timeout must
    // not fail an open because a restart under load took longer than it.
    absl::StatusOr<BackendHandle> handle = supervisor_->Acquire(
        Clock::now() + std::max<std::chrono::milliseconds>(options_.open_timeout, supervisor_->RecoveryWait()));
    if (!handle.ok()) return Annotate(handle.status());
    // Room in the backend's address space first, as this decoder's last
    // session took (the last opened's for a first open).
    supervisor_->MakeRoom(token_, session_bytes_);
    bool channel_failure = false;
    uint64_t file_token = 0;
    absl::StatusOr<OpenedSession> opened;
    {
      SoloGate::Pass pass = PassGate(replays.alone(), options_.open_timeout);
      // Each attempt has the whole open timeout from here: a backend that
      // hung or died in the last one, and the wait for the gate, must not
      // use it up.
      const Deadline attempt_deadline = Clock::now() + options_.open_timeout;
      opened = handle->process->OpenSession(video_.get(), open, options_.arena_slots, attempt_deadline,
                                            &channel_failure, &file_token);
    }
    if (opened.ok() ||
        (!channel_failure && !IsHostShortage(opened.status()) && !IsBackendDescriptorShortage(opened.status()))) {
      supervisor_->OpenAnswered(handle->generation);
    }
    if (opened.ok()) {
      if (session_opened_before_ && !SameStream(opened->info.metadata, metadata_)) {
        // The same bytes described two ways by two processes of one
        // backend: its inconsistency, not the video's, unless the video
        // may have changed meanwhile (or nothing tells).
        const VideoChange change = VideoChangedSinceOpen();
        if (change == VideoChange::kNo) {
          return Annotate(absl::InternalError(
              "the restarted backend describes the stream differently from before, and the video has not changed"));
        }
        return Annotate(absl::DataLossError(
            absl::StrCat("the restarted backend describes the stream differently from before",
                         change == VideoChange::kMaybe
                             ? ": the video's file changed since it was opened (it may have been rewritten)"
                             : "")));
      }
      if (!session_opened_before_) {
        const std::optional<std::string> stamp_after = VideoStamp(video_.get());
        video_stamp_ = stamp_before == stamp_after ? stamp_before : std::nullopt;
      }
      backend_ = *handle;
      session_ = *std::move(opened);
      metadata_ = session_.info.metadata;
      session_opened_before_ = true;
      supervisor_->WatchChannel(backend_.generation, session_.channel);
      session_bytes_ = SessionAddressSpace(ipc::Layout::For(session_.channel->geometry()).total,
                                           options_.decoder_threads, std::thread::hardware_concurrency());
      supervisor_->SessionHolds(token_, session_bytes_);
      return absl::OkStatus();
    }
    // The backend out of something (threads, memory): a passing shortage
    // gets a few short waits; a lasting one replaces the process, which
    // counts as a crash for the restart budget, and the open goes on on a
    // fresh one (an open that exhausts even that one is poison). Waiting
    // out the open timeout on an exhausted process would stall the caller
    // for minutes.
    // The host's own shortage is not the backend's: the open fails as it is.
    // Out of descriptors with no session of this host open in it, after it
    // answered opens (a session, or a failed open's error), the backend's
    // plugin holds them (a leak), which a fresh process cures: taken as
    // exhausted. With sessions open, the caller's to close; on a process
    // that has answered none (a plugin whose own descriptors leave no room
    // for a session), the manifest's open_files to raise: neither is cured
    // by a fresh process.
    const bool leaked = !channel_failure && IsBackendDescriptorShortage(opened.status()) &&
                        supervisor_->AnsweredOpensAndHoldsNoSession(handle->generation);
    const bool exhausted =
        leaked || (!channel_failure && absl::IsResourceExhausted(opened.status()) && !IsHostShortage(opened.status()));
    // The user's threads at their limit (the runner's noThreadFree): a
    // shortage of processes that may be ending (a backend just killed),
    // waited out a while, then the caller's to act on. No replacement cures
    // it, and neither the file nor the backend is blamed.
    if (!channel_failure && IsUsersThreadShortage(opened.status())) {
      const auto wait = kBusyRetry * (1 << shortage_waits);
      if (shortage_waits < kShortageWaits && Clock::now() + wait < open_deadline) {
        ++shortage_waits;
        std::this_thread::sleep_for(wait);
        continue;
      }
      return Annotate(opened.status());
    }
    if (!channel_failure && !exhausted) return Annotate(opened.status());
    // The backend out of room with other decoders' sessions open in it (its
    // address space full of their regions and stacks): one of them is
    // parked, and the open tried again once its close has had a moment to
    // land, before the backend is taken as exhausted. A few at most: an
    // open that exhausts the backend on its own would otherwise close
    // every idle session before the backend is replaced anyway.
    if (exhausted && parks < kMaxParksPerOpen && Clock::now() + kBusyRetry < open_deadline &&
        supervisor_->ParkOne(token_)) {
      ++parks;
      std::this_thread::sleep_for(kBusyRetry);
      continue;
    }
    if (exhausted && busy_retries < kBusyRetries && Clock::now() + kBusyRetry * (busy_retries + 1) < open_deadline) {
      std::this_thread::sleep_for(kBusyRetry * ++busy_retries);
      continue;
    }
    busy_retries = 0;
    backend_ = *handle;
    DeathRecord death;
    // Opens are served one at a time on the control channel, and every open
    // queued behind the one in the vendor call fails with it: only the open
    // the hints name was inside vendor code.
    ipc::CrashHints hints = handle->process->ControlCrashHints();
    if (file_token == 0 || hints.call_token != file_token) hints = {};
    absl::StatusOr<RequestBlame> blame = Recover(opened.status(), options_.open_timeout, hints, &death, exhausted);
    if (!blame.ok()) return Annotate(blame.status());
    only_exhaustion = only_exhaustion && exhausted;
    if (absl::Status s = replays.AfterDeath(
            *blame, death, {"opening the file", "opening the file", "; it is poison and is not retried"}, Clock::now());
        s.ok()) {
      ++retries_;  // the open is tried again
    } else {
      if (absl::IsAborted(s)) RecordPoison(replays, options_.open_timeout, DecoderOptions{}.open_timeout);
      // Nothing crashed: each time the backend was out of something (its
      // address space, threads, descriptors, or what its plugin needs),
      // and a replacement was too.
      if (absl::IsAborted(s) && only_exhaustion) {
        const SandboxPolicy& limits = supervisor_->manifest().sandbox;
        s = absl::AbortedError(absl::StrCat(
            "opening the file exhausted the backend twice, nothing crashed (last: ", death.Describe(),
            "): what its session asks for (its frames' shared memory and ", options_.decoder_threads,
            " decoder threads, 0 being one per core) did not fit in what the backend had, within its manifest's "
            "[sandbox] memory_mb = ",
            limits.memory_mb, " and threads = ", limits.threads,
            "; fewer decoder threads or larger limits may open it. It is poison and is not retried"));
      }
      // An exact-mode open reads every packet: a huge (or padded) file can
      // outlast the open timeout without anything being wrong.
      if (options_.seek_mode == SeekMode::kExact && death.KilledForNoAnswer()) {
        s = absl::Status(s.code(), absl::StrCat(s.message(),
                                                "; an exact-mode open reads the whole file to index its frames: "
                                                "if the file is that large, a longer open timeout (open_timeout; "
                                                "the CLI's --open-timeout, conformance's --timeout) or approximate "
                                                "mode (which reads the header only) may open it"));
      }
      return Annotate(s);
    }
  }
}

SoloGate::Pass VideoDecoder::PassGate(bool alone, std::chrono::milliseconds timeout) {
  SoloGate& gate = supervisor_->gate();
  if (!alone) return gate.Enter();
  // Waits for the others at most one timeout, and holds them out until two
  // timeouts after asking: a suspect's replay only delays them.
  const auto now = Clock::now();
  return gate.EnterSolo(now + timeout, now + 2 * timeout);
}

void VideoDecoder::RecordPoison(const Replays& replays, std::chrono::milliseconds timeout,
                                std::chrono::milliseconds default_timeout) {
  // A request killed for hanging under a deadline its caller made shorter
  // than the default (a timeout of 1 ms) says the caller wanted it sooner,
  // not that the backend is broken: it must not quarantine the backend that
  // every decoder of the process shares.
  supervisor_->RecordPoison(replays.guilty_generations(),
                            !(replays.blamed_only_for_hangs() && timeout < default_timeout));
}

}  // namespace codecvisor::internal
