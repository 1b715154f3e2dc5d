// File: tools/conformance/metadata_checks.h
//
// What the conformance suite requires of a backend's stream metadata,
// against its sample's reference (samples.h): pure comparisons, no
// process, so that each rule is tested on its own (metadata_checks_test).
// Where ffprobe read the sample (Sample::header), the metadata must agree
// with what it reads in the headers; with a vendor's reference, with what
// that reference says. Thread-safe (no state).

#ifndef CODECVISOR_TOOLS_CONFORMANCE_METADATA_CHECKS_H_
#define CODECVISOR_TOOLS_CONFORMANCE_METADATA_CHECKS_H_

#include <string>

#include "absl/status/status.h"
#include "ipc/messages.h"
#include "tools/conformance/samples.h"

namespace codecvisor::conformance {

// Checks an exact-mode decoder's metadata of `sample`: time base, codec,
// size, frame counts (the scan's, and the header's where the backend gives
// one), average rate, first and last frame's times, duration (within
// DurationTolerance of the frames' span or of a duration ffprobe reads in
// the headers), the number of video streams (and of all streams, where the
// backend lists them), the pixel format when `exact_output` (a backend that
// claims bit-exact output decodes the file's own format: a hardware
// decoder's own layout, say nv12, may be reported otherwise), and the
// colour tags (MetadataColourTags). The error names the file, the field,
// what was reported and what the reference says; `detail` says what
// passed.
[[nodiscard]] absl::Status CheckMetadata(const ipc::StreamMetadata& m, const Sample& sample, bool exact_output,
                                         std::string* detail);

// Checks an approximate-mode decoder's metadata, which comes from the
// headers: the rate against ffprobe's avg_frame_rate or r_frame_rate, the
// duration as CheckMetadata does, and the frame count the host uses for
// len() (StreamMetadata::estimated_frame_count()) against ffprobe's
// nb_frames, else round(duration x rate) of a duration ffprobe reads, or
// the frames there are, within max(1, 2%) frames.
[[nodiscard]] absl::Status CheckApproximateMetadata(const ipc::StreamMetadata& m, const Sample& sample,
                                                    std::string* detail);

// How far a reported duration may be from the reference's: one frame at
// the stream's average rate (containers round the last frame's duration,
// or leave it out) plus 1 ms (Matroska's timestamps are milliseconds).
double DurationTolerance(const Sample& sample);

// The colour tags (space, range, primaries, transfer) against ffprobe's.
// A tagged stream must be reported with its tag. An untagged one (ffprobe:
// "unknown") must be reported "unknown", "unspecified" or "" (the cpu
// backend's "unknown"), never a tag the file does not carry: a wrong matrix
// or range changes the conversion of native frames. One exception: range
// "tv" for an untagged stream, because untagged means limited range to
// swscale and to the host alike, and formats without a range field
// (YUV4MPEG2 without XCOLORRANGE) are limited by convention.
[[nodiscard]] absl::Status MetadataColourTags(const ipc::StreamMetadata& m, const Sample& sample);

}  // namespace codecvisor::conformance

#endif  // CODECVISOR_TOOLS_CONFORMANCE_METADATA_CHECKS_H_
