// File: core/video_decoder.h
//
// VideoDecoder: one open video on one backend, with torchcodec's access
// methods. Every call is a request to the backend child; frames come back
// as views of the session's arena (see Frame). Errors are values: a
// corrupt file, an index out of range or a dead backend is a Status that
// names the file and the cause, never an exception or a crash.
//
// Thread-safety: one thread at a time per decoder (like torchcodec's); many
// decoders may run at once from many threads, each on its own channel.

#ifndef CODECVISOR_CORE_VIDEO_DECODER_H_
#define CODECVISOR_CORE_VIDEO_DECODER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "core/backend_process.h"
#include "core/blame.h"
#include "core/frame.h"
#include "core/frame_selection.h"
#include "core/solo_gate.h"
#include "core/supervisor.h"
#include "ipc/messages.h"

namespace codecvisor::internal {

using ipc::SeekMode;
using ipc::StreamMetadata;

struct DecoderOptions {
  std::string device;                 // empty: the host's default device ("cpu")
  int32_t stream_index = -1;          // -1: the best video stream
  SeekMode seek_mode = SeekMode::kExact;
  // kRgb24 is HWC ("NHWC" in torchcodec), kRgb24Planar CHW ("NCHW").
  OutputFormat output_format = OutputFormat::kRgb24;
  uint32_t decoder_threads = 0;       // 0: the decoder chooses
  uint32_t output_width = 0;          // 0: the stream's own size
  uint32_t output_height = 0;
  // Native pixel formats the caller converts itself (OpenSession's
  // native_formats): frames of such a stream may come as kNative.
  std::vector<std::string> native_formats;
  // Arena slots: how many frames can be in flight or held zero-copy at once.
  uint32_t arena_slots = 4;
  // Longest wait for the backend to make progress (one response), and for
  // one attempt at opening a file (exact mode scans it whole); an open that
  // a backend crash interrupts is retried with a fresh timeout. Waiting for
  // the backend to (re)start is not counted: that wait is bounded by the
  // larger of open_timeout and 10 s.
  std::chrono::milliseconds request_timeout{30'000};
  std::chrono::milliseconds open_timeout{120'000};
};

// Crash recovery. When the backend dies, hangs (a response later than
// request_timeout) or breaks the protocol while a request is in flight, the
// decoder lets the supervisor kill and restart it, re-opens its session on
// the new process (same descriptor and options), re-issues the request and
// skips the frames it had already delivered, so the caller gets every frame
// once, bit-identical, and sees only latency. A request blamed for two
// deaths in a row is poison: it fails with kAborted naming the backend, how
// it died, the file and the request; the decoder and other sessions go on.
// A death that names no culprit (a fault on a plugin's own thread) makes
// every request then inside vendor code a suspect: each replays alone
// (Supervisor::gate()), and is blamed only when it was alone in there.

// Parking: an idle decoder's session may be closed by the supervisor to
// make room in the backend for another's (core/session_budget.h); its next
// request re-opens it, as after a restart (not counted in retries()).

class VideoDecoder final : private Supervisor::Parkable {
 public:
  // Opens `video` on `supervisor`'s backend, surviving its crashes as above.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<VideoDecoder>> Open(std::shared_ptr<Supervisor> supervisor,
                                                                          ipc::UniqueFd video, std::string label,
                                                                          DecoderOptions options);
  ~VideoDecoder();

  // In a forked child, on the parent's decoder it inherited and will never
  // use nor destroy: closes the child's copies of the decoder's own
  // descriptors (the video's, its session channel's), so that a child of a
  // process with many decoders open does not hold four descriptors for
  // each for its whole life. No lock is taken (a parent thread may have
  // held one at the fork) and nothing is sent.
  void CloseInheritedDescriptors();

  const StreamMetadata& metadata() const { return metadata_; }
  const std::string& label() const { return label_; }
  const std::string& backend_name() const { return supervisor_->manifest().name; }
  // How many times this decoder re-issued a request after a backend failure.
  uint64_t retries() const { return retries_; }

  // Frame `index` (negative counts from the end).
  [[nodiscard]] absl::StatusOr<Frame> GetFrameAt(int64_t index);
  // Frames at `indices`, in that order; duplicates allowed.
  [[nodiscard]] absl::StatusOr<std::vector<Frame>> GetFramesAt(std::span<const int64_t> indices);
  // Frames start, start+step, ... below stop.
  [[nodiscard]] absl::StatusOr<std::vector<Frame>> GetFramesInRange(int64_t start, int64_t stop, int64_t step = 1);
  // The frame played at `seconds`.
  [[nodiscard]] absl::StatusOr<Frame> GetFramePlayedAt(double seconds);
  [[nodiscard]] absl::StatusOr<std::vector<Frame>> GetFramesPlayedAt(std::span<const double> seconds);
  // Every frame played in [start, stop).
  [[nodiscard]] absl::StatusOr<std::vector<Frame>> GetFramesPlayedInRange(double start, double stop);

  // Streams the selected frames to `sink` in request order, zero-copy, with
  // memory bounded by the arena whatever the number of frames. A sink that
  // keeps frames must keep fewer than the arena's slots, or Detach() them
  // (or hand them to another thread that lets them go): a request that
  // finds every slot held for request_timeout ends with kFailedPrecondition,
  // and the backend is not blamed. A sink that returns an error gets no
  // more frames: the backend is told to stop after the frame it is
  // decoding (a Cancel), and that error is returned once the frames already
  // sent are drained. The first error (the backend's or the sink's) is
  // returned with the session ready for the next request, so the decoder
  // stays usable. A sink that throws is treated the same way, and its
  // exception is then rethrown. Index and time lists longer than
  // kMaxEntriesPerRequest go to the backend in consecutive requests: frames
  // of the earlier ones reach the sink before an error in a later one.
  [[nodiscard]] absl::Status ForEachFrame(const FrameSelection& selection,
                                          absl::FunctionRef<absl::Status(Frame)> sink);
  // The same, ending soon after `*interrupted` becomes true (a store from
  // any thread or a signal handler; read every kInterruptPoll while the
  // request waits): the sink gets no more frames, the backend is sent a
  // Cancel and given kInterruptGrace to end its answer, and the call
  // returns kCancelled. A backend that does not answer by then (a decode
  // hung in the plugin) is taken as hung, as the request timeout would
  // have found it: killed and replaced. An interrupted request is never
  // replayed. The waits for a backend to start or restart, for the gate
  // and for room in the request ring do not read the flag.
  [[nodiscard]] absl::Status ForEachFrame(const FrameSelection& selection, absl::FunctionRef<absl::Status(Frame)> sink,
                                          const std::atomic<bool>* interrupted);
  static constexpr std::chrono::milliseconds kInterruptPoll{50};
  static constexpr std::chrono::milliseconds kInterruptGrace{1000};

  // Indices or times per request to the backend (16 KiB on the wire, within
  // the session's 64 KiB request ring).
  static constexpr size_t kMaxEntriesPerRequest = 2048;

 private:
  // The outcome of one attempt at a request.
  struct Attempt {
    absl::Status status;
    bool channel_failure = false;  // the backend died, hung or broke the protocol
    // The session's native frames met one they cannot hold (ipc's
    // kNativeChanged): reopen it for RGB and ask again.
    bool native_changed = false;
  };

  VideoDecoder(std::shared_ptr<Supervisor> supervisor, ipc::UniqueFd video, std::string label,
               DecoderOptions options);
  // (Re)opens the session on the supervisor's current generation.
  absl::Status Reopen() ABSL_EXCLUSIVE_LOCKS_REQUIRED(call_mu_);
  // Whether the video may have changed since its first open (its file's
  // stamp moved), has not (the same stamp, or bytes sealed), or nothing
  // tells (a pipe, or a file that changed during that open).
  enum class VideoChange { kNo, kMaybe, kUnknown };
  VideoChange VideoChangedSinceOpen() const;
  // Lets the session go (it is re-opened on the next request) and tells
  // the supervisor it holds nothing now.
  void DropSession();
  // Supervisor::Parkable: closes the session unless a call is running,
  // telling the backend (TryPark) or not, the backend dead (TryDrop).
  bool TryPark() override { return TryClose(/*tell_backend=*/true, nullptr); }
  bool TryDrop(std::shared_ptr<void>* remains) override { return TryClose(/*tell_backend=*/false, remains); }
  // `remains`, when given, takes the session and the process handle.
  bool TryClose(bool tell_backend, std::shared_ptr<void>* remains);
  // `delivered` counts frames passed on (or drained after a sink error)
  // across replays; `sink_error` is the sink's first error, across replays.
  // `alone`: the attempt passes the backend's gate alone (a suspect's replay).
  Attempt RunOnce(const FrameSelection& selection, absl::FunctionRef<absl::Status(Frame)> sink,
                  uint32_t* delivered, absl::Status* sink_error, bool alone);
  // A poison verdict for the supervisor's restart policy; `timeout` is the
  // deadline that applied, `default_timeout` its default.
  void RecordPoison(const Replays& replays, std::chrono::milliseconds timeout, std::chrono::milliseconds default_timeout);
  // A pass of the backend's gate for one attempt that may take `timeout`.
  SoloGate::Pass PassGate(bool alone, std::chrono::milliseconds timeout);
  // One request to the backend (at most kMaxEntriesPerRequest entries),
  // replayed after crashes until it succeeds or is found to be poison. An
  // exception the sink throws reaches the caller once the request is drained.
  absl::Status ForEachFrameOfOneRequest(const FrameSelection& selection,
                                        absl::FunctionRef<absl::Status(Frame)> sink);
  // ForEachFrameOfOneRequest with a sink that does not throw.
  absl::Status ServeOneRequest(const FrameSelection& selection, absl::FunctionRef<absl::Status(Frame)> sink);
  // After a channel failure: has the supervisor replace the backend and
  // says what the death makes of this session's request.
  // `timeout` is the deadline that applied (open or request), for the reason.
  // `replace`: the backend answered but is out of resources; it is killed
  // and replaced like a hung one.
  absl::StatusOr<RequestBlame> Recover(const absl::Status& failure, std::chrono::milliseconds timeout,
                                       ipc::CrashHints hints, DeathRecord* death, bool replace = false);
  absl::StatusOr<std::vector<Frame>> Collect(const FrameSelection& selection);
  // kResourceExhausted (before anything is decoded) where `count` RGB
  // frames would take more than half the memory this process may use.
  absl::Status RefuseUnlessFits(size_t count) const;
  // Whether the call in progress was interrupted (ForEachFrame's flag).
  bool Interrupted() const { return interrupted_ != nullptr && interrupted_->load(std::memory_order_acquire); }
  // channel.Receive(deadline), which an interruption cuts short with
  // kCancelled.
  absl::StatusOr<ipc::Incoming> ReceiveUnlessInterrupted(ipc::HostChannel& channel, ipc::Deadline deadline) const;
  absl::Status Annotate(const absl::Status& status) const;

  std::shared_ptr<Supervisor> supervisor_;
  // Held by each request and the first open, and by TryPark (try only):
  // what the supervisor's parking may change, session_, is changed under it.
  Mutex call_mu_;
  // The thread in a call, holding call_mu_: a sink that calls its own
  // decoder gets an error, not a deadlock, and that thread never tries a
  // lock it holds (parking from a sink's call on another decoder).
  std::atomic<std::thread::id> caller_{};
  // The backend address space the last session took (SessionAddressSpace).
  uint64_t session_bytes_ = 0;
  BackendHandle backend_;  // the generation the session is open on
  OpenedSession session_;  // channel null when it must be re-opened
  ipc::UniqueFd video_;
  std::string label_;
  DecoderOptions options_;
  StreamMetadata metadata_;
  bool session_opened_before_ = false;  // re-opens must see the same metadata
  // The video as first opened (VideoStamp), where it did not change during
  // that open: a re-open that sees other metadata of an unchanged video,
  // or a frame request refused as if it had changed, is the backend's.
  std::optional<std::string> video_stamp_;
  const uint64_t token_;   // names this session in the supervisor's blame records
  uint64_t next_id_ = 1;
  uint64_t retries_ = 0;
  const std::atomic<bool>* interrupted_ = nullptr;  // set for a call that may be interrupted
};

}  // namespace codecvisor::internal

#endif  // CODECVISOR_CORE_VIDEO_DECODER_H_
