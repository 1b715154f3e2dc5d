// A backend that decodes no real codec: its "video" is a short text file
// such as "synthetic frames=100 width=64 height=48 fps=25 start=0.5", and
// frame i is a fixed function of i (SyntheticPixel), so tests can check
// every byte the host receives without FFmpeg. It implements the whole C
// ABI, through the same runner and channel as a real backend.
//
// Built three times: as `synthetic` (whose entry synthetic_late_v1 also
// offers a table asking for late frame buffers, as `synthetic_late`), and
// with CODECVISOR_FAULTY as `faulty`, which also obeys the fault named in
// the video ("fault=segfault fault_frame=5", see faults.h) or in its
// manifest's [config] ("fail_init=1", "segfault_open=1", "silent_errors=1", "leak_open=1", "chatty=1",
// "close_channel=1", "hang_close=1", "leak_open_fds=N", "hold_fds=N", "spin_create=N"), and exports extra entry symbols
// that return a bad table; and with CODECVISOR_HOSTILE as `hostile`, which tries to escape its sandbox (attacks.h) in
// create() or decode_frame(). Used by tests only.

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/sdk/codecvisor_backend.h"
#include "backends/testing/attacks.h"
#include "backends/testing/faults.h"
#include "backends/testing/synthetic_pattern.h"

namespace {

#if defined(CODECVISOR_FAULTY)
constexpr bool kFaulty = true;
constexpr bool kHostile = false;
constexpr char kName[] = "faulty";
#elif defined(CODECVISOR_HOSTILE)
constexpr bool kFaulty = false;
constexpr bool kHostile = true;
constexpr char kName[] = "hostile";
#elif defined(CODECVISOR_BUNDLED)
constexpr bool kFaulty = false;
constexpr bool kHostile = false;
constexpr char kName[] = "bundled";
#else
constexpr bool kFaulty = false;
constexpr bool kHostile = false;
constexpr char kName[] = "synthetic";
#endif
constexpr char kLateName[] = "synthetic_late";

struct Backend {
  bool segfault_open = false;  // faulty, [config] segfault_open=1: every open crashes
  bool silent_errors = false;  // faulty, [config] silent_errors=1: a failed open says nothing (a vendor's mistake)
  bool leak_open = false;      // faulty, [config] leak_open=1: every open leaks 16 MiB, touched (a vendor's mistake)
  bool chatty = false;  // faulty, [config] chatty=1: every open writes 100 lines to stderr, whatever the log level
  bool hang_close = false;  // faulty, [config] hang_close=1: close_session never returns (a vendor's mistake)
  int leak_open_fds = 0;  // faulty, [config] leak_open_fds=N: every open leaves N descriptors open (a vendor's mistake)
};

// Set by the process's first open (faulty, [config] spin_create=N).
std::atomic<bool> g_opened{false};

// faulty, [config] KEY=N: N, or 0 where the config does not say.
int ConfigCount(const char* config, const char* key) {
  const char* at = kFaulty && config != nullptr ? std::strstr(config, key) : nullptr;
  return at != nullptr ? std::atoi(at + std::strlen(key)) : 0;
}

// True with probability `p`: a per-thread generator seeded from the pid,
// the thread and the clock, so that every restarted child draws afresh.
bool Chance(double p) {
  thread_local uint64_t state = [] {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (static_cast<uint64_t>(getpid()) << 32) ^ static_cast<uint64_t>(now.tv_nsec) ^
           reinterpret_cast<uintptr_t>(&now) ^ 0x9e3779b97f4a7c15ull;
  }();
  state ^= state << 13, state ^= state >> 7, state ^= state << 17;  // xorshift64
  return static_cast<double>(state >> 11) * 0x1.0p-53 < p;
}

struct Session {
  codecvisor::testing::SyntheticVideo video;
  cv_output_format format = CV_OUTPUT_RGB24;
  std::string label;
  int fd = -1;  // the video's file (late_gate reads how far it has grown)
  off_t size_at_open = 0;
  bool hang_close = false;
  cv_cancel_check* cancel = nullptr;  // the runner's, where it has one
};

int64_t MonotonicNs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1'000'000'000LL + now.tv_nsec;
}

// decode_ms: sleeps that long, in 1 ms steps, stopping early (false) once
// the request is cancelled, as a backend decoding many packets for one
// frame would.
bool SleepUnlessCancelled(const Session& s, int64_t ms) {
  const int64_t until = MonotonicNs() + ms * 1'000'000;
  for (int64_t left = until - MonotonicNs(); left > 0; left = until - MonotonicNs()) {
    if (s.cancel != nullptr && s.cancel->cancelled(s.cancel) != 0) return false;
    usleep(static_cast<useconds_t>(std::min<int64_t>(left / 1000 + 1, 1000)));
  }
  return true;
}

// late_gate: whether the video's file has grown by `index` bytes since the
// open, within 10 s.
bool GateOpens(const Session& s, int64_t index) {
  for (int waited_ms = 0; waited_ms < 10'000; ++waited_ms) {
    char byte;
    if (index <= 0 || pread(s.fd, &byte, 1, s.size_at_open + index - 1) == 1) return true;
    usleep(1000);
  }
  return false;
}

cv_status Fail(cv_error* error, cv_status status, const char* fmt, const char* label, double value = 0) {
  std::snprintf(error->message, sizeof(error->message), fmt, label, value);
  return status;
}

#if defined(CODECVISOR_BUNDLED)
// In libbundled_helper.so, which the plugin ships beside itself and finds
// through its $ORIGIN rpath, as a relocatable vendor package would.
extern "C" int codecvisor_bundled_helper(void);
#endif

cv_status Create(const char* config, cv_backend** out, cv_error* error) {
#if defined(CODECVISOR_BUNDLED)
  if (codecvisor_bundled_helper() != 42) {
    std::snprintf(error->message, sizeof(error->message), "the bundled helper library answered wrong");
    return CV_ERROR_INTERNAL;
  }
#endif
  if (kFaulty && config != nullptr && std::strstr(config, "close_channel=1") != nullptr) {
    // A daemon-style plugin closing descriptors it did not open: the
    // runner's control channel.
    close(3);
    close(4);
  }
  if (config != nullptr && std::strstr(config, "fail_init=1") != nullptr) {
    std::snprintf(error->message, sizeof(error->message), "synthetic backend told to fail at init");
    return CV_ERROR_INTERNAL;
  }
  if (kHostile && config != nullptr) {
    // "attack=NAME\nhost_pid=N\nport=P\n": try the escape from create().
    auto video = codecvisor::testing::ParseSyntheticVideo(std::string("synthetic ") + config);
    if (video.has_value() && !video->attack.empty()) {
      std::string verdict = codecvisor::testing::Attack(video->attack, video->host_pid, video->port);
      std::snprintf(error->message, sizeof(error->message), "%s", verdict.c_str());
      return CV_ERROR_INTERNAL;
    }
  }
  auto* backend = new Backend;
  backend->segfault_open = kFaulty && config != nullptr && std::strstr(config, "segfault_open=1") != nullptr;
  backend->silent_errors = kFaulty && config != nullptr && std::strstr(config, "silent_errors=1") != nullptr;
  backend->leak_open = kFaulty && config != nullptr && std::strstr(config, "leak_open=1") != nullptr;
  backend->chatty = kFaulty && config != nullptr && std::strstr(config, "chatty=1") != nullptr;
  backend->hang_close = kFaulty && config != nullptr && std::strstr(config, "hang_close=1") != nullptr;
  backend->leak_open_fds = ConfigCount(config, "leak_open_fds=");
  // hold_fds=N: create() keeps N descriptors open (a device context's).
  for (int i = ConfigCount(config, "hold_fds="); i > 0; --i) (void)dup(2);
  // spin_create=N: N threads spin from create() until the process's first
  // open (a warm-up that never ends where no decoder comes: a spare).
  codecvisor::testing::StartSpinningThreads(ConfigCount(config, "spin_create="), &g_opened);
  *out = reinterpret_cast<cv_backend*>(backend);
  return CV_OK;
}

void Destroy(cv_backend* backend) { delete reinterpret_cast<Backend*>(backend); }

cv_status Open(cv_backend* backend, int fd, const cv_open_options* options, cv_session** out, cv_error* error) {
  g_opened.store(true, std::memory_order_relaxed);
  if (reinterpret_cast<Backend*>(backend)->segfault_open) {
    volatile int* null = nullptr;
    *null = 1;
  }
  if (reinterpret_cast<Backend*>(backend)->chatty) {
    for (int i = 1; i <= 100; ++i) std::fprintf(stderr, "faulty: opening %s (line %d of 100)\n", options->file_label, i);
  }
  char text[4096] = {};
  ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
  if (n < 0) return Fail(error, CV_ERROR_CORRUPT_DATA, "%s: cannot read", options->file_label);
  auto video = codecvisor::testing::ParseSyntheticVideo(std::string(text, static_cast<size_t>(n)));
  if (!video.has_value()) {
    if (reinterpret_cast<Backend*>(backend)->silent_errors) return CV_ERROR_CORRUPT_DATA;
    return Fail(error, CV_ERROR_CORRUPT_DATA, "%s: not a synthetic video description", options->file_label);
  }
  if (video->open_ms > 0) usleep(static_cast<useconds_t>(video->open_ms) * 1000);
  if (reinterpret_cast<Backend*>(backend)->leak_open) {
    constexpr size_t kLeak = size_t{16} << 20;
    if (void* lost = std::malloc(kLeak)) std::memset(lost, 1, kLeak);  // never freed
  }
  for (int i = 0; i < reinterpret_cast<Backend*>(backend)->leak_open_fds; ++i) (void)dup(fd);  // never closed
  if (kFaulty && video->fault == "hang_open") {
    for (;;) pause();
  }
  if (kFaulty && video->fault == "exhausted_open") {
    // As the runner answers when it cannot start a session thread.
    return Fail(error, CV_ERROR_RESOURCE_EXHAUSTED, "%s: out of threads", options->file_label);
  }
  if (kFaulty && video->fault == "no_thread_open") {
    // As a decoder answers when its threads are refused (strerror(EAGAIN)), here far
    // below the process's own limit: its user's limit refused them.
    return Fail(error, CV_ERROR_RESOURCE_EXHAUSTED, "%s: cannot start its threads: Resource temporarily unavailable",
                options->file_label);
  }
  if (kFaulty && video->fault == "spin_open") codecvisor::testing::StartSpinningThreads(4);
  if (kFaulty && video->fault == "segfault_open") {
    volatile int* null = nullptr;
    *null = 1;
  }
  auto* s = new Session;
  s->video = *video;
  s->format = options->output_format;
  s->label = options->file_label ? options->file_label : "";
  s->fd = fd;
  s->size_at_open = lseek(fd, 0, SEEK_END);
  s->hang_close = reinterpret_cast<Backend*>(backend)->hang_close || (kFaulty && video->fault == "hang_close");
  if (options->struct_size >= offsetof(cv_open_options, cancel_check) + sizeof(cv_cancel_check*)) {
    s->cancel = options->cancel_check;
  }
  *out = reinterpret_cast<cv_session*>(s);
  return CV_OK;
}

void Close(cv_session* session) {
  if (reinterpret_cast<Session*>(session)->hang_close) {
    for (;;) pause();
  }
  delete reinterpret_cast<Session*>(session);
}

cv_status Metadata(cv_session* session, cv_stream_metadata* m, cv_error*) {
  const auto& v = reinterpret_cast<Session*>(session)->video;
  *m = cv_stream_metadata{};
  m->stream_index = 0;
  m->num_video_streams = v.streams > 0 ? static_cast<int32_t>(v.streams) : 1;
  std::snprintf(m->codec, sizeof(m->codec), "synthetic");
  std::snprintf(m->pixel_format, sizeof(m->pixel_format), "rgb24");
  m->width = v.width;
  m->height = v.height;
  m->num_frames_from_header = v.count_unknown ? -1 : v.frames;
  m->num_frames_from_scan = v.count_unknown ? -1 : v.frames;
  m->average_fps = v.nan_rate ? std::nan("") : v.fps;
  m->duration_seconds = v.frames / v.fps;
  m->begin_stream_seconds = v.start;
  m->end_stream_seconds = v.start + v.frames / v.fps;
  m->time_base_num = 1;
  m->time_base_den = 1000;
  if (kFaulty && v.fault == "inf_duration") m->duration_seconds = m->end_stream_seconds = INFINITY;
  // Each process of the backend names the codec its own way: a re-open
  // after a restart describes the same video differently.
  static const int64_t process_stamp = MonotonicNs();
  if (kFaulty && v.fault == "metadata_per_process") {
    std::snprintf(m->codec, sizeof(m->codec), "synthetic-%lld", static_cast<long long>(process_stamp));
  }
  return CV_OK;
}

cv_status Layout(cv_session* session, cv_frame_layout* l, cv_error*) {
  const auto* s = reinterpret_cast<Session*>(session);
  *l = codecvisor::testing::SyntheticLayout(s->video, s->format);
  if (kFaulty && s->video.fault == "badref") l->plane_offset[0] = uint64_t{1} << 40;  // far outside any slot
  if (kFaulty && s->video.fault == "huge_layout") l->size = uint64_t{1} << 30;        // a gigabyte for each small frame
  return CV_OK;
}

cv_status Info(cv_session* session, int64_t index, cv_frame_info* info, cv_error* error) {
  const auto* s = reinterpret_cast<Session*>(session);
  if (index < 0 || index >= s->video.frames) {
    return Fail(error, CV_ERROR_OUT_OF_RANGE, "%s: frame %.0f out of range", s->label.c_str(),
                static_cast<double>(index));
  }
  *info = codecvisor::testing::SyntheticInfo(s->video, index);
  // A file whose blocks last 10^13 s, passed on by an honest plugin.
  if (kFaulty && s->video.fault == "huge_duration" && index == s->video.fault_frame) info->duration_seconds = 1e13;
  return CV_OK;
}

cv_status Streams(cv_session* session, cv_stream_info* out, uint32_t capacity, uint32_t* count, cv_error*) {
  const auto& v = reinterpret_cast<Session*>(session)->video;
  *count = std::min(static_cast<uint32_t>(v.streams), capacity);
  for (uint32_t i = 0; i < *count; ++i) {
    out[i] = cv_stream_info{};
    out[i].index = static_cast<int32_t>(i);
    out[i].type = CV_STREAM_VIDEO;
    std::snprintf(out[i].codec, sizeof(out[i].codec), "synthetic-%053u", i);
    out[i].width = v.width;
    out[i].height = v.height;
  }
  return CV_OK;
}

cv_status IndexAt(cv_session* session, double seconds, int64_t* index, cv_error* error) {
  const auto* s = reinterpret_cast<Session*>(session);
  const double i = std::floor((seconds - s->video.start) * s->video.fps + 1e-9);
  if (!(i >= 0 && i < s->video.frames)) {
    return Fail(error, CV_ERROR_OUT_OF_RANGE, "%s: no frame is played at %.3f s", s->label.c_str(), seconds);
  }
  *index = static_cast<int64_t>(i);
  if (kFaulty && s->video.fault == "played_at_last") *index = s->video.frames - 1;  // for any time
  return CV_OK;
}

cv_status Decode(cv_session* session, int64_t index, cv_frame_buffer* buffer, cv_frame_info* info, cv_error* error) {
  const auto* s = reinterpret_cast<Session*>(session);
  const int64_t given_index = info->index;
  if (cv_status st = Info(session, index, info, error); st != CV_OK) return st;
  // A plugin built before decode_frame's index was read, which never set it.
  if (kFaulty && s->video.fault == "index_untouched") info->index = given_index;
  const cv_frame_layout layout = codecvisor::testing::SyntheticLayout(s->video, s->format);
  if (buffer->data != nullptr && buffer->capacity < layout.size) {
    return Fail(error, CV_ERROR_INTERNAL, "%s: buffer too small", s->label.c_str());
  }
  if (kHostile && !s->video.attack.empty()) {
    std::string verdict = codecvisor::testing::Attack(s->video.attack, s->video.host_pid, s->video.port);
    std::snprintf(error->message, sizeof(error->message), "%s", verdict.c_str());
    return CV_ERROR_INTERNAL;
  }
  if (!SleepUnlessCancelled(*s, s->video.decode_ms)) {
    return Fail(error, CV_ERROR_INTERNAL, "%s: cancelled", s->label.c_str());
  }
  if (s->video.busy_ms > 0) {
    const int64_t until = MonotonicNs() + s->video.busy_ms * 1'000'000;
    volatile uint64_t work = 0;
    while (MonotonicNs() < until) {
      for (int i = 0; i < 10'000; ++i) work = work + static_cast<uint64_t>(i);
    }
  }
  // A late buffer: the frame is "decoded", take it now.
  if (buffer->data == nullptr) {
    if (s->video.late_skip == index) return CV_OK;  // broken: returns without a buffer
    if (s->video.late_gate && !GateOpens(*s, index)) {
      return Fail(error, CV_ERROR_INTERNAL, "%s: the test never let go of frame %.0f", s->label.c_str(),
                  static_cast<double>(index - 1));
    }
    if (cv_status st = buffer->acquire(buffer, error); st != CV_OK) return st;
    if (s->video.late_twice) {
      uint8_t* first = buffer->data;
      if (cv_status st = buffer->acquire(buffer, error); st != CV_OK) return st;
      if (buffer->data != first) {
        return Fail(error, CV_ERROR_INTERNAL, "%s: acquire lent a second buffer", s->label.c_str());
      }
    }
    if (buffer->capacity < layout.size) {
      return Fail(error, CV_ERROR_INTERNAL, "%s: buffer too small", s->label.c_str());
    }
  }
  const auto& fault = s->video.fault;
  if (kFaulty && !fault.empty()) {
    const bool strike = s->video.fault_rate > 0 ? Chance(s->video.fault_rate)
                                                : (s->video.fault_frame < 0 || s->video.fault_frame == index);
    if (strike) codecvisor::testing::InjectFault(fault, buffer);
    if (strike && fault == "wrong_index") ++info->index;  // a frame described as the next one
    // The code for a native session's frame it cannot hold, from RGB ones.
    if (strike && fault == "native_changed") {
      return Fail(error, CV_ERROR_NATIVE_CHANGED, "%s: frame %.0f changed", s->label.c_str(),
                  static_cast<double>(index));
    }
    // Codes only an open may give (a stream not found, options refused).
    if (strike && (fault == "not_found" || fault == "invalid_argument")) {
      return Fail(error, fault == "not_found" ? CV_ERROR_NOT_FOUND : CV_ERROR_INVALID_ARGUMENT,
                  "%s: frame %.0f refused", s->label.c_str(), static_cast<double>(index));
    }
  }
  codecvisor::testing::FillSyntheticFrame(s->video, s->format, index, buffer->data);
  return CV_OK;
}

const cv_backend_v1 kTable = {
    .struct_size = sizeof(cv_backend_v1),
    .abi_version = CODECVISOR_BACKEND_ABI_VERSION,
    .name = kName,
    .version = "1.0",
    .exact_cpu_output = 1,
    .psnr_threshold_db = 0.0,
    .create = Create,
    .destroy = Destroy,
    .open_session = Open,
    .close_session = Close,
    .get_metadata = Metadata,
    .get_frame_layout = Layout,
    .get_frame_info = Info,
    .index_at_seconds = IndexAt,
    .decode_frame = Decode,
    .late_frame_buffer = 0,
    .get_streams = Streams,
};

// kTable with `edit` applied, built once: each entry point passes its own
// lambda, so each gets its own instantiation and its own table.
template <typename Edit>
const cv_backend_v1* TableVariant(Edit edit) {
  static const cv_backend_v1 table = [&] {
    cv_backend_v1 t = kTable;
    edit(t);
    return t;
  }();
  return &table;
}

}  // namespace

extern "C" CODECVISOR_BACKEND_EXPORT const cv_backend_v1* codecvisor_backend_v1(void) { return &kTable; }

// The same backend asking for late frame buffers, under its own name
// (manifest synthetic_late.toml).
extern "C" CODECVISOR_BACKEND_EXPORT const cv_backend_v1* synthetic_late_v1(void) {
  return TableVariant([](cv_backend_v1& t) {
    t.name = kLateName;
    t.late_frame_buffer = 1;
  });
}

#ifdef CODECVISOR_FAULTY
// Entry points a broken plugin might export, for manifests that name them.
extern "C" CODECVISOR_BACKEND_EXPORT const cv_backend_v1* faulty_wrong_abi(void) {
  return TableVariant([](cv_backend_v1& t) { t.abi_version = 99; });
}
extern "C" CODECVISOR_BACKEND_EXPORT const cv_backend_v1* faulty_null_table(void) { return nullptr; }
// A table shorter than the first version 1 header's.
extern "C" CODECVISOR_BACKEND_EXPORT const cv_backend_v1* faulty_short_table(void) {
  return TableVariant([](cv_backend_v1& t) {
    t.name = "shorttable";
    t.struct_size = CV_BACKEND_V1_MIN_SIZE - sizeof(void*);
  });
}
// A table as built against the first version 1 header, named "oldtable":
// its struct_size ends before late_frame_buffer, so the runner must not
// read that field (set here, as stray memory past an old table might be)
// and must lend buffers up front; decode_frame fails if it gets a late one.
extern "C" CODECVISOR_BACKEND_EXPORT const cv_backend_v1* faulty_first_v1_table(void) {
  return TableVariant([](cv_backend_v1& t) {
    t.name = "oldtable";
    t.struct_size = CV_BACKEND_V1_MIN_SIZE;
    t.late_frame_buffer = 1;
    t.decode_frame = [](cv_session* session, int64_t index, cv_frame_buffer* buffer, cv_frame_info* info,
                        cv_error* error) {
      if (buffer->data == nullptr) {
        std::snprintf(error->message, sizeof(error->message),
                      "got a late buffer, though this table's struct_size ends before late_frame_buffer");
        return CV_ERROR_INTERNAL;
      }
      return Decode(session, index, buffer, info, error);
    };
  });
}
// A sound table named "slowstart" whose create() takes 2 s: a plugin slow
// to load, whose every start (a warm spare's too) is long.
extern "C" CODECVISOR_BACKEND_EXPORT const cv_backend_v1* faulty_slow_start(void) {
  return TableVariant([](cv_backend_v1& t) {
    t.name = "slowstart";
    t.create = [](const char* config, cv_backend** out, cv_error* error) {
      usleep(2'000'000);
      return Create(config, out, error);
    };
  });
}
// A sound table named "hangonce" whose create() never returns while the
// file its [config] names ("marker=PATH", in a read path) exists: a start
// that hangs until the test removes the file, then starts that work.
extern "C" CODECVISOR_BACKEND_EXPORT const cv_backend_v1* faulty_hangs_while_marked(void) {
  return TableVariant([](cv_backend_v1& t) {
    t.name = "hangonce";
    t.create = [](const char* config, cv_backend** out, cv_error* error) -> cv_status {
      const char* marker = config != nullptr ? std::strstr(config, "marker=") : nullptr;
      if (marker != nullptr) {
        std::string path(marker + 7);
        path = path.substr(0, path.find_first_of("\n\"'"));
        while (access(path.c_str(), F_OK) == 0) pause();
      }
      return Create(config, out, error);
    };
  });
}
// A sound table whose create() never returns, named "inithang".
extern "C" CODECVISOR_BACKEND_EXPORT const cv_backend_v1* faulty_init_hangs(void) {
  return TableVariant([](cv_backend_v1& t) {
    t.name = "inithang";
    t.create = [](const char*, cv_backend**, cv_error*) -> cv_status {
      for (;;) pause();
    };
  });
}
// A sound table whose create() always fails, named "initfail", with a
// message that would retitle a terminal and forge a line of output.
extern "C" CODECVISOR_BACKEND_EXPORT const cv_backend_v1* faulty_init_fails(void) {
  return TableVariant([](cv_backend_v1& t) {
    t.name = "initfail";
    t.create = [](const char*, cv_backend**, cv_error* error) {
      std::snprintf(error->message, sizeof(error->message),
                    "synthetic backend told to fail at init\x1b]0;owned\x07\nok: every check passed");
      return CV_ERROR_INTERNAL;
    };
  });
}
#endif
