// File: codecvisor/video_decoder.h
//
// codecvisor::VideoDecoder: one open video on one backend, with torchcodec's
// access methods. Every call is a request to the backend's sandboxed child
// process. If that process crashes or hangs mid-request, it is restarted
// and the request replayed: the caller sees latency, every frame once. A
// request that kills its backend twice is "poison" and fails with kAborted;
// the decoder stays usable. Open decoders with Host::OpenDecoder.
//
// Thread-safety: one thread at a time per decoder (as torchcodec's); many
// decoders may be used at once from many threads. A call made while another
// is in progress on the same decoder (another thread's, or from a
// ForEachFrame sink) fails with kFailedPrecondition.

#ifndef CODECVISOR_VIDEO_DECODER_H_
#define CODECVISOR_VIDEO_DECODER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "codecvisor/frame.h"
#include "codecvisor/status.h"
#include "codecvisor/types.h"

namespace codecvisor {
namespace api {
struct DecoderAccess;
}  // namespace api

class VideoDecoder {
 public:
  ~VideoDecoder();
  VideoDecoder(const VideoDecoder&) = delete;
  VideoDecoder& operator=(const VideoDecoder&) = delete;

  const StreamMetadata& metadata() const;
  // What error messages call the video (its path).
  const std::string& label() const;
  // The backend serving this decoder ("cpu", a vendor's name).
  const std::string& backend_name() const;
  // How many times a request was replayed after its backend failed.
  uint64_t retries() const;

  // Frame `index` (negative counts from the end).
  Result<Frame> GetFrameAt(int64_t index);
  // The frames at `indices`, in that order; duplicates allowed.
  Result<std::vector<Frame>> GetFramesAt(std::span<const int64_t> indices);
  // Frames start, start + step, ... below stop.
  Result<std::vector<Frame>> GetFramesInRange(int64_t start, int64_t stop, int64_t step = 1);
  // The frame on screen at `seconds`.
  Result<Frame> GetFramePlayedAt(double seconds);
  Result<std::vector<Frame>> GetFramesPlayedAt(std::span<const double> seconds);
  // Every frame played in [start, stop). A stop past the stream's end
  // gives the frames to the end (the Python package raises ValueError
  // there, as torchcodec's Python layer does).
  Result<std::vector<Frame>> GetFramesPlayedInRange(double start, double stop);
  // (A Get* call whose frames come to more than half the memory this
  // process may use, the machine's or its cgroup's limit, stops there with
  // kResourceExhausted: GetFramesAt and GetFramesPlayedAt, whose count is
  // known, before anything is decoded, where their RGB frames would; ForEachFrame holds no
  // more than the arena.)

  // Streams the selected frames to `sink` in request order, zero copy, with
  // memory bounded by the arena however many frames are selected. A sink
  // that keeps frames must keep fewer than arena_slots or Detach() them,
  // counting this decoder's frames still alive from earlier calls (a sink
  // that holds every slot fails with kFailedPrecondition, once the request
  // deadline passes). A
  // sink that returns an error (e.g. kCancelled, to stop early) gets no more
  // frames, and the backend stops decoding after the frame in hand. The
  // first error (the backend's or the sink's) is returned with the decoder
  // ready for its next request. A sink that throws is treated as one that
  // returned an error, and its exception is rethrown once the request is
  // drained: the decoder stays usable and its backend is not blamed. A
  // sink may destroy this decoder (its unique_ptr's reset()): the sink gets
  // no more frames, the call ends its request and returns kCancelled (or
  // the sink's own error), and the session closes then.
  Status ForEachFrame(const FrameSelection& selection, const std::function<Status(Frame)>& sink);
  // ForEachFrame that also ends soon after `interrupted` becomes true: set
  // it from another thread, or from a signal handler (a lock-free atomic
  // store), to stop a call waiting on a slow or hung backend (Ctrl-C). The
  // flag is read at least every 50 ms while the call waits and before each
  // frame goes to the sink; once it is seen the sink gets no more frames,
  // the backend is told to stop and given 1 s to end its answer, and the
  // call returns kCancelled. A backend that does not answer in that time (a
  // decode hung in its plugin) is taken as hung, as the request timeout
  // would have found it: killed and restarted (other decoders on it replay
  // their requests). An interrupted request is never replayed. Waits for a
  // backend to start or restart do not read the flag. The flag is only
  // read: reset it before the next call.
  Status ForEachFrame(const FrameSelection& selection, const std::function<Status(Frame)>& sink,
                      const std::atomic<bool>& interrupted);

 private:
  friend struct api::DecoderAccess;
  struct Impl;
  explicit VideoDecoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace codecvisor

#endif  // CODECVISOR_VIDEO_DECODER_H_
