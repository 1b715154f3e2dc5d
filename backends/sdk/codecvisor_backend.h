/* File: backends/sdk/codecvisor_backend.h
 *
 * The stable C ABI a codecvisor backend implements. This header is the whole
 * contract between a vendor's decoder library and codecvisor: it depends on
 * nothing but the C standard library, and no C++ type, Cap'n Proto message or
 * shared-memory detail crosses it.
 *
 * How it is used. codecvisor's trusted runner (`codecvisor-backend`) dlopens
 * the library named in the backend's manifest, looks up the entry symbol
 * (`codecvisor_backend_v1` unless the manifest says otherwise), calls it once,
 * and checks the returned table's `abi_version` and `struct_size`. It then
 * calls `create` once, and `open_session` for each video a caller opens.
 *
 * Threading. Each session is driven by one runner thread at a time: calls on
 * one session never overlap, but calls on different sessions do, so a backend
 * must keep per-session state in its cv_session. `open_session` calls come
 * one at a time, on the runner's main thread (while other sessions decode). `create` and `destroy` are
 * called with no session open.
 *
 * Errors. Every fallible call returns a cv_status and, on failure, writes a
 * NUL-terminated message into the caller's cv_error. Messages should name the
 * thing and the cause ("frame 400 is past the end: the stream has 300 frames").
 * A backend must not abort on bad input: a corrupt file is an error return.
 * (If it crashes anyway, codecvisor restarts it; that costs latency.)
 *
 * Memory. Frame pixels go into a buffer the runner owns and lends for one
 * call (cv_frame_buffer); the backend never keeps a pointer to it after the
 * call returns. The one exception: slots borrowed from the session's frame
 * pool (cv_frame_pool), kept until given back. Every other pointer passed
 * in is valid only during the call.
 */

#ifndef CODECVISOR_BACKENDS_SDK_CODECVISOR_BACKEND_H_
#define CODECVISOR_BACKENDS_SDK_CODECVISOR_BACKEND_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CODECVISOR_BACKEND_ABI_VERSION 1
#define CODECVISOR_BACKEND_ENTRY "codecvisor_backend_v1"

/* The environment variable through which the host tells a backend how much
 * its libraries may log to stderr, in the ffmpeg CLI's -loglevel names
 * (quiet, panic, fatal, error, warning, info, verbose, debug, trace). Unset,
 * empty or unknown means quiet: a backend's errors reach the user through
 * cv_error, and a library must not write to a user's terminal. */
#define CODECVISOR_BACKEND_LOG_LEVEL_ENV "CODECVISOR_BACKEND_LOG_LEVEL"

/* Every enumerated field and return value is an int32_t, so the layout
 * does not depend on how a compiler sizes enums (-fshort-enums), and an
 * unknown value is just a number, not undefined behaviour. The named
 * constants below are its values. */

/* Status codes; the same values as ErrorCode in ipc/protocol.capnp. */
typedef int32_t cv_status;
#define CV_OK 0
#define CV_ERROR_INVALID_ARGUMENT 1  /* a bad option or request */
#define CV_ERROR_OUT_OF_RANGE 2  /* an index or time outside the stream */
#define CV_ERROR_NOT_FOUND 3  /* the file lacks the stream asked for: no video stream, no such stream index
                                 (not for device problems: those are INVALID_ARGUMENT or INTERNAL) */
#define CV_ERROR_CORRUPT_DATA 4  /* the file cannot be demuxed or decoded */
#define CV_ERROR_UNSUPPORTED 5  /* codec, pixel format or option not supported */
#define CV_ERROR_RESOURCE_EXHAUSTED 6  /* out of memory or threads. For a thread refused (pthread_create's
                                        EAGAIN), put strerror(EAGAIN) in the message: the runner then tells
                                        the process's own limit from its user's, whose shortage blames
                                        neither the file nor the plugin */
#define CV_ERROR_INTERNAL 7
/* decode_frame of a session that lays frames out natively in place of the
 * RGB asked for (cv_open_options.native_formats) met a frame that layout
 * cannot hold exactly: another pixel format, size, or colour space or range
 * than the stream's metadata says. Return it before writing the frame; the
 * host then opens a new session for RGB and asks again. From a session
 * whose frames are not laid out natively it is the backend's error, not
 * the file's (the runner reports it as CV_ERROR_INTERNAL would be). */
#define CV_ERROR_NATIVE_CHANGED 8

#define CV_ERROR_MESSAGE_BYTES 1024
typedef struct cv_error {
  char message[CV_ERROR_MESSAGE_BYTES]; /* NUL-terminated; truncated if longer */
} cv_error;

typedef int32_t cv_seek_mode;
#define CV_SEEK_EXACT 0  /* scan the stream once at open; indices and times are exact */
#define CV_SEEK_APPROXIMATE 1  /* trust the container header; no scan */

typedef struct cv_frame_buffer cv_frame_buffer;
typedef struct cv_frame_pool cv_frame_pool;
typedef struct cv_cancel_check cv_cancel_check;

typedef int32_t cv_output_format;
#define CV_OUTPUT_RGB24 0  /* one plane, interleaved R,G,B (HWC) */
#define CV_OUTPUT_RGB24_PLANAR 1  /* three planes R, G, B (CHW) */
#define CV_OUTPUT_NATIVE 2  /* the decoder's own pixel format, one plane per component */

typedef struct cv_open_options {
  uint32_t struct_size;           /* sizeof(cv_open_options) as the runner was built */
  int32_t stream_index;           /* -1: the best video stream */
  cv_seek_mode seek_mode;
  cv_output_format output_format;
  uint32_t decoder_threads;       /* 0: the decoder chooses */
  uint32_t output_width;          /* 0: the stream's own width */
  uint32_t output_height;         /* 0: the stream's own height */
  const char* device;             /* the device string asked for, e.g. "cpu", "acme:1" */
  const char* file_label;         /* the caller's name for the file, for messages only */
  /* Native pixel formats the host converts itself, comma-separated (e.g.
   * "yuv420p,nv12"); "" or NULL: none. When output_format is RGB24 or
   * RGB24_PLANAR, the stream is not rotated, no output size is asked for,
   * and the decoder's pixel format is one of these, a backend may lay its
   * frames out as CV_OUTPUT_NATIVE instead (get_frame_layout says which it
   * chose); the host then converts them exactly as the cpu backend would
   * have. A backend that ignores this field sends RGB, as asked. Read it
   * only when struct_size covers it: older runners do not set it. */
  const char* native_formats;
  /* Arena slots the backend may borrow for its decoder's own pictures, so
   * that a frame decoded into one reaches the host without a copy (see
   * cv_frame_pool). Valid until close_session returns; NULL from a runner
   * that has none. Read it only when struct_size covers it. */
  cv_frame_pool* frame_pool;
  /* Whether the host has cancelled the request being decoded (see
   * cv_cancel_check). Valid until close_session returns; NULL from a runner
   * that has none. Read it only when struct_size covers it. */
  cv_cancel_check* cancel_check;
} cv_open_options;

#define CV_NAME_BYTES 64
typedef struct cv_stream_metadata {
  int32_t stream_index;
  uint32_t num_video_streams;
  char codec[CV_NAME_BYTES];          /* e.g. "h264" */
  char pixel_format[CV_NAME_BYTES];   /* the decoder's, e.g. "yuv420p" */
  uint32_t width;                     /* frame size after any rotation the backend applies */
  uint32_t height;
  int64_t num_frames_from_header;     /* -1 if the container does not say */
  int64_t num_frames_from_scan;       /* -1 in approximate mode */
  double average_fps;
  double duration_seconds;
  double begin_stream_seconds;        /* pts of the first frame */
  double end_stream_seconds;          /* pts + duration of the last frame */
  int64_t bit_rate;                   /* bits per second, 0 if unknown */
  double rotation_degrees;            /* from the display matrix, 0 if none */
  char color_space[CV_NAME_BYTES];
  char color_range[CV_NAME_BYTES];
  char color_primaries[CV_NAME_BYTES];
  char color_transfer[CV_NAME_BYTES];
  int64_t time_base_num;
  int64_t time_base_den;
} cv_stream_metadata;
/* The host refuses an open whose metadata no stream can have (the file's
 * header, passed on, may be a crafted one: the backend is kept): times,
 * rate and rotation finite (a NaN average_fps, as av_q2d of an unknown 0/0,
 * is taken as unknown, 0), duration, rate and bit rate not negative, the end
 * not before the beginning, rotation within +-360, frame counts -1 or 0 to
 * 2^32 (a time base that is not two positive 32-bit integers is shown as
 * unknown, 0/1). stream_index must be the opened stream's, below
 * CV_MAX_STREAMS and the one asked for, if any; num_video_streams at most
 * CV_MAX_STREAMS (0: not counted); a violation of those is a channel error
 * (the backend is replaced). Report what you do not know
 * as the field's "unknown" (-1 counts, 0 for the rest), never a NaN or a
 * negative number. Each frame's cv_frame_info times must be finite and its
 * duration not negative (a channel error otherwise). Options you refuse for
 * every file are CV_ERROR_INVALID_ARGUMENT; CV_ERROR_UNSUPPORTED is for a
 * file you do not decode (Python's UnsupportedVideoError, which batch jobs
 * skip as a bad file). */

/* What the container's header says of the stream's times
 * (get_header_times). In approximate mode cv_stream_metadata's times are
 * these; in exact mode they are the scanned frames' and these are what the
 * header claimed (torchcodec's *_from_header fields). */
typedef struct cv_header_times {
  double duration_seconds;     /* 0 if the header does not say */
  double begin_stream_seconds; /* the stream's start time, 0 if the header does not say */
} cv_header_times;

/* The shape of the stream's pixels (get_pixel_aspect_ratio): a pixel's
 * width over its height in the frames the backend returns (after any
 * rotation it applies, so a quarter turn inverts the file's ratio), as the
 * container or the bitstream says (FFmpeg's sample aspect ratio). Square
 * pixels are 1/1; num 0 is a file that does not say. */
typedef struct cv_aspect_ratio {
  int32_t num;
  int32_t den;
} cv_aspect_ratio;

/* The type of a stream of the file (cv_stream_info.type). */
typedef int32_t cv_stream_type;
#define CV_STREAM_UNKNOWN 0
#define CV_STREAM_VIDEO 1
#define CV_STREAM_AUDIO 2
#define CV_STREAM_SUBTITLE 3
#define CV_STREAM_DATA 4
#define CV_STREAM_ATTACHMENT 5

/* One stream of the file, of any type, as the container describes it
 * (get_streams). Fields that do not apply to the type are 0. */
typedef struct cv_stream_info {
  int32_t index;                      /* the container's stream index, from 0 */
  cv_stream_type type;
  char codec[CV_NAME_BYTES];          /* e.g. "h264", "aac", "subrip"; "" if unknown */
  uint32_t width;                     /* video: as stored, before any display rotation */
  uint32_t height;
  uint32_t sample_rate;               /* audio: in Hz, 0 if unknown */
  uint32_t channels;                  /* audio: 0 if unknown */
} cv_stream_info;

/* The most streams get_streams reports (the capacity the runner passes). */
#define CV_MAX_STREAMS 1024

#define CV_MAX_PLANES 4
/* Where every output frame of a session goes in the runner's buffer. Fixed
 * for the session's lifetime (the output size and format do not change).
 * SECURITY: the host sizes the session's shared memory from it, so it
 * refuses (and replaces the backend for) a layout larger than frames of its
 * size need: width and height 1..32768, the stream's own unless an output
 * size was asked for; 1 plane for RGB24, 3 for planar, 1..4 natively; each
 * plane's rows at most the height (all of it for RGB), its stride at least
 * a row (3 x width for RGB24, width for planar) and at most 16 x width +
 * 4096, the plane inside `size`; and `size` at most 64 KiB plus, for every
 * plane, its stride x (2 x its rows + 128): room for a decoder's aligned,
 * padded pictures, not more. A CV_OUTPUT_NATIVE layout in place of the RGB
 * asked for has the stream's pixel_format (cv_stream_metadata's), one of
 * native_formats, under that field's conditions. */
typedef struct cv_frame_layout {
  uint32_t width;
  uint32_t height;
  cv_output_format format;
  char pixel_format[CV_NAME_BYTES];   /* "rgb24", "rgbp" (planar R,G,B) or the native one, e.g. "yuv420p" */
  uint32_t num_planes;
  uint64_t plane_offset[CV_MAX_PLANES]; /* from the start of the buffer */
  uint32_t plane_stride[CV_MAX_PLANES]; /* bytes per row */
  uint32_t plane_rows[CV_MAX_PLANES];
  uint64_t size;                        /* bytes from the buffer start to the end of the last plane */
} cv_frame_layout;

/* Bytes past layout.size that a backend may write into (and that the host
 * never reads): SIMD converters such as libswscale's store whole blocks of
 * pixels and can run past the last pixel of a frame (45 bytes for a 1-pixel
 * wide RGB24 frame, seen by the cpu backend's fuzzer). The runner's buffers
 * always have this slack; a backend's own scratch buffers need it too. */
#define CV_BUFFER_PADDING 256

/* The buffer decode_frame writes a frame into. The runner lends it from the
 * channel's frame arena, whose slots the host frees as its callers let go of
 * frames.
 *
 * Late buffers. A backend whose table sets `late_frame_buffer` gets `data`
 * NULL and `capacity` 0, and calls `acquire` once it has decoded the frame,
 * just before it writes the pixels; `acquire` fills in `data` and
 * `capacity` (and, called again, returns the same buffer). Taking the slot
 * that late gives the host most of the decode to free the previous frame's
 * slot, so consecutive frames keep landing in the same, cache-warm slot
 * instead of rotating through the arena. `acquire` may wait for the host
 * (while every slot is held by the caller); if it fails, decode_frame must
 * return an error without writing, and may pass the failure's status and
 * message on. It must be called before decode_frame returns, with the
 * buffer pointer decode_frame was given, from any thread.
 * A runner that predates late buffers never passes `data` NULL, and has no
 * `acquire` field: a backend tests `data == NULL` before it reads `acquire`. */
struct cv_frame_buffer {
  uint8_t* data;      /* lent by the runner for the duration of one call */
  uint64_t capacity;  /* at least layout.size + CV_BUFFER_PADDING */
  /* Non-NULL exactly when `data` is NULL (late buffers). */
  cv_status (*acquire)(cv_frame_buffer* self, cv_error* error);
};

/* The frame pool: shared-memory slots a backend borrows as its decoder's
 * picture buffers (for FFmpeg, from its get_buffer2 callback), keeps as
 * long as the decoder references the picture, and gives back. A frame
 * decoded into a borrowed slot at the session's layout (plane offsets and
 * strides exactly as get_frame_layout said, from the slot's start) is sent
 * to the host with `lend` in place of buffer->acquire and a copy.
 *
 * Only sessions asked for RGB whose frames are laid out natively get pool
 * slots (the host converts those; an RGB frame is converted into its
 * buffer anyway),
 * and only once the host has attached the session's arena: before that,
 * and whenever every pool slot is borrowed or held by the host's callers,
 * `borrow` returns NULL and the backend uses its own memory, as without a
 * pool. The host may read a lent slot until its caller lets the frame go,
 * so a backend must not write into a slot it has lent: pool only decoders
 * that take a new picture for every frame (not those that rewrite their
 * last picture in place, as conditional-replenishment codecs do). */
struct cv_frame_pool {
  /* Borrows a slot: its first byte (page-aligned), with *capacity set to
   * the bytes it holds (at least the layout's size + CV_BUFFER_PADDING);
   * NULL when none is free. Never waits. Thread-safe. */
  uint8_t* (*borrow)(cv_frame_pool* self, uint64_t* capacity);
  /* Ends the borrow of the slot starting at `data` (ignored for anything
   * else). Thread-safe, from any thread; every borrow must end before
   * close_session returns. A slot lent to the host stays readable there
   * until its caller lets the frame go. */
  void (*give_back)(cv_frame_pool* self, uint8_t* data);
  /* From decode_frame, in place of buffer->acquire (late buffers) or of
   * writing into buffer->data: this call's frame is already in borrowed
   * slot `data`. The borrow goes on; the slot becomes the frame the host
   * receives, and `buffer` points at it (a buffer lent before the call, or
   * acquired, goes back unused). Fails (CV_ERROR_INVALID_ARGUMENT, with a message) when `data`
   * is not a borrowed slot, or when the host still holds it from an earlier
   * lend (a picture shown twice): then copy the frame into a buffer as
   * usual. */
  cv_status (*lend)(cv_frame_pool* self, cv_frame_buffer* buffer, uint8_t* data, cv_error* error);
};

/* A request cancelled while one frame of it is being decoded: the caller
 * was interrupted (Ctrl-C), or stopped taking frames. The runner reads a
 * cancel between two frames by itself; a backend that can spend long on
 * one frame (an exact seek decodes from the key frame before it, which in
 * a long group of pictures is hundreds of frames) asks here, between two
 * packets say, and stops early. A backend that never asks still works: the
 * host waits for the frame, and replaces a backend that has not ended an
 * interrupted request within a second (the conformance suite's `cancel`
 * check fails one that takes longer than that on its sample's last frame). */
struct cv_cancel_check {
  /* Non-zero once the host has cancelled the request that the calling
   * decode_frame or decode_frame_at_seconds serves; it stays non-zero for
   * the rest of that call. The backend may then return any error at once
   * (the runner ends the request as cancelled, and the error goes no
   * further), leaving the session ready for the next request. Call it only
   * from the thread inside that call, during it: from any other thread, or
   * outside a decode call, it returns 0. Cheap: a few memory reads while
   * nothing has come from the host. */
  int32_t (*cancelled)(cv_cancel_check* self);
};

typedef struct cv_frame_info {
  int64_t index;           /* position in the stream, from 0 */
  int64_t pts;             /* in the stream's time base */
  double pts_seconds;
  double duration_seconds;
  int32_t key_frame;       /* non-zero for a key frame */
} cv_frame_info;

typedef struct cv_backend cv_backend; /* the vendor's process-wide state */
typedef struct cv_session cv_session; /* the vendor's state for one open video */

typedef struct cv_backend_v1 {
  uint32_t struct_size;   /* sizeof(cv_backend_v1) */
  uint32_t abi_version;   /* CODECVISOR_BACKEND_ABI_VERSION */
  const char* name;       /* e.g. "cpu"; must match the manifest */
  const char* version;    /* the vendor's version string */
  /* Non-zero if RGB output is bit-exact with FFmpeg's swscale conversion;
   * otherwise the PSNR in dB the backend promises against it. */
  int32_t exact_cpu_output;
  double psnr_threshold_db;

  /* Process-wide initialisation. `config` is the manifest's [config] table as
   * "key=value" lines (may be empty). Called once, after the sandbox is up. */
  cv_status (*create)(const char* config, cv_backend** out, cv_error* error);
  void (*destroy)(cv_backend* backend);

  /* Opens a video read through `fd`, a readable, seekable descriptor the
   * backend may read with read/pread/lseek and must not close (the runner
   * closes it after close_session). There is no path: the sandbox lets the
   * backend open no files. */
  cv_status (*open_session)(cv_backend* backend, int fd, const cv_open_options* options,
                            cv_session** out, cv_error* error);
  void (*close_session)(cv_session* session);

  cv_status (*get_metadata)(cv_session* session, cv_stream_metadata* out, cv_error* error);
  cv_status (*get_frame_layout)(cv_session* session, cv_frame_layout* out, cv_error* error);

  /* Describes frame `index` without decoding it, if the backend can (exact
   * mode); in approximate mode from the header's frame rate. The runner
   * picks a time range's indices with it; in approximate mode it ends the
   * range's answer at the first decoded frame whose pts is not before the
   * range's end, where an estimate and the frame decoded for it disagree. */
  cv_status (*get_frame_info)(cv_session* session, int64_t index, cv_frame_info* out,
                              cv_error* error);
  /* The index of the frame played at `seconds`: the last frame whose pts is
   * <= seconds. CV_ERROR_OUT_OF_RANGE before the first frame or at/after the
   * end of the last one. In exact mode the host refuses, as a forged
   * answer, a frame other than frame 0 whose pts is more than a thousandth
   * of a tick of the time base (at most 10 ms) after `seconds`: a backend
   * may round a time a hair before a frame's up to it, no further. */
  cv_status (*index_at_seconds)(cv_session* session, double seconds, int64_t* index,
                                cv_error* error);

  /* Decodes frame `index` into `buffer` at the session's layout, and
   * describes it in `info` (`info->index` is `index`: a frame described as
   * another fails the request). Consecutive indices must not re-seek: a
   * sequential read is as fast as plain decode. */
  cv_status (*decode_frame)(cv_session* session, int64_t index, cv_frame_buffer* buffer,
                            cv_frame_info* info, cv_error* error);

  /* Fields added after the first release of ABI version 1. A runner reads
   * each only if `struct_size` covers it, so a table built against an
   * older header keeps working (as if the field were 0). */

  /* Non-zero: decode_frame gets late buffers (see cv_frame_buffer). */
  int32_t late_frame_buffer;

  /* Lists every stream of the open file (video, audio, subtitles, ...) so
   * that a user can see what there is and pick one: writes one entry per
   * stream into out[0..capacity), by ascending index with no index twice,
   * and sets *count to the entries written. A file with more than
   * `capacity` streams lists its first `capacity`. Called once, after
   * get_metadata. May be NULL: codecvisor then says the file's streams are
   * unknown. */
  cv_status (*get_streams)(cv_session* session, cv_stream_info* out, uint32_t capacity, uint32_t* count,
                           cv_error* error);

  /* Decodes the frame played at `seconds` into `buffer`, as decode_frame
   * does, and describes it in `info` (`info->index` at least 0). The runner
   * calls it for a request by time, only with a time index_at_seconds
   * accepted. Where index_at_seconds finds the frame (exact mode) this is
   * decode_frame of its index. In approximate mode it is how a backend
   * finds the right frame of a variable-rate stream, whose frames are not
   * at the header rate's nominal times: seek to the time, decode forward,
   * and return the last frame whose pts <= seconds (the frame shown then,
   * whether or not its duration reaches that far; of frames sharing that
   * pts, the last, as exact mode counts them); `info->index` is then
   * the nominal index nearest its pts. In approximate mode the runner
   * also starts a time range with it, then asks decode_frame for
   * info->index + 1, + 2, ...: each must be the next frame in the stream
   * (not a jump to its nominal time), past the header's count while the
   * stream goes on, and CV_ERROR_OUT_OF_RANGE at its end. May be NULL: the
   * runner decodes index_at_seconds' index with decode_frame. */
  cv_status (*decode_frame_at_seconds)(cv_session* session, double seconds, cv_frame_buffer* buffer,
                                       cv_frame_info* info, cv_error* error);

  /* The header's times of the session's stream (cv_header_times), finite,
   * the duration not negative. Called once, after get_metadata. May be
   * NULL: in exact mode codecvisor then says the header's times are
   * unknown, and in approximate mode takes get_metadata's. */
  cv_status (*get_header_times)(cv_session* session, cv_header_times* out, cv_error* error);

  /* The shape of the session's stream's pixels (cv_aspect_ratio): num and
   * den positive, or num 0 where the file does not say. Called once, after
   * get_metadata. May be NULL: codecvisor then says it is unknown. */
  cv_status (*get_pixel_aspect_ratio)(cv_session* session, cv_aspect_ratio* out, cv_error* error);
} cv_backend_v1;

/* The size of a version 1 table before any field was added: the least
 * `struct_size` a runner accepts. */
#define CV_BACKEND_V1_MIN_SIZE offsetof(cv_backend_v1, late_frame_buffer)

/* The entry symbol. Returns a table with static storage duration, or NULL. */
typedef const cv_backend_v1* (*cv_backend_entry_fn)(void);

/* Marks the entry symbol for export when a backend is built with
 * -fvisibility=hidden (recommended: export nothing else). Usage:
 *   CODECVISOR_BACKEND_EXPORT const cv_backend_v1* codecvisor_backend_v1(void) { ... } */
#define CODECVISOR_BACKEND_EXPORT __attribute__((visibility("default")))

#ifdef __cplusplus
}
#endif

#endif /* CODECVISOR_BACKENDS_SDK_CODECVISOR_BACKEND_H_ */
