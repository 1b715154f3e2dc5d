// File: tools/conformance/first_seek.h
//
// How the conformance suite tells, without a clock, whether a backend's
// first approximate-mode request for a late frame seeks or decodes from
// the start: by the bytes of the file the backend process reads to answer
// it. Decoding from the start reads every packet before the target's key
// frame (all but the few read ahead while the file was opened); seeking
// reads the key frame's GOP and an index. The packets' sizes and places
// come from ffprobe; the bytes read from the kernel's count for the
// process (/proc/PID/io, process_io.h). What it cannot see: a backend that
// reads the whole file while opening it and decodes from memory later
// (the open's reads are not judged), and one whose reads do not go
// through read calls (a mapped file), which fails as unmeasurable rather
// than passing. Pure but for ProbePackets; thread-safe.

#ifndef CODECVISOR_TOOLS_CONFORMANCE_FIRST_SEEK_H_
#define CODECVISOR_TOOLS_CONFORMANCE_FIRST_SEEK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace codecvisor::conformance {

// One packet of a video stream as ffprobe lists it, in file order.
struct PacketInfo {
  int64_t pts = 0;       // in the stream's time base
  int64_t position = 0;  // byte offset in the file
  int64_t size = 0;
  bool key = false;
};

// The packets of the first video stream of `path` that have a pts and a
// position (ffprobe -show_packets), in file order.
[[nodiscard]] absl::StatusOr<std::vector<PacketInfo>> ProbePackets(const std::string& path);

// Where the key frame a seek to `target_pts` starts from lies in the file.
struct KeyFrameSpan {
  int64_t key_pts = 0;
  int64_t key_position = 0;
  int64_t key_size = 0;
  // The stream's packets before the key frame in the file, in bytes: what
  // decoding from the start reads that seeking does not.
  int64_t bytes_before = 0;
};

// The span of the last key frame at or before `target_pts`.
// kFailedPrecondition when there is none, or when it is the first key
// frame (the sample cannot tell seeking from decoding from the start).
[[nodiscard]] absl::StatusOr<KeyFrameSpan> SpanBefore(const std::vector<PacketInfo>& packets, int64_t target_pts);

// The verdict on one first request: the backend read `open_bytes` while
// the decoder was opened and `request_bytes` while it answered the first
// request. OK when the request read less than half of span.bytes_before
// (decoding from the start reads them all, less what the open read
// ahead). kInternal, saying which, when it read more, or when the open and
// the request together read less than the key frame itself (the reads do
// not show in the process's count, e.g. a backend that maps the file, so
// nothing can be concluded). `what` names the frame and file in messages.
[[nodiscard]] absl::Status JudgeFirstRequest(const KeyFrameSpan& span, int64_t open_bytes, int64_t request_bytes,
                                             const std::string& what);

}  // namespace codecvisor::conformance

#endif  // CODECVISOR_TOOLS_CONFORMANCE_FIRST_SEEK_H_
