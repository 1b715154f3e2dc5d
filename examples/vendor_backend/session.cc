// File: examples/vendor_backend/session.cc

#include "session.h"

#include <algorithm>
#include <cmath>
#include <cstring>

extern "C" {
#include <libavutil/display.h>
#include <libavutil/mathematics.h>
#include <libavutil/pixdesc.h>
}

namespace dav1d_plugin {
namespace {

// The av1C box (ISO/IEC 14496-15 style codec configuration) starts with a
// marker bit set; its OBUs follow 4 bytes in.
constexpr int kAv1cHeaderBytes = 4;
// Packets searched for a sequence header when the container has none.
constexpr int kPacketsForSequenceHeader = 16;
// Approximate mode decodes forward instead of seeking for gaps this short.
constexpr int64_t kForwardFrames = 16;

void Name(char (&out)[CV_NAME_BYTES], const char* name) {
  std::snprintf(out, sizeof(out), "%s", name != nullptr ? name : "unknown");
}

// The sequence header's CICP values are any 8-bit number; an FFmpeg enum
// holds only those FFmpeg defines, so each is range-checked before the cast
// (casting an integer outside an enum's range is undefined behaviour).
const char* ColorSpaceName(int v) {
  return v >= 0 && v < AVCOL_SPC_NB ? av_color_space_name(static_cast<AVColorSpace>(v)) : nullptr;
}
const char* ColorPrimariesName(int v) {
  return v >= 0 && v < AVCOL_PRI_NB ? av_color_primaries_name(static_cast<AVColorPrimaries>(v)) : nullptr;
}
const char* ColorTransferName(int v) {
  return v >= 0 && v < AVCOL_TRC_NB ? av_color_transfer_name(static_cast<AVColorTransferCharacteristic>(v))
                                    : nullptr;
}

bool Positive(AVRational r) { return r.num > 0 && r.den > 0; }

AVRational HeaderFps(const AVStream* s) {
  if (Positive(s->avg_frame_rate)) return s->avg_frame_rate;
  if (Positive(s->r_frame_rate)) return s->r_frame_rate;
  return AVRational{0, 1};
}

// The stream's AV1 sequence header, from the container's codec
// configuration or else from its first packets (IVF and raw OBU files carry
// none); the container is then sought back to the start.
bool FindSequenceHeader(Container& container, Dav1dSequenceHeader* seq) {
  const AVCodecParameters* par = container.stream()->codecpar;
  if (par->extradata_size > 0) {
    const uint8_t* obus = par->extradata;
    size_t size = static_cast<size_t>(par->extradata_size);
    if ((obus[0] & 0x80) != 0 && size > kAv1cHeaderBytes) {
      obus += kAv1cHeaderBytes;
      size -= kAv1cHeaderBytes;
    }
    if (dav1d_parse_sequence_header(seq, obus, size) == 0) return true;
  }
  AVPacket* packet = av_packet_alloc();
  bool found = false;
  for (int i = 0; packet != nullptr && !found && i < kPacketsForSequenceHeader && container.ReadPacket(packet); ++i) {
    found = dav1d_parse_sequence_header(seq, packet->data, static_cast<size_t>(packet->size)) == 0;
  }
  av_packet_free(&packet);
  const AVStream* s = container.stream();
  (void)container.Seek(s->start_time != AV_NOPTS_VALUE ? s->start_time : 0);
  return found;
}

double Rotation(const AVStream* s) {
  size_t size = 0;
  const uint8_t* matrix = av_stream_get_side_data(s, AV_PKT_DATA_DISPLAYMATRIX, &size);
  if (matrix == nullptr || size < 9 * sizeof(int32_t)) return 0;
  const double degrees = av_display_rotation_get(reinterpret_cast<const int32_t*>(matrix));
  return std::isnan(degrees) ? 0 : degrees + 0.0;  // + 0.0: no "-0"
}

}  // namespace

Status Session::Open(int fd, const cv_open_options& options, std::unique_ptr<Session>* out) {
  std::unique_ptr<Session> s(new Session());
  if (Status st = Container::Open(fd, options.stream_index, &s->container_); !st.ok()) return st;
  const AVStream* stream = s->container_->stream();
  s->time_base_ = av_q2d(stream->time_base);

  Dav1dSequenceHeader seq;
  const bool have_seq = FindSequenceHeader(*s->container_, &seq);
  const AVPixelFormat native = have_seq ? PixelFormatOf(seq) : AV_PIX_FMT_NONE;
  if (native == AV_PIX_FMT_NONE) {
    return Status(CV_ERROR_CORRUPT_DATA, Sprintf("stream %d has no readable AV1 sequence header (in its codec "
                                                 "configuration or first %d packets): it is truncated or corrupt",
                                                 stream->index, kPacketsForSequenceHeader));
  }
  if (Status st = Av1Stream::Open(s->container_.get(), options.decoder_threads, &s->stream_); !st.ok()) {
    return st;
  }
  const AVRational fps = HeaderFps(stream);
  if (options.seek_mode == CV_SEEK_EXACT) {
    const int64_t default_duration = Positive(fps) ? av_rescale_q(1, av_inv_q(fps), stream->time_base) : 1;
    FrameTable table;
    if (Status st = FrameTable::Build(*s->container_, default_duration, &table); !st.ok()) {
      return st;
    }
    s->table_ = std::move(table);
    s->num_frames_ = s->table_->size();
    // Back to the start for the first decode.
    if (Status st = s->Reposition((*s->table_)[s->table_->IndexOfOrder(0)].pts); !st.ok()) {
      return st;
    }
    s->first_order_ = 0;
    s->seeks_ = 0;  // that one was part of opening
  } else if (!Positive(fps)) {
    return Status(CV_ERROR_UNSUPPORTED, Sprintf("stream %d has no frame rate in its header, which approximate mode "
                                                "needs; open it in exact mode",
                                                stream->index));
  } else {
    s->begin_pts_ = stream->start_time != AV_NOPTS_VALUE ? stream->start_time : 0;
    s->frame_ticks_ = 1 / (av_q2d(fps) * s->time_base_);
  }
  if (Status st = s->DescribeStream(seq, native); !st.ok()) return st;
  // A size asked for past the limit is the caller's mistake; the stream's
  // own, a video this backend does not decode (PictureConverter::Create).
  if (options.output_width > kMaxSide || options.output_height > kMaxSide) {
    return Status(CV_ERROR_INVALID_ARGUMENT, Sprintf("output size %ux%u asked for is past %u per side",
                                                     options.output_width, options.output_height, kMaxSide));
  }
  const uint32_t width = options.output_width != 0 ? options.output_width : s->metadata_.width;
  const uint32_t height = options.output_height != 0 ? options.output_height : s->metadata_.height;
  if (Status st = PictureConverter::Create(options.output_format, native, width, height, &s->converter_); !st.ok()) {
    return st;
  }
  *out = std::move(s);
  return Status();
}

Status Session::DescribeStream(const Dav1dSequenceHeader& seq, AVPixelFormat native) {
  const AVStream* stream = container_->stream();
  const AVCodecParameters* par = stream->codecpar;
  const AVFormatContext* format = container_->format();
  cv_stream_metadata& m = metadata_;
  m.stream_index = stream->index;
  m.num_video_streams = static_cast<uint32_t>(container_->num_video_streams());
  Name(m.codec, "av1");
  Name(m.pixel_format, av_get_pix_fmt_name(native));
  m.width = par->width > 0 ? static_cast<uint32_t>(par->width) : static_cast<uint32_t>(seq.max_width);
  m.height = par->height > 0 ? static_cast<uint32_t>(par->height) : static_cast<uint32_t>(seq.max_height);
  if (m.width == 0 || m.height == 0) {
    return Status(CV_ERROR_CORRUPT_DATA, Sprintf("stream %d has no frame size", stream->index));
  }
  m.num_frames_from_header = stream->nb_frames > 0 ? stream->nb_frames : -1;
  m.num_frames_from_scan = table_ ? table_->size() : -1;
  const AVRational fps = HeaderFps(stream);
  // What the header says, in either mode (get_header_times): the stream's
  // start and duration, else the container's duration.
  header_times_.begin_stream_seconds = stream->start_time != AV_NOPTS_VALUE ? stream->start_time * time_base_ : 0;
  if (stream->duration != AV_NOPTS_VALUE && stream->duration > 0) {
    header_times_.duration_seconds = stream->duration * time_base_;
  } else if (format->duration != AV_NOPTS_VALUE && format->duration > 0) {
    header_times_.duration_seconds = format->duration / static_cast<double>(AV_TIME_BASE);
    // A Matroska segment's duration, as FFmpeg's muxer writes it, ends at
    // the last frame's end on the timeline from 0: a stream that starts
    // later plays that less its start (a 36-frame stream from 0.5 s was
    // counted as 48 frames in approximate mode).
    const double begin = header_times_.begin_stream_seconds;
    if (std::strncmp(format->iformat->name, "matroska", 8) == 0 && begin > 0 &&
        header_times_.duration_seconds > begin) {
      header_times_.duration_seconds -= begin;
    }
  }
  if (table_) {
    const FrameTable& t = *table_;
    m.begin_stream_seconds = t[0].pts * time_base_;
    m.end_stream_seconds = (t[t.size() - 1].pts + t[t.size() - 1].duration) * time_base_;
    m.duration_seconds = m.end_stream_seconds - m.begin_stream_seconds;
  } else {
    m.begin_stream_seconds = begin_pts_ * time_base_;
    if (header_times_.duration_seconds > 0) {
      m.duration_seconds = header_times_.duration_seconds;
    } else if (stream->nb_frames > 0) {
      m.duration_seconds = stream->nb_frames / av_q2d(fps);
    }
    m.end_stream_seconds = m.begin_stream_seconds + m.duration_seconds;
    num_frames_ = stream->nb_frames > 0 ? stream->nb_frames
                                        : static_cast<int64_t>(std::llround(m.duration_seconds * av_q2d(fps)));
    num_frames_ = std::clamp<int64_t>(num_frames_, 0, FrameTable::kMaxFrames);
    if (num_frames_ == 0) {
      return Status(CV_ERROR_UNSUPPORTED, Sprintf("stream %d has neither a frame count nor a duration in its header, "
                                                  "which approximate mode needs; open it in exact mode",
                                                  stream->index));
    }
  }
  if (Positive(fps)) {
    m.average_fps = av_q2d(fps);
  } else if (m.duration_seconds > 0) {
    m.average_fps = num_frames_ / m.duration_seconds;
  }
  // The stream's own rate, as ffprobe's stream entry and torchcodec (the codec parameters) give
  // it: 0 where the container records none (Matroska, WebM), never the container's overall rate.
  m.bit_rate = par->bit_rate > 0 ? par->bit_rate : 0;
  m.rotation_degrees = Rotation(stream);
  // What libavcodec's wrapper reports: the sequence header's CICP values.
  Name(m.color_space, ColorSpaceName(static_cast<int>(seq.mtrx)));
  Name(m.color_range, av_color_range_name(seq.color_range ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG));
  Name(m.color_primaries, ColorPrimariesName(static_cast<int>(seq.pri)));
  Name(m.color_transfer, ColorTransferName(static_cast<int>(seq.trc)));
  m.time_base_num = stream->time_base.num;
  m.time_base_den = stream->time_base.den;
  return Status();
}

Status Session::CheckIndex(int64_t index) const {
  if (index >= 0 && index < num_frames_) return Status();
  if (index < 0) {
    return Status(CV_ERROR_OUT_OF_RANGE,
                  Sprintf("frame %lld is out of range: indices start at 0", static_cast<long long>(index)));
  }
  return Status(CV_ERROR_OUT_OF_RANGE,
                Sprintf("frame %lld is past the end: the stream has %lld frames%s", static_cast<long long>(index),
                        static_cast<long long>(num_frames_), table_ ? "" : " by its header"));
}

int64_t Session::NominalPts(int64_t index) const {
  return begin_pts_ + std::llround(static_cast<double>(index) * frame_ticks_);
}

Status Session::GetFrameInfo(int64_t index, cv_frame_info* out) const {
  if (Status s = CheckIndex(index); !s.ok()) return s;
  // Exact mode: the scanned row; approximate: the header's nominal timeline.
  const FrameRow* row = table_ ? &(*table_)[index] : nullptr;
  *out = cv_frame_info{};
  out->index = index;
  out->pts = row != nullptr ? row->pts : NominalPts(index);
  out->pts_seconds = out->pts * time_base_;
  out->duration_seconds = (row != nullptr ? row->duration : frame_ticks_) * time_base_;
  out->key_frame = row != nullptr && row->key ? 1 : 0;
  return Status();
}

Status Session::IndexAtSeconds(double seconds, int64_t* index) const {
  if (std::isnan(seconds)) return Status(CV_ERROR_INVALID_ARGUMENT, "the time is NaN");
  const double begin = metadata_.begin_stream_seconds;
  const double end = metadata_.end_stream_seconds;
  int64_t found = -1;
  if (seconds >= begin && seconds < end) {
    if (table_) {
      // A little slack so that pts * time_base, computed by the caller,
      // finds that very frame despite rounding.
      const double ticks = seconds / time_base_;
      found =
          table_->LastAtOrBefore(static_cast<int64_t>(std::floor(ticks + std::max(1e-6, std::fabs(ticks) * 1e-12))));
    } else {
      found = static_cast<int64_t>(std::floor((seconds - begin) / (frame_ticks_ * time_base_) + 1e-9));
      // A time before the end is in a frame: just before it (end - 1e-12)
      // rounds up to the count, and a header's count may be short.
      if (found >= num_frames_ && num_frames_ > 0) found = num_frames_ - 1;
    }
  }
  if (found < 0 || found >= num_frames_) {
    return Status(CV_ERROR_OUT_OF_RANGE,
                  Sprintf("time %.9g s is outside the stream, which plays from %.9g s to %.9g s", seconds, begin, end));
  }
  *index = found;
  return Status();
}

Status Session::Reposition(int64_t timestamp) {
  ++seeks_;
  current_index_ = -1;
  positioned_ = false;
  if (Status s = stream_->Restart(timestamp); !s.ok()) return s;
  positioned_ = true;
  return Status();
}

Status Session::DecodeExact(int64_t index) {
  const FrameTable& t = *table_;
  const int64_t target = t[index].pts;
  const int64_t key_order = t[t.KeyFor(index)].decode_order;
  // Decoding on reaches the target without a seek when the decoder is
  // before it and has read its key frame, or is about to.
  const bool forward = positioned_ && !stream_->ended() &&
                       (stream_->last_pts() == Av1Stream::kNoTimestamp || stream_->last_pts() < target) &&
                       key_order <= first_order_ + stream_->packets_read();
  const int64_t starts[] = {t[t.KeyFor(index)].pts, t[t.IndexOfOrder(0)].pts};
  for (int attempt = forward ? -1 : 0; attempt < 2; ++attempt) {
    if (attempt >= 0) {
      if (attempt == 1 && starts[1] == starts[0]) break;
      if (Status s = Reposition(starts[attempt]); !s.ok()) return s;
      // A seek that lands past the key frame retries from the start.
      const int64_t landed = t.Find(stream_->PeekTimestamp());
      first_order_ = landed >= 0 ? t[landed].decode_order : 0;
      if (attempt == 0 && first_order_ > key_order) continue;
    }
    for (;;) {
      bool got = false;
      if (Status s = stream_->Next(&got); !s.ok()) {
        positioned_ = false;
        return s;
      }
      if (!got) break;
      current_index_ = t.Find(stream_->last_pts());
      if (stream_->last_pts() < target) continue;
      if (stream_->last_pts() == target) return Status();
      break;  // past it: the target's picture never came out
    }
  }
  std::string cause = stream_->last_error();
  return Status(CV_ERROR_CORRUPT_DATA, Sprintf("frame %lld (pts %lld) could not be decoded%s%s",
                                               static_cast<long long>(index), static_cast<long long>(target),
                                               cause.empty() ? " (the file may be truncated)" : ": ", cause.c_str()));
}

Status Session::DecodeApproximate(int64_t index) {
  const int64_t target = NominalPts(index);
  const auto tolerance = static_cast<int64_t>(frame_ticks_ / 2);
  const bool forward = positioned_ && current_index_ >= 0 && index > current_index_ &&
                       index - current_index_ <= kForwardFrames && !stream_->ended();
  const int64_t start = begin_pts_;
  const int64_t seeks[] = {target, start};
  for (int attempt = forward ? -1 : 0; attempt < 2; ++attempt) {
    if (attempt >= 0) {
      if (attempt == 1 && target == start) break;
      if (Status s = Reposition(seeks[attempt]); !s.ok()) return s;
    }
    // Sequential reads take the next picture whatever its timestamp.
    const bool next_one = attempt < 0 && index == current_index_ + 1;
    bool first = true;
    for (;;) {
      bool got = false;
      if (Status s = stream_->Next(&got); !s.ok()) {
        positioned_ = false;
        return s;
      }
      if (!got) {
        current_index_ = -1;
        return Status(CV_ERROR_OUT_OF_RANGE, Sprintf("frame %lld (about pts %lld) is past the end: the stream ended "
                                                     "before it (its header's frame count or rate is inaccurate; exact "
                                                     "mode counts the frames)",
                                                     static_cast<long long>(index), static_cast<long long>(target)));
      }
      const int64_t pts = stream_->last_pts();
      if (!next_one && pts < target - tolerance) {
        first = false;
        continue;
      }
      if (attempt == 0 && first && pts > target + tolerance) break;  // landed late: from the start
      current_index_ = index;
      return Status();
    }
  }
  return Status(CV_ERROR_CORRUPT_DATA,
                Sprintf("frame %lld (about pts %lld) could not be decoded: %s", static_cast<long long>(index),
                        static_cast<long long>(target), stream_->last_error().c_str()));
}

Status Session::DecodeFrame(int64_t index, const cv_frame_buffer& buffer, cv_frame_info* info) {
  if (buffer.data == nullptr || buffer.capacity < layout().size) {
    return Status(CV_ERROR_INVALID_ARGUMENT, Sprintf("the frame buffer holds %llu bytes; a frame needs %llu",
                                                     static_cast<unsigned long long>(buffer.capacity),
                                                     static_cast<unsigned long long>(layout().size)));
  }
  if (Status s = CheckIndex(index); !s.ok()) return s;
  if (current_index_ != index || !stream_->has_picture()) {
    Status s = table_ ? DecodeExact(index) : DecodeApproximate(index);
    if (!s.ok()) return s;
  }
  if (Status s = converter_->Convert(stream_->picture(), buffer.data); !s.ok()) return s;
  if (info == nullptr) return Status();
  if (table_) return GetFrameInfo(index, info);
  const Dav1dPicture& p = stream_->picture();
  info->index = index;
  info->pts = p.m.timestamp;
  info->pts_seconds = p.m.timestamp * time_base_;
  info->duration_seconds = p.m.duration > 0 ? p.m.duration * time_base_ : frame_ticks_ * time_base_;
  info->key_frame = p.frame_hdr != nullptr && p.frame_hdr->frame_type == DAV1D_FRAME_TYPE_KEY;
  return Status();
}

}  // namespace dav1d_plugin
