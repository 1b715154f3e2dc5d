/* A minimal codecvisor backend, to copy and grow into your own.
 *
 * It decodes a "PPM stream": binary PPM images (P6, maxval 255, all the same
 * size) one after another, as `ffmpeg -c:v ppm -f image2pipe` writes them,
 * at 25 frames per second (what FFmpeg assumes of such a stream, so its
 * reference agrees). Its RGB24 output is the file's own pixels, so it
 * claims bit-exact output.
 *
 * What to change for your format: open_session (parse the file, find every
 * frame), the metadata, and decode_frame (your decoder, then the conversion
 * to RGB24 described in the SDK README). The rest (layouts, frame info,
 * index_at_seconds, error messages) carries over.
 *
 * Build: see the Makefile next to this file. */

#define _POSIX_C_SOURCE 200809L /* pread */

#include <codecvisor/codecvisor_backend.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FPS 25
#define MAX_FRAMES (1 << 22)
#define MAX_SIDE 16384

struct cv_backend {
  int unused;
};

struct cv_session {
  int fd;
  char label[256];          /* the caller's name for the file, for messages */
  cv_seek_mode seek_mode;
  cv_output_format format;
  uint32_t width, height;
  int64_t num_frames;
  int64_t* pixel_offsets;   /* where each frame's pixels start in the file */
  uint8_t* row;             /* one packed RGB24 row, for planar output */
  cv_cancel_check* cancel;  /* the runner's, NULL from an older one */
};

static cv_status fail(cv_error* error, cv_status status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(error->message, sizeof(error->message), format, args);
  va_end(args);
  return status;
}

/* Reads exactly `size` bytes at `offset`; 0 on success. */
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

/* Parses one PPM header at `offset`: "P6", width, height, maxval, each
 * after whitespace (comments are not supported), then one whitespace byte.
 * Sets the size and where the pixels start; 0 on success. */
static int parse_header(int fd, int64_t offset, uint32_t* width, uint32_t* height, int64_t* pixels) {
  char text[64];
  ssize_t got = pread(fd, text, sizeof(text) - 1, (off_t)offset);
  if (got < 8) return -1;
  text[got] = '\0';
  if (text[0] != 'P' || text[1] != '6') return -1;
  unsigned long values[3];
  char* at = text + 2;
  for (int i = 0; i < 3; ++i) {
    if (*at != ' ' && *at != '\n' && *at != '\t' && *at != '\r') return -1;
    while (*at == ' ' || *at == '\n' || *at == '\t' || *at == '\r') ++at;
    if (*at < '0' || *at > '9') return -1;
    char* end;
    values[i] = strtoul(at, &end, 10);
    at = end;
  }
  if (*at != ' ' && *at != '\n' && *at != '\t' && *at != '\r') return -1;
  if (values[0] == 0 || values[0] > MAX_SIDE || values[1] == 0 || values[1] > MAX_SIDE || values[2] != 255) return -1;
  *width = (uint32_t)values[0];
  *height = (uint32_t)values[1];
  *pixels = offset + (at + 1 - text);
  return 0;
}

static cv_status create(const char* config, cv_backend** out, cv_error* error) {
  (void)config;
  *out = calloc(1, sizeof(cv_backend));
  return *out != NULL ? CV_OK : fail(error, CV_ERROR_RESOURCE_EXHAUSTED, "out of memory");
}

static void destroy(cv_backend* backend) { free(backend); }

static void close_session(cv_session* s) {
  if (s == NULL) return;
  free(s->pixel_offsets);
  free(s->row);
  free(s);
}

/* Finds every frame of the file: its size and where its pixels start. */
static cv_status index_frames(cv_session* s, cv_error* error) {
  const off_t file_size = lseek(s->fd, 0, SEEK_END);
  int64_t offset = 0, capacity = 0;
  while (offset < file_size) {
    uint32_t w, h;
    int64_t pixels;
    if (parse_header(s->fd, offset, &w, &h, &pixels) != 0) {
      return fail(error, CV_ERROR_CORRUPT_DATA, "%s: not a PPM stream: no binary PPM header (P6 W H 255) at byte %lld",
                  s->label, (long long)offset);
    }
    if (s->num_frames == 0) {
      s->width = w;
      s->height = h;
    } else if (w != s->width || h != s->height) {
      return fail(error, CV_ERROR_CORRUPT_DATA, "%s: frame %lld is %ux%u, the first is %ux%u", s->label,
                  (long long)s->num_frames, w, h, s->width, s->height);
    }
    const int64_t end = pixels + (int64_t)w * h * 3;
    if (end > file_size) {
      return fail(error, CV_ERROR_CORRUPT_DATA, "%s: frame %lld is truncated (%lld of %lld bytes)", s->label,
                  (long long)s->num_frames, (long long)(file_size - pixels), (long long)w * h * 3);
    }
    if (s->num_frames == capacity) {
      if (capacity == MAX_FRAMES) return fail(error, CV_ERROR_UNSUPPORTED, "%s: more than %d frames", s->label, MAX_FRAMES);
      capacity = capacity == 0 ? 64 : capacity * 2;
      int64_t* grown = realloc(s->pixel_offsets, (size_t)capacity * sizeof(int64_t));
      if (grown == NULL) return fail(error, CV_ERROR_RESOURCE_EXHAUSTED, "out of memory");
      s->pixel_offsets = grown;
    }
    s->pixel_offsets[s->num_frames++] = pixels;
    offset = end;
  }
  if (s->num_frames == 0) return fail(error, CV_ERROR_CORRUPT_DATA, "%s: empty file", s->label);
  return CV_OK;
}

static cv_status open_session(cv_backend* backend, int fd, const cv_open_options* options, cv_session** out,
                              cv_error* error) {
  (void)backend;
  const char* label = options->file_label != NULL ? options->file_label : "(unnamed)";
  if (options->stream_index > 0) {
    return fail(error, CV_ERROR_NOT_FOUND, "%s: a PPM stream has one video stream (0), not %d", label,
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
  /* A field added to cv_open_options after the first version: read only
   * when the runner's struct holds it. */
  if (options->struct_size >= offsetof(cv_open_options, cancel_check) + sizeof(cv_cancel_check*)) {
    s->cancel = options->cancel_check;
  }
  cv_status status = index_frames(s, error);
  if (status == CV_OK && (s->row = malloc((size_t)s->width * 3)) == NULL) {
    status = fail(error, CV_ERROR_RESOURCE_EXHAUSTED, "out of memory");
  }
  if (status != CV_OK) {
    close_session(s);
    return status;
  }
  *out = s;
  return CV_OK;
}

static cv_status get_metadata(cv_session* s, cv_stream_metadata* m, cv_error* error) {
  (void)error;
  memset(m, 0, sizeof(*m));
  m->stream_index = 0;
  m->num_video_streams = 1;
  snprintf(m->codec, sizeof(m->codec), "ppm");  /* FFmpeg's name for it, as ffprobe says */
  snprintf(m->pixel_format, sizeof(m->pixel_format), "rgb24");
  m->width = s->width;
  m->height = s->height;
  m->num_frames_from_header = -1;
  m->num_frames_from_scan = s->seek_mode == CV_SEEK_EXACT ? s->num_frames : -1;
  m->average_fps = FPS;
  m->duration_seconds = (double)s->num_frames / FPS;
  m->begin_stream_seconds = 0;
  m->end_stream_seconds = (double)s->num_frames / FPS;
  m->time_base_num = 1;
  m->time_base_den = FPS;
  return CV_OK;
}

static cv_status get_frame_layout(cv_session* s, cv_frame_layout* layout, cv_error* error) {
  (void)error;
  memset(layout, 0, sizeof(*layout));
  const uint64_t w = s->width, h = s->height;
  layout->width = s->width;
  layout->height = s->height;
  layout->format = s->format;
  if (s->format == CV_OUTPUT_RGB24) {
    snprintf(layout->pixel_format, sizeof(layout->pixel_format), "rgb24");
    layout->num_planes = 1;
    layout->plane_stride[0] = (uint32_t)(w * 3);
    layout->plane_rows[0] = s->height;
  } else {
    snprintf(layout->pixel_format, sizeof(layout->pixel_format), "rgbp");
    layout->num_planes = 3;
    for (int p = 0; p < 3; ++p) {
      layout->plane_offset[p] = (uint64_t)p * w * h;
      layout->plane_stride[p] = (uint32_t)w;
      layout->plane_rows[p] = s->height;
    }
  }
  layout->size = w * h * 3;
  return CV_OK;
}

static cv_status get_frame_info(cv_session* s, int64_t index, cv_frame_info* info, cv_error* error) {
  if (index < 0 || index >= s->num_frames) {
    return fail(error, CV_ERROR_OUT_OF_RANGE, "%s: frame %lld is out of range: the stream has %lld frames", s->label,
                (long long)index, (long long)s->num_frames);
  }
  info->index = index;
  info->pts = index;
  info->pts_seconds = (double)index / FPS;
  info->duration_seconds = 1.0 / FPS;
  info->key_frame = 1;
  return CV_OK;
}

static cv_status index_at_seconds(cv_session* s, double seconds, int64_t* index, cv_error* error) {
  const double end = (double)s->num_frames / FPS;
  if (!(seconds >= 0) || seconds >= end) {
    return fail(error, CV_ERROR_OUT_OF_RANGE, "%s: no frame is played at %g s: the stream covers [0, %g) s", s->label,
                seconds, end);
  }
  /* The last frame whose start is <= seconds, free of rounding in seconds * FPS. */
  int64_t i = (int64_t)floor(seconds * FPS);
  if (i >= s->num_frames) i = s->num_frames - 1;
  while (i > 0 && (double)i / FPS > seconds) --i;
  while (i + 1 < s->num_frames && (double)(i + 1) / FPS <= seconds) ++i;
  *index = i;
  return CV_OK;
}

static cv_status decode_frame(cv_session* s, int64_t index, cv_frame_buffer* buffer, cv_frame_info* info,
                              cv_error* error) {
  cv_status status = get_frame_info(s, index, info, error);
  if (status != CV_OK) return status;
  const size_t w = s->width, h = s->height, row_bytes = w * 3;
  if (buffer->data == NULL || buffer->capacity < w * h * 3) {
    return fail(error, CV_ERROR_INTERNAL, "%s: the frame buffer holds %llu bytes, the frame needs %zu", s->label,
                (unsigned long long)buffer->capacity, w * h * 3);
  }
  for (size_t y = 0; y < h; ++y) {
    /* A decoder that can spend long on one frame asks now and then whether
     * the request was cancelled (Ctrl-C), and stops: any error will do.
     * Each frame here is read on its own, so nothing needs resetting for
     * the next request; a real decoder flushes what it holds. */
    if (y % 64 == 0 && s->cancel != NULL && s->cancel->cancelled(s->cancel)) {
      return fail(error, CV_ERROR_INTERNAL, "%s: cancelled", s->label);
    }
    const int64_t at = s->pixel_offsets[index] + (int64_t)(y * row_bytes);
    uint8_t* to = s->format == CV_OUTPUT_RGB24 ? buffer->data + y * row_bytes : s->row;
    if (read_at(s->fd, to, row_bytes, at) != 0) {
      return fail(error, CV_ERROR_CORRUPT_DATA, "%s: cannot read frame %lld", s->label, (long long)index);
    }
    if (s->format == CV_OUTPUT_RGB24_PLANAR) {
      for (size_t x = 0; x < w; ++x) {
        for (size_t c = 0; c < 3; ++c) buffer->data[c * w * h + y * w + x] = s->row[x * 3 + c];
      }
    }
  }
  return CV_OK;
}

CODECVISOR_BACKEND_EXPORT const cv_backend_v1* codecvisor_backend_v1(void) {
  static const cv_backend_v1 table = {
      .struct_size = sizeof(cv_backend_v1),
      .abi_version = CODECVISOR_BACKEND_ABI_VERSION,
      .name = "skeleton",
      .version = "0.1",
      .exact_cpu_output = 1,
      .psnr_threshold_db = 0,
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
