// File: backends/cpu/stream_metadata.h
//
// What codecvisor reports about a video stream (cv_stream_metadata), from
// the container header and, in exact mode, the frame table.
//
// Exact mode: begin/end and duration come from the scanned pts table
// (first pts; last pts + its duration). Approximate mode: from the header
// (the stream's start_time, else 0; the stream's duration, else the
// container's), which get_header_times gives in both modes. Rotation is av_display_rotation_get's angle of the display
// matrix side data (counter-clockwise degrees, as ffprobe prints it); width
// and height are the frames' after the rotation FrameRotator applies.

#ifndef CODECVISOR_BACKENDS_CPU_STREAM_METADATA_H_
#define CODECVISOR_BACKENDS_CPU_STREAM_METADATA_H_

#include <vector>

#include "backends/cpu/demuxer.h"
#include "backends/cpu/frame_index.h"
#include "backends/sdk/codecvisor_backend.h"

extern "C" {
#include <libavutil/rational.h>
}

namespace codecvisor::cpu {

// The header's average frame rate (avg_frame_rate, else r_frame_rate), or
// {0, 1} if it gives neither.
AVRational HeaderFrameRate(const AVStream* stream);

// The stream's display matrix (9 values), nullptr when it has none.
const int32_t* DisplayMatrix(const AVStream* stream);

// av_display_rotation_get's angle of the stream's display matrix, 0 when it
// has none (or a degenerate one).
double DisplayMatrixDegrees(const AVStream* stream);

// How many packets `stream`'s own index (the container's, not a scan)
// flags as never shown (outside an MP4 edit list): the header's sample
// count, from the same table, counts them too.
int64_t FramesTheIndexHides(const AVStream* stream);

// What the header says of the demuxer's selected stream's times: its
// start_time (else 0) and its duration (else its DURATION tag, else the
// container's; 0 if none).
cv_header_times DescribeHeaderTimes(const Demuxer& demuxer);

// The selected stream's pixel aspect ratio (FFmpeg's guess from the
// container and the codec parameters), reduced, inverted where the frames
// are turned a quarter; num 0 where the file does not say.
cv_aspect_ratio DescribePixelAspectRatio(const Demuxer& demuxer);

// Describes the demuxer's selected stream. `index` is the exact-mode frame
// table, or nullptr in approximate mode.
cv_stream_metadata DescribeStream(const Demuxer& demuxer, const FrameIndex* index);

// Every stream of the container, by index (at most CV_MAX_STREAMS): its
// type, codec (ffprobe's codec_name; "" for none), stored size for video,
// sample rate and channels for audio. A type FFmpeg does not define, or
// one of no kind listed in cv_stream_type, is CV_STREAM_UNKNOWN.
std::vector<cv_stream_info> DescribeStreams(const AVFormatContext* format);

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_STREAM_METADATA_H_
