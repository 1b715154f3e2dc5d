#include "tools/bench/decode_paths.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "base/batch_memory.h"
#include "tools/bench/cpu_time.h"

namespace codecvisor::bench {

using ::codecvisor::internal::Host;
using ::codecvisor::internal::HostOptions;
using ::codecvisor::internal::BackendStatus;
using ::codecvisor::internal::VideoDecoder;
using ::codecvisor::internal::DecoderOptions;
using ::codecvisor::internal::Frame;
using ::codecvisor::internal::FrameSelection;
using ::codecvisor::internal::StreamMetadata;
using ::codecvisor::internal::SeekMode;
using ::codecvisor::internal::OutputFormat;
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kTouchedBytes = 16;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

absl::Status BackendError(const std::string& path, const char* call, cv_status status, const cv_error& error) {
  return absl::InternalError(
      absl::StrCat(path, ": in-process cpu backend: ", call, " failed (status ", status, "): ", error.message));
}

// One in-process session of the cpu backend, closed on destruction.
class InProcessPath final : public DecodePath {
 public:
  explicit InProcessPath(std::string path) : path_(std::move(path)), table_(codecvisor_backend_v1()) {}
  ~InProcessPath() override {
    if (session_ != nullptr) table_->close_session(session_);
    if (backend_ != nullptr) table_->destroy(backend_);
    if (fd_ >= 0) close(fd_);
  }
  InProcessPath(const InProcessPath&) = delete;
  InProcessPath& operator=(const InProcessPath&) = delete;

  absl::Status Open(uint32_t threads, uint32_t buffers) {
    cv_error error{};
    // The runner passes the manifest's [config]; cpu.toml has none.
    if (cv_status s = table_->create("", &backend_, &error); s != CV_OK) {
      return BackendError(path_, "create", s, error);
    }
    fd_ = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return absl::NotFoundError(absl::StrCat(path_, ": cannot open"));
    cv_open_options options{};
    options.struct_size = sizeof(options);
    options.stream_index = -1;
    options.seek_mode = CV_SEEK_EXACT;
    options.output_format = CV_OUTPUT_RGB24;
    options.decoder_threads = threads;
    options.device = "cpu";
    options.file_label = path_.c_str();
    if (cv_status s = table_->open_session(backend_, fd_, &options, &session_, &error); s != CV_OK) {
      session_ = nullptr;
      return BackendError(path_, "open_session", s, error);
    }
    cv_frame_layout layout{};
    if (cv_status s = table_->get_frame_layout(session_, &layout, &error); s != CV_OK) {
      return BackendError(path_, "get_frame_layout", s, error);
    }
    frame_bytes_ = layout.size;
    buffer_count_ = std::max<uint32_t>(buffers, 1);
    memory_ = BatchMemory(frame_bytes_ * buffer_count_);
    return absl::OkStatus();
  }

  absl::StatusOr<ChunkTiming> Decode(const Chunk& chunk) override {
    ChunkTiming t;
    const int64_t slices_before = ThreadTimeslices();
    const double cpu_before = ThreadCpuSeconds();
    const auto start = Clock::now();
    for (int64_t i = 0; i < chunk.frames(); ++i) {
      const std::span<uint8_t> out(memory_.data() + next_buffer_ * frame_bytes_, frame_bytes_);
      next_buffer_ = (next_buffer_ + 1) % buffer_count_;
      cv_frame_buffer buffer{.data = out.data(), .capacity = out.size()};
      cv_frame_info info{};
      cv_error error{};
      if (cv_status s = table_->decode_frame(session_, chunk.index(i), &buffer, &info, &error); s != CV_OK) {
        return BackendError(path_, "decode_frame", s, error);
      }
      t.checksum += TouchFrame(out);
      t.buffers.Add(out.data());
      ++t.frames;
    }
    t.decode_seconds = Seconds(Clock::now() - start);
    t.thread_cpu_seconds = ThreadCpuSeconds() - cpu_before;
    t.thread_timeslices = ThreadTimeslices() - slices_before;
    return t;
  }

 private:
  const std::string path_;
  const cv_backend_v1* table_;
  cv_backend* backend_ = nullptr;
  cv_session* session_ = nullptr;
  int fd_ = -1;
  // The frame buffers, taken in turn: one region allocated as the Python
  // package's batches are.
  BatchMemory memory_;
  size_t frame_bytes_ = 0;
  size_t buffer_count_ = 1;
  size_t next_buffer_ = 0;
};

// The pid of the child running backend `name` (started by now).
absl::StatusOr<pid_t> BackendPid(const Host& host, const std::string& name) {
  for (const BackendStatus& b : host.Backends()) {
    if (b.name == name && b.pid > 0) return b.pid;
  }
  return absl::InternalError(absl::StrCat("backend '", name, "' has no running process"));
}

FrameSelection SelectionFor(const Chunk& chunk) {
  if (chunk.indices.empty()) return {ipc::IndexRange{chunk.start, chunk.stop, 1}};
  return {ipc::IndexList{chunk.indices}};
}

// A VideoDecoder on the host's cpu backend, and the pid of that backend's
// child (for its CPU time).
class OutOfProcessPath final : public DecodePath {
 public:
  OutOfProcessPath(const Host& host, std::string path, std::unique_ptr<VideoDecoder> decoder, pid_t backend)
      : host_(host), path_(std::move(path)), decoder_(std::move(decoder)), backend_(backend) {}

  pid_t backend_pid() const override { return backend_; }

  absl::StatusOr<ChunkTiming> Decode(const Chunk& chunk) override {
    ChunkTiming t;
    const int64_t slices_before = ThreadTimeslices();
    const double cpu_before = ThreadCpuSeconds();
    const auto start = Clock::now();
    absl::Status s = decoder_->ForEachFrame(SelectionFor(chunk), [&](Frame frame) {
      t.checksum += TouchFrame(frame.data());
      t.buffers.Add(frame.data().data());
      ++t.frames;
      return absl::OkStatus();
    });
    t.decode_seconds = Seconds(Clock::now() - start);
    t.thread_cpu_seconds = ThreadCpuSeconds() - cpu_before;
    t.thread_timeslices = ThreadTimeslices() - slices_before;
    if (!s.ok()) return s;
    // The same child must have served the whole chunk: a restart would
    // make its CPU time meaningless and the chunk's timing an outage's.
    if (absl::StatusOr<pid_t> now = BackendPid(host_, decoder_->backend_name()); !now.ok() || *now != backend_) {
      return absl::InternalError(absl::StrCat(path_, ": the backend restarted during a measured chunk"));
    }
    if (t.frames != chunk.frames()) {
      return absl::InternalError(absl::StrCat(path_, ": expected ", chunk.frames(), " frames, got ", t.frames));
    }
    return t;
  }

 private:
  const Host& host_;
  const std::string path_;
  std::unique_ptr<VideoDecoder> decoder_;
  const pid_t backend_;
};

}  // namespace

[[gnu::noinline]] uint64_t TouchFrame(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return 0;
  uint64_t sum = 0;
  const size_t step = bytes.size() / kTouchedBytes + 1;
  for (size_t i = 0; i < bytes.size(); i += step) sum += bytes[i];
  return sum + bytes.back();
}

absl::StatusOr<std::unique_ptr<Host>> CreateBenchHost(bool sandbox, const std::string& runner) {
  absl::StatusOr<InstallLayout> layout = InstallLayout::Discover();
  if (!layout.ok()) return layout.status();
  if (!runner.empty()) layout->runner = runner;
  HostOptions options;
  options.layout = *layout;
  options.discovery = DiscoveryOptions{{}, layout->builtin_dir, false};
  options.supervision.spawn.sandbox = sandbox;
  return Host::Create(options);
}

absl::StatusOr<std::unique_ptr<DecodePath>> OpenInProcess(const std::string& path, uint32_t threads, uint32_t buffers) {
  auto decoder = std::make_unique<InProcessPath>(path);
  if (absl::Status s = decoder->Open(threads, buffers); !s.ok()) return s;
  return decoder;
}

absl::StatusOr<std::unique_ptr<DecodePath>> OpenOutOfProcess(Host& host, const std::string& path, uint32_t threads,
                                                             uint32_t arena_slots) {
  DecoderOptions options;
  options.device = "cpu";
  options.seek_mode = SeekMode::kExact;
  options.output_format = OutputFormat::kRgb24;
  options.decoder_threads = threads;
  options.arena_slots = arena_slots;
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = host.OpenDecoder(path, options);
  if (!decoder.ok()) return decoder.status();
  absl::StatusOr<pid_t> backend = BackendPid(host, (*decoder)->backend_name());
  if (!backend.ok()) return backend.status();
  return std::make_unique<OutOfProcessPath>(host, path, *std::move(decoder), *backend);
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
