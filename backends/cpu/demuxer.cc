// File: backends/cpu/demuxer.cc

#include "backends/cpu/demuxer.h"

#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "backends/cpu/av_enums.h"
#include "backends/cpu/av_util.h"
#include "backends/cpu/ffmpeg_log.h"

namespace codecvisor::cpu {
namespace {

// "an audio", "a subtitle".
std::string WithArticle(absl::string_view noun) {
  const bool vowel = !noun.empty() && absl::StrContains("aeiou", absl::ascii_tolower(noun[0]));
  return absl::StrCat(vowel ? "an " : "a ", noun);
}

bool IsVideoStream(const AVStream* stream) {
  return EnumValue(stream->codecpar->codec_type) == AVMEDIA_TYPE_VIDEO &&
         (stream->disposition & AV_DISPOSITION_ATTACHED_PIC) == 0;
}

// The best video stream that is not a cover image, -1 if none: where
// av_find_best_stream picks a cover (it ranks one above a video flagged for
// the hearing or visually impaired), the videos are ranked by its first
// criteria: neither flag, then the default flag, then bit rate, then order.
int BestVideoStream(const AVFormatContext* format) {
  int best = -1;
  int best_rank = -1;
  int64_t best_bit_rate = -1;
  for (unsigned i = 0; i < format->nb_streams; ++i) {
    const AVStream* s = format->streams[i];
    if (!IsVideoStream(s)) continue;
    const int rank = ((s->disposition & (AV_DISPOSITION_HEARING_IMPAIRED | AV_DISPOSITION_VISUAL_IMPAIRED)) == 0) +
                     ((s->disposition & AV_DISPOSITION_DEFAULT) != 0);
    if (rank > best_rank || (rank == best_rank && s->codecpar->bit_rate > best_bit_rate)) {
      best = static_cast<int>(i);
      best_rank = rank;
      best_bit_rate = s->codecpar->bit_rate;
    }
  }
  return best;
}

// SECURITY: installed as AVFormatContext::io_open so that no demuxer can open
// a second resource (see demuxer.h).
int RefuseNestedOpen(AVFormatContext* /*s*/, AVIOContext** /*pb*/, const char* /*url*/,
                     int /*flags*/, AVDictionary** /*options*/) {
  return AVERROR(EPERM);
}

// ": FFmpeg says 'LINE'" for an error line FFmpeg logged, with what the
// commonest one means; "" for none.
std::string WhatFfmpegSaid(const std::string& line) {
  if (line.empty()) return "";
  std::string said = absl::StrCat("; FFmpeg says '", line, "'");
  if (absl::StrContains(line, "moov atom not found")) {
    absl::StrAppend(&said, ": an MP4 or MOV without its index, as a recording or download cut short leaves it");
  }
  return said;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Demuxer>> Demuxer::Open(int fd, int stream_index) {
  absl::StatusOr<std::unique_ptr<Demuxer>> demuxer = OpenContainer(fd, stream_index);
  if (!demuxer.ok()) return demuxer;
  // A paletted stream: its palette is read now, before any seek can pass
  // the packet that carries it (ReadPacket keeps it), then the container is
  // opened afresh.
  const AVCodecParameters* par = (*demuxer)->stream_->codecpar;
  if (par->format == AV_PIX_FMT_PAL8 || (par->bits_per_coded_sample > 0 && par->bits_per_coded_sample <= 8)) {
    AVPacket* packet = av_packet_alloc();
    if (packet == nullptr) return absl::ResourceExhaustedError("out of memory for a packet");
    (*demuxer)->ReadPacket(packet);
    av_packet_free(&packet);
    if (absl::Status s = (*demuxer)->Reopen(); !s.ok()) return s;
  }
  return demuxer;
}

absl::StatusOr<std::unique_ptr<Demuxer>> Demuxer::OpenContainer(int fd, int stream_index) {
  std::unique_ptr<Demuxer> demuxer(new Demuxer());
  auto input = FdInput::Create(fd);
  if (!input.ok()) return input.status();
  demuxer->input_ = *std::move(input);
  demuxer->fd_ = fd;

  AVFormatContext* format = avformat_alloc_context();
  if (format == nullptr) return absl::ResourceExhaustedError("out of memory for the demuxer");
  format->pb = demuxer->input_->context();
  format->flags |= AVFMT_FLAG_CUSTOM_IO;
  format->io_open = &RefuseNestedOpen;
  // SECURITY: and no protocol at all for demuxers that open URLs themselves
  // (rtsp/sdp) rather than through io_open.
  AVDictionary* options = nullptr;
  av_dict_set(&options, "protocol_whitelist", "none", 0);
  // On failure avformat_open_input frees `format` (but not our pb).
  // FFmpeg's error code says little ("Invalid data found"); the line it
  // logged says what (an MP4 whose index is missing: "moov atom not found").
  FirstLoggedError logged;
  int ret = avformat_open_input(&format, "", nullptr, &options);
  av_dict_free(&options);
  // cpu_backend.cc then blames the memory; a size FFmpeg refused is the file's.
  const bool short_of_memory = NoteDemuxerOutOfMemory(ret);
  if (ret == AVERROR(ENOMEM) && !short_of_memory) {
    return absl::DataLossError(absl::StrCat("cannot be demuxed: FFmpeg refused a size in its header as too large (",
                                            AvErrorText(ret), ", with memory to spare)",
                                            WhatFfmpegSaid(logged.line())));
  }
  if (ret < 0) {
    return absl::DataLossError(
        absl::StrCat("cannot be demuxed (not a video container?): ", AvErrorText(ret), WhatFfmpegSaid(logged.line())));
  }
  demuxer->format_ = format;
  logged.Reset();  // not an error the open met and got over
  ret = avformat_find_stream_info(format, nullptr);
  NoteDemuxerOutOfMemory(ret);
  if (ret < 0) {
    return absl::DataLossError(
        absl::StrCat("cannot read the stream parameters: ", AvErrorText(ret), WhatFfmpegSaid(logged.line())));
  }

  for (unsigned i = 0; i < format->nb_streams; ++i) {
    if (IsVideoStream(format->streams[i])) ++demuxer->num_video_streams_;
  }
  if (stream_index < 0) {
    ret = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    if (ret >= 0 && !IsVideoStream(format->streams[ret])) ret = BestVideoStream(format);
    if (ret < 0) {
      std::string cover;
      for (unsigned i = 0; i < format->nb_streams && cover.empty(); ++i) {
        if ((format->streams[i]->disposition & AV_DISPOSITION_ATTACHED_PIC) != 0) {
          cover = absl::StrCat("; stream ", i, " is a cover image, not a video");
        }
      }
      return absl::NotFoundError(absl::StrCat("has no video stream (", format->nb_streams, " streams in the ",
                                              format->iformat->name, " container", cover, ")"));
    }
    stream_index = ret;
  } else if (static_cast<unsigned>(stream_index) >= format->nb_streams) {
    // (torchcodec's phrase, "N is not a valid stream", is in it.)
    return absl::NotFoundError(absl::StrCat("has no stream ", stream_index, ": ", stream_index,
                                            " is not a valid stream; the ", format->iformat->name,
                                            " container has ", format->nb_streams, " streams"));
  } else if (!IsVideoStream(format->streams[stream_index])) {
    const AVStream* s = format->streams[stream_index];
    return absl::NotFoundError(
        absl::StrCat("stream ", stream_index, " is not a video stream (it is ",
                     (s->disposition & AV_DISPOSITION_ATTACHED_PIC) != 0
                         ? "a cover image"
                         : absl::StrCat(WithArticle(MediaTypeName(EnumValue(s->codecpar->codec_type))),
                                        " stream"),
                     ")"));
  }
  demuxer->stream_ = format->streams[stream_index];
  for (unsigned i = 0; i < format->nb_streams; ++i) {
    if (static_cast<int>(i) != stream_index) format->streams[i]->discard = AVDISCARD_ALL;
  }
  return demuxer;
}

Demuxer::~Demuxer() {
  // Closes the container; input_ (declared first) is destroyed after it.
  if (format_ != nullptr) avformat_close_input(&format_);
}

bool Demuxer::ReadPacket(AVPacket* packet) {
  for (;;) {
    av_packet_unref(packet);
    int ret = av_read_frame(format_, packet);
    NoteDemuxerOutOfMemory(ret);
    if (ret < 0) {
      last_error_ = ret == AVERROR_EOF ? 0 : ret;
      return false;
    }
    if (packet->stream_index == stream_->index) {
      if (first_packet_pos_ < 0 && !seeked_ && packet->pos >= 0) first_packet_pos_ = packet->pos;
      KeepPalette(packet);
      if (splices_.active()) {
        last_offset_ = splices_.OffsetAt(packet->pos, last_offset_);
        MovePacketTimes(packet, last_offset_);
      }
      return true;
    }
  }
}

namespace {

// Picture streams whose parser records a picture at the start of the read
// its first byte came in (found at random over every image2pipe format):
// PNM and BMP.
bool ParsedFromReadStarts(AVCodecID codec) {
  switch (codec) {
    case AV_CODEC_ID_BMP:
    case AV_CODEC_ID_PPM:
    case AV_CODEC_ID_PGM:
    case AV_CODEC_ID_PGMYUV:
    case AV_CODEC_ID_PBM:
    case AV_CODEC_ID_PAM:
    case AV_CODEC_ID_PFM:
      return true;
    default:
      return false;
  }
}

}  // namespace

absl::Status Demuxer::Seek(int64_t timestamp) {
  last_error_ = 0;
  seeked_ = true;
  if (splices_.active()) {
    // A time may be in several segments: the scan's key frame position.
    const int64_t pos = splices_.KeyPositionAtOrBefore(timestamp);
    if (pos >= 0 && av_seek_frame(format_, -1, pos, AVSEEK_FLAG_BYTE) >= 0) {
      last_offset_ = splices_.OffsetAt(pos, 0);
      return absl::OkStatus();
    }
    return Reopen();
  }
  const AVInputFormat* in = format_->iformat;
  const bool seeks_by_time = in->read_seek != nullptr || in->read_seek2 != nullptr || in->read_timestamp != nullptr;
  // A stream of PNM or BMP pictures (ppm_pipe, bmp_pipe, ...) seeks through
  // FFmpeg's generic index, where its parser records each picture at the
  // start of the read its first byte came in, not at the picture: from
  // there the previous picture's tail is read as a picture and every frame
  // comes one late. Opened again, it reads from its first picture.
  if (!seeks_by_time && ParsedFromReadStarts(stream_->codecpar->codec_id)) return Reopen();
  int ret = av_seek_frame(format_, stream_->index, timestamp, AVSEEK_FLAG_BACKWARD);
  if (ret < 0) {
    ret = avformat_seek_file(format_, stream_->index, INT64_MIN, timestamp, timestamp, 0);
  }
  // Only for demuxers that cannot seek by time themselves (no read_seek or
  // read_timestamp: raw elementary streams): a byte seek goes around a
  // demuxer's own seeking, whose state it would not reset.
  if (ret < 0 && first_packet_pos_ >= 0 && !seeks_by_time && (in->flags & AVFMT_NO_BYTE_SEEK) == 0) {
    ret = av_seek_frame(format_, -1, first_packet_pos_, AVSEEK_FLAG_BYTE);
  }
  if (ret < 0) {
    // Some files refuse every seek (Matroska whose first times are
    // negative, which FFmpeg reads as none): opened again, the container
    // reads from its first packet, which is before any target.
    absl::Status reopened = Reopen();
    if (!reopened.ok()) {
      return absl::DataLossError(absl::StrCat("cannot seek to timestamp ", timestamp, ": ", AvErrorText(ret),
                                              ", nor open the container again: ", reopened.message()));
    }
  }
  return absl::OkStatus();
}

void Demuxer::KeepPalette(AVPacket* packet) {
  size_t size = 0;
  if (const uint8_t* palette = av_packet_get_side_data(packet, AV_PKT_DATA_PALETTE, &size); palette != nullptr) {
    palette_.assign(palette, palette + size);
    return;
  }
  if (palette_.empty()) return;
  uint8_t* copy = av_packet_new_side_data(packet, AV_PKT_DATA_PALETTE, palette_.size());
  if (copy != nullptr) std::memcpy(copy, palette_.data(), palette_.size());
}

absl::Status Demuxer::Reopen() {
  absl::StatusOr<std::unique_ptr<Demuxer>> fresh = OpenContainer(fd_, stream_->index);
  if (!fresh.ok()) return fresh.status();
  // The old container and its input go with `fresh`, closed in that order.
  std::swap(input_, (*fresh)->input_);
  std::swap(format_, (*fresh)->format_);
  std::swap(stream_, (*fresh)->stream_);
  last_error_ = 0;
  last_offset_ = 0;
  return absl::OkStatus();
}

}  // namespace codecvisor::cpu
