// File: backends/sdk/runner/read_on.h
//
// How far an approximate-mode time range reads on from its first frame
// (found by time, then index + 1, index + 2, ...): while the frames move
// forward in time. Frames may share a time (a muxer that rounded them
// together, fields muxed as frames), a few in a row; a vendor that answers
// past its stream's end with its last frame again may not go on for ever.
// Pure; thread-compatible.

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_READ_ON_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_READ_ON_H_

namespace codecvisor::runner {

class ReadOn {
 public:
  // Frames after one that may share its time.
  static constexpr int kMaxFramesAtOneTime = 8;

  // Whether the range takes the next frame, at `pts_seconds`: the first
  // always; then one later than the last, or at its time while fewer than
  // kMaxFramesAtOneTime have been. Not one earlier, nor NaN.
  bool Takes(double pts_seconds) {
    if (!first_ && !(pts_seconds >= previous_)) return false;
    same_time_ = !first_ && pts_seconds == previous_ ? same_time_ + 1 : 0;
    if (same_time_ > kMaxFramesAtOneTime) return false;
    first_ = false;
    previous_ = pts_seconds;
    return true;
  }

 private:
  bool first_ = true;
  double previous_ = 0;
  int same_time_ = 0;  // frames taken after the first at previous_
};

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_READ_ON_H_
