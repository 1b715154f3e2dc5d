// File: examples/vendor_backend/container.cc

#include "container.h"

#include "log_level.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/error.h>
#include <libavutil/mem.h>
}

namespace dav1d_plugin {
namespace {

// The AVIOContext's buffer: a few syscalls per second of typical video.
constexpr int kIoBufferBytes = 1 << 16;
// Added to the level of libavcodec's messages while probing: below TRACE.
constexpr int kQuietLogOffset = 64;

bool IsVideo(const AVStream* s) {
  return s->codecpar->codec_type == AVMEDIA_TYPE_VIDEO && (s->disposition & AV_DISPOSITION_ATTACHED_PIC) == 0;
}

// The SDK's name for a libavformat media type.
cv_stream_type SdkStreamType(AVMediaType type) {
  static constexpr struct {
    AVMediaType av;
    cv_stream_type sdk;
  } kTypes[] = {{AVMEDIA_TYPE_VIDEO, CV_STREAM_VIDEO},       {AVMEDIA_TYPE_AUDIO, CV_STREAM_AUDIO},
                {AVMEDIA_TYPE_SUBTITLE, CV_STREAM_SUBTITLE}, {AVMEDIA_TYPE_DATA, CV_STREAM_DATA},
                {AVMEDIA_TYPE_ATTACHMENT, CV_STREAM_ATTACHMENT}};
  for (const auto& t : kTypes) {
    if (t.av == type) return t.sdk;
  }
  return CV_STREAM_UNKNOWN;
}

// SECURITY: a playlist or reference demuxer (hls, concat, mov's dref) must
// not reach past the one descriptor the plugin was given.
int NoNestedOpen(AVFormatContext*, AVIOContext**, const char*, int, AVDictionary**) { return AVERROR(EPERM); }

// avformat_find_stream_info without libavcodec decoders: the plugin's
// frames, and its idea of the pixel format, come from libdav1d alone. A
// decoder is opened to probe only when a stream lacks its pixel format, so
// AV1 streams get a placeholder (Session reads the real one from the
// sequence header); any other opening is refused by the whitelist, quietly.
int FindStreamInfo(AVFormatContext* format) {
  const unsigned n = format->nb_streams;
  std::vector<AVDictionary*> options(n, nullptr);
  for (unsigned i = 0; i < n; ++i) {
    AVCodecParameters* par = format->streams[i]->codecpar;
    if (par->codec_id == AV_CODEC_ID_AV1 && par->format < 0) par->format = AV_PIX_FMT_YUV420P;
    av_dict_set(&options[i], "codec_whitelist", "none", 0);
    av_dict_set_int(&options[i], "log_level_offset", kQuietLogOffset, 0);
  }
  int ret = avformat_find_stream_info(format, n > 0 ? options.data() : nullptr);
  for (AVDictionary*& o : options) av_dict_free(&o);
  return ret;
}

}  // namespace

std::string AvError(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof(text));
  return text;
}

int Container::ReadCallback(void* opaque, uint8_t* buf, int size) {
  auto* self = static_cast<Container*>(opaque);
  for (;;) {
    ssize_t got = pread(self->fd_, buf, static_cast<size_t>(size), self->offset_);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return AVERROR(errno);
    if (got == 0) return AVERROR_EOF;
    self->offset_ += got;
    return static_cast<int>(got);
  }
}

int64_t Container::SeekCallback(void* opaque, int64_t offset, int whence) {
  auto* self = static_cast<Container*>(opaque);
  auto file_size = [fd = self->fd_]() -> int64_t {
    struct stat st;
    return fstat(fd, &st) == 0 ? static_cast<int64_t>(st.st_size) : AVERROR(errno);
  };
  int64_t base;
  switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE:
      return file_size();
    case SEEK_SET:
      base = 0;
      break;
    case SEEK_CUR:
      base = self->offset_;
      break;
    case SEEK_END:
      base = file_size();
      if (base < 0) return base;
      break;
    default:
      return AVERROR(EINVAL);
  }
  int64_t target;
  if (__builtin_add_overflow(base, offset, &target) || target < 0) return AVERROR(EINVAL);
  self->offset_ = target;
  return target;
}

Status Container::Open(int fd, int stream_index, std::unique_ptr<Container>* out) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    return Status(CV_ERROR_INVALID_ARGUMENT, Sprintf("descriptor %d cannot be read: %s", fd, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
    return Status(CV_ERROR_INVALID_ARGUMENT,
                  Sprintf("descriptor %d is not a regular file, so it cannot be seeked", fd));
  }
  if (st.st_size == 0) return Status(CV_ERROR_CORRUPT_DATA, "is empty (0 bytes), not a video");

  ApplyLogLevel();
  std::unique_ptr<Container> c(new Container());
  c->fd_ = fd;
  auto* buffer = static_cast<uint8_t*>(av_malloc(kIoBufferBytes));
  if (buffer == nullptr) return Status(CV_ERROR_RESOURCE_EXHAUSTED, "out of memory for I/O");
  c->io_ = avio_alloc_context(buffer, kIoBufferBytes, 0, c.get(), &Container::ReadCallback, nullptr,
                              &Container::SeekCallback);
  if (c->io_ == nullptr) {
    av_free(buffer);
    return Status(CV_ERROR_RESOURCE_EXHAUSTED, "out of memory for I/O");
  }
  AVFormatContext* format = avformat_alloc_context();
  if (format == nullptr) return Status(CV_ERROR_RESOURCE_EXHAUSTED, "out of memory for demuxing");
  format->pb = c->io_;
  format->flags |= AVFMT_FLAG_CUSTOM_IO;
  format->io_open = &NoNestedOpen;
  AVDictionary* options = nullptr;
  av_dict_set(&options, "protocol_whitelist", "none", 0);
  int ret = avformat_open_input(&format, nullptr, nullptr, &options);  // frees format on failure
  av_dict_free(&options);
  if (ret < 0) {
    return Status(CV_ERROR_CORRUPT_DATA, Sprintf("is not a readable video file (truncated, or not a container "
                                                 "libavformat knows): %s",
                                                 AvError(ret).c_str()));
  }
  c->format_ = format;
  ret = FindStreamInfo(format);
  if (ret < 0) {
    return Status(CV_ERROR_CORRUPT_DATA, Sprintf("its streams cannot be read (truncated?): %s", AvError(ret).c_str()));
  }
  for (unsigned i = 0; i < format->nb_streams; ++i) {
    if (IsVideo(format->streams[i])) ++c->num_video_streams_;
  }
  if (stream_index < 0) {
    // The first AV1 stream; else the best video stream, for the error below.
    for (unsigned i = 0; i < format->nb_streams && stream_index < 0; ++i) {
      if (IsVideo(format->streams[i]) && format->streams[i]->codecpar->codec_id == AV_CODEC_ID_AV1) {
        stream_index = static_cast<int>(i);
      }
    }
    if (stream_index < 0) {
      stream_index = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    }
    if (stream_index < 0 || !IsVideo(format->streams[stream_index])) {
      return Status(CV_ERROR_NOT_FOUND, Sprintf("has no video stream (the %s container holds %u streams)",
                                                format->iformat->name, format->nb_streams));
    }
  } else if (static_cast<unsigned>(stream_index) >= format->nb_streams) {
    return Status(CV_ERROR_NOT_FOUND, Sprintf("has no stream %d: the %s container holds %u", stream_index,
                                              format->iformat->name, format->nb_streams));
  } else if (!IsVideo(format->streams[stream_index])) {
    const char* type = av_get_media_type_string(format->streams[stream_index]->codecpar->codec_type);
    return Status(CV_ERROR_NOT_FOUND, Sprintf("stream %d is not a video stream (it is %s)", stream_index,
                                              type != nullptr ? type : "unknown"));
  }
  AVStream* stream = format->streams[stream_index];
  if (stream->codecpar->codec_id != AV_CODEC_ID_AV1) {
    return Status(CV_ERROR_UNSUPPORTED, Sprintf("dav1d backend decodes AV1 only; stream %d is %s (use another device, "
                                                "e.g. cpu)",
                                                stream_index, avcodec_get_name(stream->codecpar->codec_id)));
  }
  if (stream->time_base.num <= 0 || stream->time_base.den <= 0) {
    return Status(CV_ERROR_CORRUPT_DATA, Sprintf("stream %d has no valid time base", stream_index));
  }
  for (unsigned i = 0; i < format->nb_streams; ++i) {
    if (format->streams[i] != stream) format->streams[i]->discard = AVDISCARD_ALL;
  }
  c->stream_ = stream;
  *out = std::move(c);
  return Status();
}

uint32_t Container::ListStreams(cv_stream_info* out, uint32_t capacity) const {
  uint32_t n = 0;
  for (; n < format_->nb_streams && n < capacity; ++n) {
    const AVCodecParameters* par = format_->streams[n]->codecpar;
    cv_stream_info& info = out[n];
    info = cv_stream_info{};
    info.index = static_cast<int32_t>(n);
    info.type = SdkStreamType(par->codec_type);
    if (par->codec_id != AV_CODEC_ID_NONE) {
      std::snprintf(info.codec, sizeof(info.codec), "%s", avcodec_get_name(par->codec_id));
    }
    if (info.type == CV_STREAM_VIDEO) {
      info.width = static_cast<uint32_t>(std::max(par->width, 0));
      info.height = static_cast<uint32_t>(std::max(par->height, 0));
    } else if (info.type == CV_STREAM_AUDIO) {
      info.sample_rate = static_cast<uint32_t>(std::max(par->sample_rate, 0));
      info.channels = static_cast<uint32_t>(std::max(par->ch_layout.nb_channels, 0));
    }
  }
  return n;
}

Container::~Container() {
  if (format_ != nullptr) avformat_close_input(&format_);
  if (io_ != nullptr) {
    av_freep(&io_->buffer);  // libavformat may have swapped in a buffer of its own
    avio_context_free(&io_);
  }
}

bool Container::ReadPacket(AVPacket* packet) {
  int ret;
  do {
    av_packet_unref(packet);
    ret = av_read_frame(format_, packet);
  } while (ret >= 0 && packet->stream_index != stream_->index);
  last_error_ = ret >= 0 || ret == AVERROR_EOF ? 0 : ret;
  return ret >= 0;
}

Status Container::Seek(int64_t timestamp) {
  last_error_ = 0;
  int ret = av_seek_frame(format_, stream_->index, timestamp, AVSEEK_FLAG_BACKWARD);
  if (ret < 0) ret = avformat_seek_file(format_, stream_->index, INT64_MIN, timestamp, timestamp, 0);
  if (ret < 0) {
    return Status(CV_ERROR_CORRUPT_DATA, Sprintf("cannot seek to timestamp %lld: %s", static_cast<long long>(timestamp),
                                                 AvError(ret).c_str()));
  }
  return Status();
}

}  // namespace dav1d_plugin
