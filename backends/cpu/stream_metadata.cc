// File: backends/cpu/stream_metadata.cc

#include "backends/cpu/stream_metadata.h"

#include <cmath>
#include <cstdio>
#include <string_view>
#include <utility>

#include "backends/cpu/av_enums.h"
#include "backends/cpu/av_util.h"
#include "backends/cpu/frame_rotator.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/display.h>
#include <libavutil/parseutils.h>
}

namespace codecvisor::cpu {
namespace {

void SetName(char (&out)[CV_NAME_BYTES], const char* name) {
  std::snprintf(out, sizeof(out), "%s", name != nullptr ? name : "unknown");
}

bool Valid(AVRational r) { return r.num > 0 && r.den > 0; }

// The stream's duration in seconds from the header, 0 if it gives none:
// the stream's own; else its DURATION tag (Matroska and WebM have no
// per-stream duration field, and FFmpeg's muxer writes one tag per stream,
// "00:00:02.000000000"); else the container's, which spans every stream.
// In Matroska a stream that starts late (at `begin`) is ambiguous: FFmpeg's
// muxer writes both the tag and the segment's duration as end times from
// the timeline's 0 (a stream from 5 s to 7 s says 7 s, and so does the
// segment), where mkvmerge's statistics tag is the stream's span (2 s),
// under keys with a language suffix where it wrote one ("DURATION-eng").
// A file FFmpeg wrote (its muxing app, the container's "encoder", is
// "Lavf...") holds FFmpeg's own tag under the plain key, an end time; the
// tags it copied from its source (ffmpeg keeps stream metadata: a cut or
// remux of an mkvmerge file keeps "DURATION-eng" and the statistics tags)
// are stale and not read. In a file another muxer wrote, a tag that
// mkvmerge's statistics tags (_STATISTICS_WRITING_APP) mark is a span,
// unless it would end past the segment; any other is an end time. The
// segment's own duration is taken as one. FLV's duration (onMetaData, as FFmpeg's muxer
// writes it) runs from the first decode time, and a stream with B-frames
// shows its first frame video_delay frames after that: it spans the
// duration less that delay (never more than its start; a file whose times
// start late for another reason, -output_ts_offset, keeps the duration).
double HeaderDuration(const AVStream* stream, const AVFormatContext* format, double begin) {
  if (stream->duration != AV_NOPTS_VALUE && stream->duration > 0) return Seconds(stream->duration, stream->time_base);
  const double container =
      format->duration != AV_NOPTS_VALUE && format->duration > 0 ? format->duration / static_cast<double>(AV_TIME_BASE)
                                                                  : 0;
  const bool matroska =
      format->iformat != nullptr && std::string_view(format->iformat->name).starts_with("matroska");
  const AVDictionaryEntry* encoder = av_dict_get(format->metadata, "encoder", nullptr, 0);
  const bool lavf = matroska && encoder != nullptr && std::string_view(encoder->value).starts_with("Lavf");
  const AVDictionaryEntry* tag = av_dict_get(stream->metadata, "DURATION", nullptr, 0);
  if (tag == nullptr && !lavf) tag = av_dict_get(stream->metadata, "DURATION-", nullptr, AV_DICT_IGNORE_SUFFIX);
  int64_t us = 0;
  if (tag != nullptr && av_parse_time(&us, tag->value, /*duration=*/1) == 0 && us > 0) {
    const double seconds = us / static_cast<double>(AV_TIME_BASE);
    const bool statistics =
        !lavf && av_dict_get(stream->metadata, "_STATISTICS_WRITING_APP", nullptr, AV_DICT_IGNORE_SUFFIX) != nullptr;
    const bool ends_past_segment = container > 0 && seconds + begin > container + 1e-3;
    const bool end_time = matroska && begin > 0 && seconds > begin && (!statistics || ends_past_segment);
    return end_time ? seconds - begin : seconds;
  }
  const bool flv = format->iformat != nullptr && std::string_view(format->iformat->name).ends_with("flv");
  const AVRational rate = HeaderFrameRate(stream);
  if (flv && begin > 0 && container > begin && stream->codecpar->video_delay > 0 && rate.num > 0) {
    return container - std::min(begin, stream->codecpar->video_delay / av_q2d(rate));
  }
  return matroska && begin > 0 && container > begin ? container - begin : container;
}

cv_stream_type StreamType(int media_type) {
  switch (media_type) {
    case AVMEDIA_TYPE_VIDEO:
      return CV_STREAM_VIDEO;
    case AVMEDIA_TYPE_AUDIO:
      return CV_STREAM_AUDIO;
    case AVMEDIA_TYPE_SUBTITLE:
      return CV_STREAM_SUBTITLE;
    case AVMEDIA_TYPE_DATA:
      return CV_STREAM_DATA;
    case AVMEDIA_TYPE_ATTACHMENT:
      return CV_STREAM_ATTACHMENT;
    default:
      return CV_STREAM_UNKNOWN;
  }
}

uint32_t NonNegative(int value) { return value > 0 ? static_cast<uint32_t>(value) : 0; }

// The header's frame count (-1 if none), less the frames an MP4 edit list
// hides: `ffmpeg -ss 0.5 -i F -c copy` keeps the GOP the cut falls in and
// hides its frames before 0.5 s; nb_frames, the sample table's count,
// still counts them (as ffprobe's nb_frames does), though no decode shows
// them, so approximate mode's last indices would be past the end. The
// demuxer flags each hidden sample in the stream's index, which lists one
// entry a sample (otherwise the count is left as it is).
int64_t HeaderFrameCount(const AVStream* stream) {
  // A crafted header's count past what a stream can hold is unknown.
  if (stream->nb_frames <= 0 || stream->nb_frames > FrameIndex::kMaxFrames) return -1;
  if (avformat_index_get_entries_count(const_cast<AVStream*>(stream)) != stream->nb_frames) return stream->nb_frames;
  const int64_t hidden = FramesTheIndexHides(stream);
  return hidden < stream->nb_frames ? stream->nb_frames - hidden : stream->nb_frames;
}

}  // namespace

int64_t FramesTheIndexHides(const AVStream* stream) {
  AVStream* indexed = const_cast<AVStream*>(stream);  // FFmpeg's getters take a non-const stream
  int64_t hidden = 0;
  for (int i = 0, entries = avformat_index_get_entries_count(indexed); i < entries; ++i) {
    if ((avformat_index_get_entry(indexed, i)->flags & AVINDEX_DISCARD_FRAME) != 0) ++hidden;
  }
  return hidden;
}

const int32_t* DisplayMatrix(const AVStream* stream) {
  size_t size = 0;
  const uint8_t* matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
  if (matrix == nullptr || size < 9 * sizeof(int32_t)) return nullptr;
  return reinterpret_cast<const int32_t*>(matrix);
}

double DisplayMatrixDegrees(const AVStream* stream) {
  const int32_t* matrix = DisplayMatrix(stream);
  if (matrix == nullptr) return 0;
  double degrees = av_display_rotation_get(matrix);
  return std::isfinite(degrees) ? degrees + 0.0 : 0;  // + 0.0 turns -0 into 0
}

AVRational HeaderFrameRate(const AVStream* stream) {
  if (Valid(stream->avg_frame_rate)) return stream->avg_frame_rate;
  if (Valid(stream->r_frame_rate)) return stream->r_frame_rate;
  return AVRational{0, 1};
}

cv_header_times DescribeHeaderTimes(const Demuxer& demuxer) {
  const AVStream* stream = demuxer.stream();
  cv_header_times t{};
  t.begin_stream_seconds = stream->start_time != AV_NOPTS_VALUE ? Seconds(stream->start_time, stream->time_base) : 0;
  t.duration_seconds = HeaderDuration(stream, demuxer.format(), t.begin_stream_seconds);
  return t;
}

cv_aspect_ratio DescribePixelAspectRatio(const Demuxer& demuxer) {
  AVStream* stream = demuxer.stream();
  const AVRational guessed = av_guess_sample_aspect_ratio(demuxer.format(), stream, nullptr);
  if (guessed.num <= 0 || guessed.den <= 0) return cv_aspect_ratio{0, 1};
  int num = 0, den = 0;
  av_reduce(&num, &den, guessed.num, guessed.den, INT32_MAX);
  if (SwapsSides(RotationFromMatrix(DisplayMatrix(stream)))) std::swap(num, den);
  return cv_aspect_ratio{num, den};
}

cv_stream_metadata DescribeStream(const Demuxer& demuxer, const FrameIndex* index) {
  const AVStream* stream = demuxer.stream();
  const AVCodecParameters* par = stream->codecpar;

  cv_stream_metadata m{};
  m.stream_index = stream->index;
  m.num_video_streams = static_cast<uint32_t>(demuxer.num_video_streams());
  SetName(m.codec, CodecName(EnumValue(par->codec_id)));
  SetName(m.pixel_format, PixelFormatName(par->format));
  // The size frames come out at: after the rotation FrameRotator applies.
  m.rotation_degrees = DisplayMatrixDegrees(stream);
  const bool swap = SwapsSides(RotationFromMatrix(DisplayMatrix(stream)));
  m.width = static_cast<uint32_t>(swap ? par->height : par->width);
  m.height = static_cast<uint32_t>(swap ? par->width : par->height);
  m.num_frames_from_header = HeaderFrameCount(stream);
  m.num_frames_from_scan = index != nullptr ? index->size() : -1;

  if (index != nullptr) {
    const FrameEntry& last = (*index)[index->size() - 1];
    m.begin_stream_seconds = Seconds((*index)[0].pts, stream->time_base);
    m.end_stream_seconds = Seconds(SaturatingAdd(last.pts, last.duration), stream->time_base);
    m.duration_seconds = m.end_stream_seconds - m.begin_stream_seconds;
  } else {
    const cv_header_times header = DescribeHeaderTimes(demuxer);
    m.begin_stream_seconds = header.begin_stream_seconds;
    m.duration_seconds = header.duration_seconds;
    m.end_stream_seconds = m.begin_stream_seconds + m.duration_seconds;
  }
  AVRational fps = HeaderFrameRate(stream);
  if (fps.num > 0) {
    m.average_fps = av_q2d(fps);
  } else if (index != nullptr && m.duration_seconds > 0) {
    m.average_fps = index->size() / m.duration_seconds;
  }
  // The stream's own rate, as ffprobe's stream bit_rate and torchcodec
  // (codecpar) report it: 0 when the container does not record one
  // (Matroska, WebM). Never the container's rate, which counts every stream
  // and the muxing overhead.
  m.bit_rate = par->bit_rate > 0 ? par->bit_rate : 0;
  // Parsers copy these from the bitstream unchecked (any 8-bit value).
  SetName(m.color_space, ColorSpaceName(EnumValue(par->color_space)));
  SetName(m.color_range, ColorRangeName(EnumValue(par->color_range)));
  SetName(m.color_primaries, ColorPrimariesName(EnumValue(par->color_primaries)));
  SetName(m.color_transfer, ColorTransferName(EnumValue(par->color_trc)));
  m.time_base_num = stream->time_base.num;
  m.time_base_den = stream->time_base.den;
  return m;
}

std::vector<cv_stream_info> DescribeStreams(const AVFormatContext* format) {
  std::vector<cv_stream_info> streams;
  for (unsigned i = 0; i < format->nb_streams && i < CV_MAX_STREAMS; ++i) {
    const AVCodecParameters* par = format->streams[i]->codecpar;
    cv_stream_info s{};
    s.index = static_cast<int32_t>(i);
    s.type = StreamType(EnumValue(par->codec_type));
    const int codec = EnumValue(par->codec_id);
    if (codec != AV_CODEC_ID_NONE) SetName(s.codec, CodecName(codec));
    if (s.type == CV_STREAM_VIDEO) {
      s.width = NonNegative(par->width);
      s.height = NonNegative(par->height);
    } else if (s.type == CV_STREAM_AUDIO) {
      s.sample_rate = NonNegative(par->sample_rate);
      s.channels = NonNegative(par->ch_layout.nb_channels);
    }
    streams.push_back(s);
  }
  return streams;
}

}  // namespace codecvisor::cpu
