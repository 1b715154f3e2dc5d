#include "tools/bench/decode_paths.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "tools/bench/cpu_time.h"

namespace codecvisor::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kTouchedBytes = 16;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

absl::Status BackendError(const std::string& path, const char* call, cv_status status, const cv_error& error) {
  return absl::InternalError(absl::StrCat(path, ": in-process cpu backend: ", call, " failed (status ", status,
                                          "): ", error.message));
}

// One in-process session of the cpu backend, closed on destruction.
class InProcessSession {
 public:
  InProcessSession() : table_(codecvisor_backend_v1()) {}
  ~InProcessSession() {
    if (session_ != nullptr) table_->close_session(session_);
    if (backend_ != nullptr) table_->destroy(backend_);
    if (fd_ >= 0) close(fd_);
  }
  InProcessSession(const InProcessSession&) = delete;
  InProcessSession& operator=(const InProcessSession&) = delete;

  absl::Status Open(const std::string& path, uint32_t threads) {
    cv_error error{};
    // The runner passes the manifest's [config]; cpu.toml has none.
    if (cv_status s = table_->create("", &backend_, &error); s != CV_OK) {
      return BackendError(path, "create", s, error);
    }
    fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
    cv_open_options options{};
    options.struct_size = sizeof(options);
    options.stream_index = -1;
    options.seek_mode = CV_SEEK_EXACT;
    options.output_format = CV_OUTPUT_RGB24;
    options.decoder_threads = threads;
    options.device = "cpu";
    options.file_label = path.c_str();
    if (cv_status s = table_->open_session(backend_, fd_, &options, &session_, &error); s != CV_OK) {
      session_ = nullptr;
      return BackendError(path, "open_session", s, error);
    }
    cv_frame_layout layout{};
    if (cv_status s = table_->get_frame_layout(session_, &layout, &error); s != CV_OK) {
      return BackendError(path, "get_frame_layout", s, error);
    }
    buffer_.resize(layout.size);
    return absl::OkStatus();
  }

  absl::Status Decode(const std::string& path, int64_t index, uint64_t* checksum) {
    cv_frame_buffer buffer{buffer_.data(), buffer_.size()};
    cv_frame_info info{};
    cv_error error{};
    if (cv_status s = table_->decode_frame(session_, index, &buffer, &info, &error); s != CV_OK) {
      return BackendError(path, "decode_frame", s, error);
    }
    *checksum += TouchFrame(buffer_);
    return absl::OkStatus();
  }

 private:
  const cv_backend_v1* table_;
  cv_backend* backend_ = nullptr;
  cv_session* session_ = nullptr;
  int fd_ = -1;
  std::vector<uint8_t> buffer_;
};

// The pid of the child running backend `name` (started by now).
absl::StatusOr<pid_t> BackendPid(const Host& host, const std::string& name) {
  for (const BackendStatus& b : host.Backends()) {
    if (b.name == name && b.pid > 0) return b.pid;
  }
  return absl::InternalError(absl::StrCat("backend '", name, "' has no running process"));
}

FrameSelection SelectionFor(const Workload& workload) {
  if (workload.sequential) return {ipc::IndexRange{0, workload.count, 1}};
  return {ipc::IndexList{workload.indices}};
}

}  // namespace

[[gnu::noinline]] uint64_t TouchFrame(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return 0;
  uint64_t sum = 0;
  const size_t step = bytes.size() / kTouchedBytes + 1;
  for (size_t i = 0; i < bytes.size(); i += step) sum += bytes[i];
  return sum + bytes.back();
}

absl::StatusOr<PassTiming> InProcessPass(const std::string& path, uint32_t threads, const Workload& workload) {
  PassTiming t;
  const auto start = Clock::now();
  InProcessSession session;
  if (absl::Status s = session.Open(path, threads); !s.ok()) return s;
  const auto opened = Clock::now();
  const double cpu_before = SelfCpuSeconds();
  for (int64_t i = 0; i < workload.frames(); ++i) {
    const int64_t index = workload.sequential ? i % workload.count : workload.indices[static_cast<size_t>(i)];
    if (absl::Status s = session.Decode(path, index, &t.checksum); !s.ok()) return s;
  }
  const auto done = Clock::now();
  t.cpu_seconds = SelfCpuSeconds() - cpu_before;
  t.host_cpu_seconds = t.cpu_seconds;
  t.open_seconds = Seconds(opened - start);
  t.decode_seconds = Seconds(done - opened);
  t.frames = workload.frames();
  return t;
}

absl::StatusOr<PassTiming> OutOfProcessPass(Host& host, const std::string& path, uint32_t threads,
                                            uint32_t arena_slots, const Workload& workload) {
  DecoderOptions options;
  options.device = "cpu";
  options.seek_mode = SeekMode::kExact;
  options.output_format = OutputFormat::kRgb24;
  options.decoder_threads = threads;
  options.arena_slots = arena_slots;
  PassTiming t;
  const auto start = Clock::now();
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = host.OpenDecoder(path, options);
  if (!decoder.ok()) return decoder.status();
  const auto opened = Clock::now();
  absl::StatusOr<pid_t> backend = BackendPid(host, (*decoder)->backend_name());
  if (!backend.ok()) return backend.status();
  const double host_cpu_before = SelfCpuSeconds();
  absl::StatusOr<double> backend_cpu_before = ProcessCpuSeconds(*backend);
  if (!backend_cpu_before.ok()) return backend_cpu_before.status();
  const auto decode_start = Clock::now();
  absl::Status s;
  // One request per repetition, as a caller decoding the file again would.
  for (int r = 0; r < workload.repeats && s.ok(); ++r) {
    s = (*decoder)->ForEachFrame(SelectionFor(workload), [&](Frame frame) {
      t.checksum += TouchFrame(frame.data());
      ++t.frames;
      return absl::OkStatus();
    });
  }
  const auto done = Clock::now();
  const double host_cpu = SelfCpuSeconds() - host_cpu_before;
  if (!s.ok()) return s;
  absl::StatusOr<double> backend_cpu_after = ProcessCpuSeconds(*backend);
  if (!backend_cpu_after.ok()) return backend_cpu_after.status();
  t.cpu_seconds = host_cpu + (*backend_cpu_after - *backend_cpu_before);
  t.host_cpu_seconds = host_cpu;
  if (t.frames != workload.frames()) {
    return absl::InternalError(absl::StrCat(path, ": expected ", workload.frames(), " frames, got ", t.frames));
  }
  t.open_seconds = Seconds(opened - start);
  t.decode_seconds = Seconds(done - decode_start);
  return t;
}

absl::StatusOr<StreamMetadata> ProbeStream(Host& host, const std::string& path) {
  DecoderOptions options;
  options.device = "cpu";
  options.seek_mode = SeekMode::kExact;
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = host.OpenDecoder(path, options);
  if (!decoder.ok()) return decoder.status();
  return (*decoder)->metadata();
}

}  // namespace codecvisor::bench
