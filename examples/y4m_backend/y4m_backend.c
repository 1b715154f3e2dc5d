/* A codecvisor backend for YUV4MPEG2 (.y4m) files: uncompressed 8-bit
 * YUV 4:2:0 or 4:4:4 frames behind a text header, as `ffmpeg ... clip.y4m`
 * writes them. Grown from the SDK's skeleton (share/codecvisor/skeleton).
 *
 * Output: RGB24 by the BT.601 matrix (YUV4MPEG2 names no matrix, and
 * FFmpeg's swscale then assumes BT.601 too), limited range unless the header says
 * XCOLORRANGE=FULL, chroma taken from the nearest sample (each 4:2:0 chroma
 * sample for its 2x2 pixels), as swscale's unscaled converter does for
 * even frame heights. It is not bit-exact with swscale, so the table
 * declares a PSNR against it. */

#define _POSIX_C_SOURCE 200809L /* pread */

#include <codecvisor/codecvisor_backend.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_FRAMES (1 << 22)
#define MAX_SIDE 16384
#define HEADER_BYTES 512

struct cv_backend {
  int unused;
};

struct cv_session {
  int fd;
  char label[256];
  cv_seek_mode seek_mode;
  cv_output_format format;
  uint32_t width, height;
  uint32_t chroma_width, chroma_height;  /* of the U and V planes */
  int full_range;
  int range_tagged;                      /* the header says XCOLORRANGE */
  const char* pixel_format;              /* FFmpeg's name: yuv420p, yuv444p */
  int64_t rate_num, rate_den;            /* frames per second, num/den */
  int64_t num_frames;
  int64_t* frame_offsets;                /* where each frame's Y plane starts */
  uint8_t* yuv;                          /* one frame's planes */
};

static cv_status fail(cv_error* error, cv_status status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(error->message, sizeof(error->message), format, args);
  va_end(args);
  return status;
}

static int read_at(int fd, void* data, size_t size, int64_t offset) {
  uint8_t* to = data;
  while (size > 0) {
    ssize_t n = pread(fd, to, size, (off_t)offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    to += n;
    size -= (size_t)n;
    offset += n;
  }
  return 0;
}

/* Reads the line starting at `offset` (at most HEADER_BYTES) into `line`,
 * NUL-terminated without its '\n'; returns the offset after the '\n', or -1. */
static int64_t read_line(int fd, int64_t offset, char line[HEADER_BYTES]) {
  ssize_t got = pread(fd, line, HEADER_BYTES - 1, (off_t)offset);
  if (got <= 0) return -1;
  line[got] = '\0';
  char* end = memchr(line, '\n', (size_t)got);
  if (end == NULL) return -1;
  *end = '\0';
  return offset + (end - line) + 1;
}

/* Parses the stream header's parameters ("W160 H90 F24:1 Ip A1:1 C420jpeg
 * XYSCSS=420JPEG ..."). */
static cv_status parse_stream_header(cv_session* s, char* params, cv_error* error) {
  const char* chroma = "420jpeg";
  char* rest = NULL;
  for (char* token = strtok_r(params, " ", &rest); token != NULL; token = strtok_r(NULL, " ", &rest)) {
    switch (token[0]) {
      case 'W': s->width = (uint32_t)strtoul(token + 1, NULL, 10); break;
      case 'H': s->height = (uint32_t)strtoul(token + 1, NULL, 10); break;
      case 'F':
        if (sscanf(token + 1, "%lld:%lld", (long long*)&s->rate_num, (long long*)&s->rate_den) != 2) s->rate_num = 0;
        break;
      case 'C': chroma = token + 1; break;
      case 'X':
        if (strncmp(token, "XCOLORRANGE=", 12) == 0) s->range_tagged = 1;
        if (strcmp(token, "XCOLORRANGE=FULL") == 0) s->full_range = 1;
        break;
      default: break;  /* interlacing (I), aspect (A): no bearing on the pixels */
    }
  }
  if (s->width == 0 || s->width > MAX_SIDE || s->height == 0 || s->height > MAX_SIDE) {
    return fail(error, CV_ERROR_CORRUPT_DATA, "%s: YUV4MPEG2 header: size %ux%u (W and H from 1 to %d)", s->label,
                s->width, s->height, MAX_SIDE);
  }
  if (s->rate_num <= 0 || s->rate_den <= 0) {
    return fail(error, CV_ERROR_CORRUPT_DATA, "%s: YUV4MPEG2 header: no frame rate (F<num>:<den>)", s->label);
  }
  if (strncmp(chroma, "420", 3) == 0 && (chroma[3] == '\0' || strcmp(chroma + 3, "jpeg") == 0 ||
                                          strcmp(chroma + 3, "mpeg2") == 0 || strcmp(chroma + 3, "paldv") == 0)) {
    s->chroma_width = (s->width + 1) / 2;
    s->chroma_height = (s->height + 1) / 2;
    s->pixel_format = "yuv420p";
  } else if (strcmp(chroma, "444") == 0) {
    s->chroma_width = s->width;
    s->chroma_height = s->height;
    s->pixel_format = "yuv444p";
  } else {
    return fail(error, CV_ERROR_UNSUPPORTED, "%s: YUV4MPEG2 colour space C%s: only 8-bit 4:2:0 and 4:4:4", s->label,
                chroma);
  }
  return CV_OK;
}

static size_t frame_bytes(const cv_session* s) {
  return (size_t)s->width * s->height + 2 * (size_t)s->chroma_width * s->chroma_height;
}

/* Parses the stream header and finds every frame ("FRAME[ params]\n" then
 * the Y, U and V planes). */
static cv_status index_frames(cv_session* s, cv_error* error) {
  char line[HEADER_BYTES];
  int64_t offset = read_line(s->fd, 0, line);
  if (offset < 0 || strncmp(line, "YUV4MPEG2 ", 10) != 0) {
    return fail(error, CV_ERROR_CORRUPT_DATA, "%s: not a YUV4MPEG2 file (no 'YUV4MPEG2 ' header line)", s->label);
  }
  cv_status status = parse_stream_header(s, line + 10, error);
  if (status != CV_OK) return status;
  const off_t file_size = lseek(s->fd, 0, SEEK_END);
  const int64_t size = (int64_t)frame_bytes(s);
  int64_t capacity = 0;
  while (offset < file_size) {
    const int64_t pixels = read_line(s->fd, offset, line);
    if (pixels < 0 || strncmp(line, "FRAME", 5) != 0 || (line[5] != '\0' && line[5] != ' ')) {
      return fail(error, CV_ERROR_CORRUPT_DATA, "%s: frame %lld: no FRAME header at byte %lld", s->label,
                  (long long)s->num_frames, (long long)offset);
    }
    if (pixels + size > file_size) {
      return fail(error, CV_ERROR_CORRUPT_DATA, "%s: frame %lld is truncated (%lld of %lld bytes)", s->label,
                  (long long)s->num_frames, (long long)(file_size - pixels), (long long)size);
    }
    if (s->num_frames == capacity) {
      if (capacity == MAX_FRAMES) return fail(error, CV_ERROR_UNSUPPORTED, "%s: more than %d frames", s->label, MAX_FRAMES);
      capacity = capacity == 0 ? 64 : capacity * 2;
      int64_t* grown = realloc(s->frame_offsets, (size_t)capacity * sizeof(int64_t));
      if (grown == NULL) return fail(error, CV_ERROR_RESOURCE_EXHAUSTED, "out of memory");
      s->frame_offsets = grown;
    }
    s->frame_offsets[s->num_frames++] = pixels;
    offset = pixels + size;
  }
  if (s->num_frames == 0) return fail(error, CV_ERROR_CORRUPT_DATA, "%s: no frames after the header", s->label);
  return CV_OK;
}

static cv_status create(const char* config, cv_backend** out, cv_error* error) {
  (void)config;
  *out = calloc(1, sizeof(cv_backend));
  return *out != NULL ? CV_OK : fail(error, CV_ERROR_RESOURCE_EXHAUSTED, "out of memory");
}

static void destroy(cv_backend* backend) { free(backend); }

static void close_session(cv_session* s) {
  if (s == NULL) return;
  free(s->frame_offsets);
  free(s->yuv);
  free(s);
}

static cv_status open_session(cv_backend* backend, int fd, const cv_open_options* options, cv_session** out,
                              cv_error* error) {
  (void)backend;
  const char* label = options->file_label != NULL ? options->file_label : "(unnamed)";
  if (options->stream_index > 0) {
    return fail(error, CV_ERROR_NOT_FOUND, "%s: a YUV4MPEG2 file has one video stream (0), not %d", label,
                options->stream_index);
  }
  if (options->output_format != CV_OUTPUT_RGB24 && options->output_format != CV_OUTPUT_RGB24_PLANAR) {
    return fail(error, CV_ERROR_UNSUPPORTED, "%s: only RGB24 and planar RGB24 output", label);
  }
  if (options->output_width != 0 || options->output_height != 0) {
    return fail(error, CV_ERROR_UNSUPPORTED, "%s: resizing is not supported", label);
  }
  cv_session* s = calloc(1, sizeof(cv_session));
  if (s == NULL) return fail(error, CV_ERROR_RESOURCE_EXHAUSTED, "out of memory");
  s->fd = fd;
  snprintf(s->label, sizeof(s->label), "%s", label);
  s->seek_mode = options->seek_mode;
  s->format = options->output_format;
  cv_status status = index_frames(s, error);
  if (status == CV_OK && (s->yuv = malloc(frame_bytes(s))) == NULL) {
    status = fail(error, CV_ERROR_RESOURCE_EXHAUSTED, "out of memory");
  }
  if (status != CV_OK) {
    close_session(s);
    return status;
  }
  *out = s;
  return CV_OK;
}

static double start_seconds(const cv_session* s, int64_t index) {
  return (double)index * (double)s->rate_den / (double)s->rate_num;
}

static cv_status get_metadata(cv_session* s, cv_stream_metadata* m, cv_error* error) {
  (void)error;
  memset(m, 0, sizeof(*m));
  m->num_video_streams = 1;
  snprintf(m->codec, sizeof(m->codec), "rawvideo");  /* what ffprobe calls it */
  snprintf(m->pixel_format, sizeof(m->pixel_format), "%s", s->pixel_format);
  m->width = s->width;
  m->height = s->height;
  m->num_frames_from_header = -1;
  m->num_frames_from_scan = s->seek_mode == CV_SEEK_EXACT ? s->num_frames : -1;
  m->average_fps = (double)s->rate_num / (double)s->rate_den;
  m->duration_seconds = start_seconds(s, s->num_frames);
  m->end_stream_seconds = m->duration_seconds;
  m->bit_rate = (int64_t)(frame_bytes(s) * 8 * m->average_fps);
  /* As ffprobe says: an untagged stream's range is unknown (converted as limited). */
  snprintf(m->color_range, sizeof(m->color_range), "%s", !s->range_tagged ? "unknown" : s->full_range ? "pc" : "tv");
  m->time_base_num = s->rate_den;
  m->time_base_den = s->rate_num;
  return CV_OK;
}

static cv_status get_frame_layout(cv_session* s, cv_frame_layout* layout, cv_error* error) {
  (void)error;
  memset(layout, 0, sizeof(*layout));
  const uint64_t w = s->width, h = s->height;
  layout->width = s->width;
  layout->height = s->height;
  layout->format = s->format;
  const int planar = s->format == CV_OUTPUT_RGB24_PLANAR;
  snprintf(layout->pixel_format, sizeof(layout->pixel_format), planar ? "rgbp" : "rgb24");
  layout->num_planes = planar ? 3 : 1;
  for (uint32_t p = 0; p < layout->num_planes; ++p) {
    layout->plane_offset[p] = p * w * h;
    layout->plane_stride[p] = (uint32_t)(planar ? w : w * 3);
    layout->plane_rows[p] = s->height;
  }
  layout->size = w * h * 3;
  return CV_OK;
}

static cv_status get_frame_info(cv_session* s, int64_t index, cv_frame_info* info, cv_error* error) {
  if (index < 0 || index >= s->num_frames) {
    return fail(error, CV_ERROR_OUT_OF_RANGE, "%s: frame %lld is out of range: the file has %lld frames", s->label,
                (long long)index, (long long)s->num_frames);
  }
  info->index = index;
  info->pts = index;  /* the time base is one frame */
  info->pts_seconds = start_seconds(s, index);
  info->duration_seconds = start_seconds(s, 1);
  info->key_frame = 1;
  return CV_OK;
}

static cv_status index_at_seconds(cv_session* s, double seconds, int64_t* index, cv_error* error) {
  const double end = start_seconds(s, s->num_frames);
  if (!(seconds >= 0) || seconds >= end) {
    return fail(error, CV_ERROR_OUT_OF_RANGE, "%s: no frame is played at %g s: the file covers [0, %g) s", s->label,
                seconds, end);
  }
  int64_t i = (int64_t)floor(seconds * (double)s->rate_num / (double)s->rate_den);
  if (i >= s->num_frames) i = s->num_frames - 1;
  while (i > 0 && start_seconds(s, i) > seconds) --i;
  while (i + 1 < s->num_frames && start_seconds(s, i + 1) <= seconds) ++i;
  *index = i;
  return CV_OK;
}

static uint8_t clamp8(int32_t v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* BT.601 in 16.16 fixed point: limited range scales Y by 255/219 and chroma
 * by 255/224; full range uses the samples as they are. */
static void to_rgb(const cv_session* s, uint8_t* out, size_t stride, size_t plane_step, size_t pixel_step) {
  const uint32_t w = s->width, h = s->height;
  const uint8_t* y_plane = s->yuv;
  const uint8_t* u_plane = y_plane + (size_t)w * h;
  const uint8_t* v_plane = u_plane + (size_t)s->chroma_width * s->chroma_height;
  const int32_t y_scale = s->full_range ? 65536 : 76309, y_offset = s->full_range ? 0 : 16;
  const double c = s->full_range ? 1.0 : 255.0 / 224.0;
  const int32_t rv = (int32_t)lround(1.402 * c * 65536), gu = (int32_t)lround(0.344136 * c * 65536),
                gv = (int32_t)lround(0.714136 * c * 65536), bu = (int32_t)lround(1.772 * c * 65536);
  const uint32_t shift_x = s->chroma_width == w ? 0 : 1, shift_y = s->chroma_height == h ? 0 : 1;
  for (uint32_t y = 0; y < h; ++y) {
    const uint8_t* u_row = u_plane + (size_t)(y >> shift_y) * s->chroma_width;
    const uint8_t* v_row = v_plane + (size_t)(y >> shift_y) * s->chroma_width;
    uint8_t* row = out + (size_t)y * stride;
    for (uint32_t x = 0; x < w; ++x) {
      const int32_t luma = (y_plane[(size_t)y * w + x] - y_offset) * y_scale + 32768;
      const int32_t u = u_row[x >> shift_x] - 128, v = v_row[x >> shift_x] - 128;
      uint8_t* pixel = row + (size_t)x * pixel_step;
      pixel[0] = clamp8((luma + rv * v) >> 16);
      pixel[plane_step] = clamp8((luma - gu * u - gv * v) >> 16);
      pixel[2 * plane_step] = clamp8((luma + bu * u) >> 16);
    }
  }
}

static cv_status decode_frame(cv_session* s, int64_t index, cv_frame_buffer* buffer, cv_frame_info* info,
                              cv_error* error) {
  cv_status status = get_frame_info(s, index, info, error);
  if (status != CV_OK) return status;
  const size_t w = s->width, h = s->height;
  if (buffer->data == NULL || buffer->capacity < w * h * 3) {
    return fail(error, CV_ERROR_INTERNAL, "%s: the frame buffer holds %llu bytes, the frame needs %zu", s->label,
                (unsigned long long)buffer->capacity, w * h * 3);
  }
  if (read_at(s->fd, s->yuv, frame_bytes(s), s->frame_offsets[index]) != 0) {
    return fail(error, CV_ERROR_CORRUPT_DATA, "%s: cannot read frame %lld", s->label, (long long)index);
  }
  if (s->format == CV_OUTPUT_RGB24) {
    to_rgb(s, buffer->data, w * 3, 1, 3);
  } else {
    to_rgb(s, buffer->data, w, w * h, 1);
  }
  return CV_OK;
}

CODECVISOR_BACKEND_EXPORT const cv_backend_v1* codecvisor_backend_v1(void) {
  static const cv_backend_v1 table = {
      .struct_size = sizeof(cv_backend_v1),
      .abi_version = CODECVISOR_BACKEND_ABI_VERSION,
      .name = "y4m",
      .version = "0.1",
      .exact_cpu_output = 0,
      .psnr_threshold_db = 35,  /* measured above 40 dB on even sizes; see the README */
      .create = create,
      .destroy = destroy,
      .open_session = open_session,
      .close_session = close_session,
      .get_metadata = get_metadata,
      .get_frame_layout = get_frame_layout,
      .get_frame_info = get_frame_info,
      .index_at_seconds = index_at_seconds,
      .decode_frame = decode_frame,
      .late_frame_buffer = 0,
  };
  return &table;
}
