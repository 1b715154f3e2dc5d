#include "tools/conformance/conformance.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/manifest.h"
#include "tools/common/process_census.h"
#include "tools/conformance/samples.h"

namespace codecvisor::conformance {
namespace {

using Clock = std::chrono::steady_clock;

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

absl::Status WriteBytes(const std::string& path, absl::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

// The value of "Key:\tvalue" in a /proc/PID/status text.
std::string StatusField(const std::string& status, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (absl::ConsumePrefix(&line, key) && absl::ConsumePrefix(&line, ":")) {
      return std::string(absl::StripAsciiWhitespace(line));
    }
  }
  return "";
}

std::string Link(const std::string& path) {
  char buffer[256];
  const ssize_t n = readlink(path.c_str(), buffer, sizeof(buffer));
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

// The frame's RGB24 pixels, rows packed (the arena's stride may pad them).
std::string PackedRgb24(const Frame& frame) {
  const size_t row = size_t{frame.width()} * 3;
  std::string packed;
  packed.reserve(row * frame.height());
  std::span<const uint8_t> plane = frame.plane(0);
  for (uint32_t y = 0; y < frame.height(); ++y) {
    const size_t at = size_t{y} * frame.stride(0);
    if (at + row > plane.size()) break;
    packed.append(reinterpret_cast<const char*>(plane.data() + at), row);
  }
  return packed;
}

class Suite {
 public:
  Suite(ConformanceTarget target, ConformanceOptions options)
      : target_(std::move(target)), options_(std::move(options)) {}

  absl::StatusOr<ConformanceReport> Run();

 private:
  // Runs `body` as the check `name` and records the outcome. A body returns
  // OK to pass, or an error whose message says what was wrong; `detail`
  // collects what a passing check saw.
  void Check(const std::string& name, const std::function<absl::Status(std::string* detail)>& body);
  void Skip(const std::string& name, const std::string& why);

  absl::Status Prepare();
  absl::Status Handshake(std::string* detail);
  absl::Status SandboxEngaged(std::string* detail);
  absl::Status Metadata(const Sample& sample, std::string* detail);
  absl::Status Sequential(const Sample& sample, std::string* detail);
  absl::Status AccessMethods(const Sample& sample, std::string* detail);
  absl::Status Approximate(const Sample& sample, std::string* detail);
  absl::Status Planar(const Sample& sample, std::string* detail);
  absl::Status BadInput(const Sample& sample, std::string* detail);
  absl::Status Concurrency(std::string* detail);
  absl::Status CrashRecovery(const Sample& sample, std::string* detail);
  absl::Status Shutdown(std::string* detail);

  absl::StatusOr<std::unique_ptr<VideoDecoder>> Open(const std::string& path,
                                                     SeekMode mode = SeekMode::kExact,
                                                     OutputFormat format = OutputFormat::kRgb24);
  absl::StatusOr<BackendStatus> Status() const;
  // Checks `frame` against frame `index` of `sample`: size, pts, duration
  // and pixels (exactly, or at the declared PSNR).
  absl::Status Compare(const Frame& frame, const Sample& sample, int64_t index, absl::string_view what) const;
  double Seconds(int64_t pts) const { return static_cast<double>(pts) * time_base_; }

  ConformanceTarget target_;
  ConformanceOptions options_;
  ConformanceReport report_;
  std::unique_ptr<Host> host_;
  std::string scratch_;
  bool own_scratch_ = false;
  std::string device_;
  BackendManifest manifest_;
  bool exact_ = true;
  double min_psnr_db_ = 0;
  bool ready_ = false;  // the handshake passed
  double time_base_ = 0;  // of the samples' stream, from the backend's metadata
  std::vector<Sample> samples_;
  std::map<int, std::string> descriptors_before_;
};

int CountIf(const std::vector<CheckResult>& checks, bool passed) {
  return static_cast<int>(std::count_if(checks.begin(), checks.end(),
                                        [passed](const CheckResult& c) { return c.passed == passed; }));
}

}  // namespace

int ConformanceReport::passed() const { return CountIf(checks, true); }
int ConformanceReport::failed() const { return CountIf(checks, false); }

namespace {

void Suite::Check(const std::string& name, const std::function<absl::Status(std::string* detail)>& body) {
  CheckResult result;
  result.name = name;
  const auto start = Clock::now();
  absl::Status status = body(&result.detail);
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.passed = status.ok();
  if (!status.ok()) result.detail = std::string(status.message());
  if (options_.on_check) options_.on_check(result);
  report_.checks.push_back(std::move(result));
}

void Suite::Skip(const std::string& name, const std::string& why) {
  Check(name, [&](std::string*) { return absl::FailedPreconditionError(absl::StrCat("not run: ", why)); });
}

absl::StatusOr<BackendStatus> Suite::Status() const {
  for (BackendStatus& s : host_->Backends()) {
    if (s.name == report_.backend) return s;
  }
  return absl::NotFoundError(absl::StrCat("backend '", report_.backend, "' is no longer registered"));
}

absl::StatusOr<std::unique_ptr<VideoDecoder>> Suite::Open(const std::string& path, SeekMode mode,
                                                          OutputFormat format) {
  DecoderOptions options;
  options.device = device_;
  options.seek_mode = mode;
  options.output_format = format;
  options.request_timeout = options_.timeout;
  options.open_timeout = options_.timeout;
  return host_->OpenDecoder(path, options);
}

absl::Status Suite::Compare(const Frame& frame, const Sample& sample, int64_t index, absl::string_view what) const {
  auto wrong = [&](auto&&... parts) {
    return absl::InternalError(absl::StrCat(what, ": frame ", index, " of ", sample.path, ": ", parts...));
  };
  if (frame.width() != sample.stream.width || frame.height() != sample.stream.height) {
    return wrong("size ", frame.width(), "x", frame.height(), ", ffprobe says ", sample.stream.width, "x",
                 sample.stream.height);
  }
  if (frame.index() != index) return wrong("the frame says it is index ", frame.index());
  if (frame.pts() != sample.pts[index]) return wrong("pts ", frame.pts(), ", ffprobe says ", sample.pts[index]);
  const double duration = Seconds(sample.durations[index]);
  if (std::abs(frame.duration_seconds() - duration) > 1e-6) {
    return wrong("duration ", frame.duration_seconds(), " s, ffprobe says ", duration, " s");
  }
  const std::string pixels = PackedRgb24(frame);
  const std::span<const uint8_t> reference = sample.Frame(index);
  if (pixels.size() != reference.size()) return wrong(pixels.size(), " bytes of RGB24, expected ", reference.size());
  const std::span<const uint8_t> got(reinterpret_cast<const uint8_t*>(pixels.data()), pixels.size());
  if (exact_) {
    auto [a, b] = std::mismatch(got.begin(), got.end(), reference.begin());
    if (a != got.end()) {
      const size_t at = static_cast<size_t>(a - got.begin()), row = size_t{sample.stream.width} * 3;
      return wrong("not bit-exact with ffmpeg: first difference at x=", (at % row) / 3, " y=", at / row,
                   " channel ", at % 3, " (", int{*a}, " vs ", int{*b}, "), PSNR ",
                   absl::StrFormat("%.2f", Psnr(got, reference)), " dB");
    }
  } else if (double psnr = Psnr(got, reference); psnr < min_psnr_db_) {
    return wrong(absl::StrFormat("PSNR %.2f dB against ffmpeg, below the declared %.2f dB", psnr, min_psnr_db_));
  }
  return absl::OkStatus();
}

absl::Status Suite::Prepare() {
  absl::StatusOr<std::unique_ptr<Host>> host = Host::Create(options_.host);
  if (!host.ok()) return host.status();
  host_ = *std::move(host);
  std::string name = target_.backend;
  if (!target_.manifest_path.empty()) {
    absl::StatusOr<BackendManifest> manifest = LoadManifest(target_.manifest_path);
    if (!manifest.ok()) return manifest.status();
    if (name.empty()) name = manifest->name;
    if (name != manifest->name) {
      return absl::InvalidArgumentError(
          absl::StrCat("manifest ", target_.manifest_path, " is backend '", manifest->name, "', not '", name, "'"));
    }
    char* real = realpath(target_.manifest_path.c_str(), nullptr);
    const std::string wanted = real != nullptr ? real : target_.manifest_path;
    free(real);
    bool registered = false;
    for (const BackendStatus& s : host_->Backends()) {
      char* theirs = realpath(s.manifest_path.c_str(), nullptr);
      registered |= s.name == name && theirs != nullptr && wanted == theirs;
      free(theirs);
    }
    if (!registered) {
      if (absl::Status s = host_->LoadBackend(target_.manifest_path); !s.ok()) return s;
    }
  }
  if (name.empty()) return absl::InvalidArgumentError("no backend named and no manifest given");
  report_.backend = name;
  absl::StatusOr<BackendStatus> status = Status();
  if (!status.ok()) {
    std::vector<std::string> known;
    for (const BackendStatus& s : host_->Backends()) known.push_back(s.name);
    return absl::NotFoundError(absl::StrCat("no backend named '", name, "' (installed: ", absl::StrJoin(known, ", "),
                                            ")"));
  }
  report_.manifest_path = status->manifest_path;
  if (status->devices.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("backend '", name, "' serves no device: ", status->diagnostic));
  }
  device_ = status->devices.front();
  absl::StatusOr<BackendManifest> manifest = LoadManifest(status->manifest_path);
  if (!manifest.ok()) return manifest.status();
  manifest_ = *std::move(manifest);

  scratch_ = options_.scratch_dir;
  if (scratch_.empty()) {
    const char* tmp = getenv("TMPDIR");
    std::string pattern = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/codecvisor-conformance-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("cannot create a scratch folder ", pattern, ": ", std::strerror(errno)));
    }
    scratch_ = pattern;
    own_scratch_ = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<ConformanceReport> Suite::Run() {
  descriptors_before_ = tools::OpenDescriptors();
  if (absl::Status s = Prepare(); !s.ok()) return s;
  absl::Cleanup remove_scratch = [this] {
    if (!own_scratch_) return;
    if (DIR* dir = opendir(scratch_.c_str())) {
      while (dirent* entry = readdir(dir)) {
        if (entry->d_name[0] != '.') unlink(absl::StrCat(scratch_, "/", entry->d_name).c_str());
      }
      closedir(dir);
    }
    rmdir(scratch_.c_str());
  };

  Check("handshake", [this](std::string* d) { return Handshake(d); });
  if (ready_) {
    Check("sandbox", [this](std::string* d) { return SandboxEngaged(d); });
  } else {
    Skip("sandbox", "the backend did not start");
  }
  for (const std::string& codec : manifest_.conformance.codecs) {
    absl::StatusOr<Sample> sample = MakeSample(codec, scratch_);
    const char* kinds[] = {"metadata", "frames", "access", "approximate", "planar"};
    std::string why = !ready_ ? "the backend did not start"
                              : (!sample.ok() ? absl::StrCat("no ", codec, " sample: ", sample.status().message()) : "");
    if (!why.empty()) {
      for (const char* kind : kinds) Skip(absl::StrCat(kind, "_", codec), why);
      continue;
    }
    samples_.push_back(*std::move(sample));
    const Sample& s = samples_.back();
    Check(absl::StrCat("metadata_", codec), [&](std::string* d) { return Metadata(s, d); });
    Check(absl::StrCat("frames_", codec), [&](std::string* d) { return Sequential(s, d); });
    Check(absl::StrCat("access_", codec), [&](std::string* d) { return AccessMethods(s, d); });
    Check(absl::StrCat("approximate_", codec), [&](std::string* d) { return Approximate(s, d); });
    Check(absl::StrCat("planar_", codec), [&](std::string* d) { return Planar(s, d); });
  }
  if (samples_.empty()) {
    for (const char* name : {"bad_input", "concurrency", "crash_recovery"}) Skip(name, "no sample video decoded");
  } else {
    Check("bad_input", [this](std::string* d) { return BadInput(samples_.front(), d); });
    Check("concurrency", [this](std::string* d) { return Concurrency(d); });
    Check("crash_recovery", [this](std::string* d) { return CrashRecovery(samples_.front(), d); });
  }
  Check("shutdown", [this](std::string* d) { return Shutdown(d); });
  return report_;
}

absl::Status Suite::Handshake(std::string* detail) {
  const auto start = Clock::now();
  if (absl::Status s = host_->StartBackend(report_.backend, options_.timeout); !s.ok()) return s;
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  absl::StatusOr<BackendStatus> status = Status();
  if (!status.ok()) return status.status();
  if (status->state != "ready" || status->pid <= 0) {
    return absl::InternalError(absl::StrCat("started, but state is ", status->state, " (pid ", status->pid, ")"));
  }
  if (!status->hello.has_value()) return absl::InternalError("started, but no handshake is recorded");
  const ipc::HelloReply& hello = *status->hello;
  report_.backend_version = hello.backend_version;
  if (hello.backend_name != report_.backend) {
    return absl::InternalError(absl::StrCat("the library calls itself '", hello.backend_name, "'"));
  }
  for (const std::string& device : manifest_.devices) {
    if (std::find(hello.devices.begin(), hello.devices.end(), device) == hello.devices.end()) {
      return absl::InternalError(absl::StrCat("the handshake does not list device '", device, "'"));
    }
  }
  const ipc::Capabilities& caps = hello.capabilities;
  auto has_mode = [&](SeekMode m) { return std::find(caps.seek_modes.begin(), caps.seek_modes.end(), m) != caps.seek_modes.end(); };
  auto has_format = [&](OutputFormat f) {
    return std::find(caps.output_formats.begin(), caps.output_formats.end(), f) != caps.output_formats.end();
  };
  if (!has_mode(SeekMode::kExact) || !has_mode(SeekMode::kApproximate)) {
    return absl::InternalError("capabilities: both seek modes (exact, approximate) are required");
  }
  if (!has_format(OutputFormat::kRgb24) || !has_format(OutputFormat::kRgb24Planar)) {
    return absl::InternalError("capabilities: RGB24 and planar RGB24 output are required");
  }
  exact_ = caps.exact_cpu_output;
  min_psnr_db_ = caps.psnr_threshold_db;
  if (!exact_ && !(min_psnr_db_ > 0)) {
    return absl::InternalError("capabilities: claims neither exact CPU output nor a PSNR threshold");
  }
  ready_ = true;
  *detail = absl::StrCat("pid ", status->pid, ", ready in ", absl::StrFormat("%.1f", ms), " ms, version '",
                         hello.backend_version, "', ",
                         exact_ ? std::string("bit-exact output") : absl::StrFormat("PSNR >= %.1f dB", min_psnr_db_),
                         caps.max_sessions == 0 ? std::string(", no session limit")
                                                : absl::StrCat(", up to ", caps.max_sessions, " sessions"));
  return absl::OkStatus();
}

absl::Status Suite::SandboxEngaged(std::string* detail) {
  absl::StatusOr<BackendStatus> status = Status();
  if (!status.ok()) return status.status();
  const std::string proc = absl::StrCat("/proc/", status->pid);
  const std::string text = ReadText(proc + "/status");
  if (text.empty()) return absl::InternalError(absl::StrCat("cannot read ", proc, "/status"));
  if (StatusField(text, "Seccomp") != "2") {
    return absl::InternalError(absl::StrCat("seccomp filter not engaged (Seccomp: ", StatusField(text, "Seccomp"), ")"));
  }
  if (StatusField(text, "NoNewPrivs") != "1") return absl::InternalError("no_new_privs not set");
  for (const char* ns : {"user", "pid", "net", "ipc"}) {
    const std::string theirs = Link(absl::StrCat(proc, "/ns/", ns));
    if (theirs.empty() || theirs == Link(absl::StrCat("/proc/self/ns/", ns))) {
      return absl::InternalError(absl::StrCat("the child shares the host's ", ns, " namespace"));
    }
  }
  const ipc::HelloReply& hello = *status->hello;
  if (!hello.sandbox_seccomp) return absl::InternalError("the runner reports no seccomp filter");
  if (hello.sandbox_landlock_abi == 0) return absl::InternalError("the runner reports Landlock not applied");
  *detail = absl::StrCat("seccomp filter, no_new_privs, own user/pid/net/ipc namespaces, Landlock ABI ",
                         hello.sandbox_landlock_abi, "; ", status->sandbox);
  return absl::OkStatus();
}

absl::Status Suite::Metadata(const Sample& sample, std::string* detail) {
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(sample.path);
  if (!decoder.ok()) return decoder.status();
  const StreamMetadata& m = (*decoder)->metadata();
  if (m.time_base.num <= 0 || m.time_base.den <= 0) {
    return absl::InternalError(absl::StrCat("time base ", m.time_base.num, "/", m.time_base.den));
  }
  time_base_ = static_cast<double>(m.time_base.num) / static_cast<double>(m.time_base.den);
  auto wrong = [&](auto&&... parts) {
    return absl::InternalError(absl::StrCat(sample.path, ": ", parts...));
  };
  if (m.codec != sample.stream.codec) return wrong("codec '", m.codec, "', ffprobe says '", sample.stream.codec, "'");
  if (m.width != sample.stream.width || m.height != sample.stream.height) {
    return wrong("size ", m.width, "x", m.height, ", ffprobe says ", sample.stream.width, "x", sample.stream.height);
  }
  if (m.num_frames_from_scan != sample.num_frames()) {
    return wrong("num_frames_from_scan ", m.num_frames_from_scan, ", ffprobe counts ", sample.num_frames());
  }
  if (std::abs(m.average_fps - sample.stream.average_fps) > 1e-3 * sample.stream.average_fps) {
    return wrong("average_fps ", m.average_fps, ", ffprobe says ", sample.stream.average_fps);
  }
  const double begin = Seconds(sample.pts.front());
  const double end = Seconds(sample.pts.back() + sample.durations.back());
  if (std::abs(m.begin_stream_seconds - begin) > 1e-6) {
    return wrong("begin_stream_seconds ", m.begin_stream_seconds, ", ffprobe's first frame is at ", begin);
  }
  if (std::abs(m.end_stream_seconds - end) > 1e-6) {
    return wrong("end_stream_seconds ", m.end_stream_seconds, ", ffprobe's last frame ends at ", end);
  }
  if (!(m.duration_seconds > 0) || m.pixel_format.empty()) {
    return wrong("duration_seconds ", m.duration_seconds, ", pixel_format '", m.pixel_format, "'");
  }
  *detail = absl::StrCat(m.codec, " ", m.width, "x", m.height, " ", m.pixel_format, ", ", m.num_frames_from_scan,
                         " frames at ", m.average_fps, " fps, [", m.begin_stream_seconds, ", ", m.end_stream_seconds,
                         ") s");
  return absl::OkStatus();
}

absl::Status Suite::Sequential(const Sample& sample, std::string* detail) {
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(sample.path);
  if (!decoder.ok()) return decoder.status();
  int64_t next = 0;
  absl::Status status = (*decoder)->ForEachFrame(
      {ipc::IndexRange{0, sample.num_frames(), 1}}, [&](Frame frame) -> absl::Status {
        if (next >= sample.num_frames()) return absl::InternalError("more frames than requested");
        return Compare(frame, sample, next++, "every frame in order");
      });
  if (!status.ok()) return status;
  if (next != sample.num_frames()) {
    return absl::InternalError(absl::StrCat(next, " frames delivered of ", sample.num_frames()));
  }
  *detail = absl::StrCat(next, " frames, ", exact_ ? "bit-exact with ffmpeg" : "within the declared PSNR",
                         ", pts and durations as ffprobe");
  return absl::OkStatus();
}

// Runs one access method and checks that it returned exactly the frames at
// `expected` indices.
template <typename Call>
absl::Status ExpectFrames(absl::string_view what, Call call, const std::vector<int64_t>& expected,
                          const std::function<absl::Status(const Frame&, int64_t, absl::string_view)>& compare) {
  absl::StatusOr<std::vector<Frame>> frames = call();
  if (!frames.ok()) return absl::Status(frames.status().code(), absl::StrCat(what, ": ", frames.status().message()));
  if (frames->size() != expected.size()) {
    return absl::InternalError(absl::StrCat(what, ": ", frames->size(), " frames, expected ", expected.size(),
                                            " (indices ", absl::StrJoin(expected, ","), ")"));
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    if (absl::Status s = compare((*frames)[i], expected[i], what); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Suite::AccessMethods(const Sample& sample, std::string* detail) {
  absl::StatusOr<std::unique_ptr<VideoDecoder>> opened = Open(sample.path);
  if (!opened.ok()) return opened.status();
  VideoDecoder& decoder = **opened;
  const int64_t n = sample.num_frames();
  auto compare = [&](const Frame& f, int64_t index, absl::string_view what) { return Compare(f, sample, index, what); };
  auto single = [](absl::StatusOr<Frame> frame) -> absl::StatusOr<std::vector<Frame>> {
    if (!frame.ok()) return frame.status();
    std::vector<Frame> out;
    out.push_back(*std::move(frame));
    return out;
  };
  // A time inside frame k's display interval, and the start of frame k.
  auto inside = [&](int64_t k) { return Seconds(sample.pts[k]) + 0.5 * Seconds(sample.durations[k]); };
  auto start_of = [&](int64_t k) { return Seconds(sample.pts[k]); };

  const std::vector<int64_t> scattered = {n - 1, 0, 17, 17, 5, n / 2};
  const std::vector<double> times = {inside(20), inside(3), inside(20), start_of(11)};
  struct Case {
    std::string what;
    std::function<absl::StatusOr<std::vector<Frame>>()> call;
    std::vector<int64_t> expected;
  };
  const std::vector<Case> cases = {
      {"get_frame_at(7)", [&] { return single(decoder.GetFrameAt(7)); }, {7}},
      {"get_frame_at(-1)", [&] { return single(decoder.GetFrameAt(-1)); }, {n - 1}},
      {absl::StrCat("get_frames_at(", absl::StrJoin(scattered, ","), ")"),
       [&] { return decoder.GetFramesAt(scattered); }, scattered},
      {absl::StrCat("get_frames_in_range(2, ", n, ", 5)"), [&] { return decoder.GetFramesInRange(2, n, 5); },
       [&] {
         std::vector<int64_t> v;
         for (int64_t i = 2; i < n; i += 5) v.push_back(i);
         return v;
       }()},
      {"get_frame_played_at(inside frame 13)", [&] { return single(decoder.GetFramePlayedAt(inside(13))); }, {13}},
      {"get_frames_played_at(frames 20, 3, 20, start of 11)", [&] { return decoder.GetFramesPlayedAt(times); },
       {20, 3, 20, 11}},
      {"get_frames_played_in_range(inside frame 3, start of frame 9)",
       [&] { return decoder.GetFramesPlayedInRange(inside(3), start_of(9)); }, {3, 4, 5, 6, 7, 8}},
      {"get_frames_played_in_range(start of frame 30, end)",
       [&] { return decoder.GetFramesPlayedInRange(start_of(30), Seconds(sample.pts[n - 1] + sample.durations[n - 1])); },
       [&] {
         std::vector<int64_t> v;
         for (int64_t i = 30; i < n; ++i) v.push_back(i);
         return v;
       }()},
  };
  for (const Case& c : cases) {
    if (absl::Status s = ExpectFrames(c.what, c.call, c.expected, compare); !s.ok()) return s;
  }
  *detail = absl::StrCat(cases.size(), " calls: frame at index (and -1), at indices, in a range, played at a time, "
                         "at times, in a time range");
  return absl::OkStatus();
}

absl::Status Suite::Approximate(const Sample& sample, std::string* detail) {
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(sample.path, SeekMode::kApproximate);
  if (!decoder.ok()) return decoder.status();
  const int64_t n = sample.num_frames();
  const std::vector<int64_t> indices = {n - 1, 0, 13, 13, 25, 1};
  absl::StatusOr<std::vector<Frame>> frames = (*decoder)->GetFramesAt(indices);
  if (!frames.ok()) return frames.status();
  if (frames->size() != indices.size()) return absl::InternalError(absl::StrCat(frames->size(), " frames returned"));
  for (size_t i = 0; i < indices.size(); ++i) {
    if (absl::Status s = Compare((*frames)[i], sample, indices[i], "approximate seek"); !s.ok()) return s;
  }
  const double t = Seconds(sample.pts[22]) + 0.5 * Seconds(sample.durations[22]);
  absl::StatusOr<Frame> at = (*decoder)->GetFramePlayedAt(t);
  if (!at.ok()) return at.status();
  if (absl::Status s = Compare(*at, sample, 22, "approximate seek, played at a time"); !s.ok()) return s;
  *detail = absl::StrCat("indices ", absl::StrJoin(indices, ","), " and a time, from header metadata");
  return absl::OkStatus();
}

absl::Status Suite::Planar(const Sample& sample, std::string* detail) {
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(sample.path, SeekMode::kExact, OutputFormat::kRgb24Planar);
  if (!decoder.ok()) return decoder.status();
  const int64_t index = sample.num_frames() / 3;
  absl::StatusOr<Frame> frame = (*decoder)->GetFrameAt(index);
  if (!frame.ok()) return frame.status();
  const uint32_t w = sample.stream.width, h = sample.stream.height;
  if (frame->num_planes() != 3 || frame->width() != w || frame->height() != h) {
    return absl::InternalError(absl::StrCat("planar frame ", frame->width(), "x", frame->height(), " with ",
                                            frame->num_planes(), " planes; expected 3 planes of ", w, "x", h));
  }
  // Interleave the planes back and compare as RGB24.
  std::vector<uint8_t> interleaved(size_t{w} * h * 3);
  for (size_t c = 0; c < 3; ++c) {
    std::span<const uint8_t> plane = frame->plane(c);
    for (uint32_t y = 0; y < h; ++y) {
      for (uint32_t x = 0; x < w; ++x) {
        const size_t at = size_t{y} * frame->stride(c) + x;
        if (at >= plane.size()) return absl::InternalError(absl::StrCat("plane ", c, " is shorter than its rows"));
        interleaved[(size_t{y} * w + x) * 3 + c] = plane[at];
      }
    }
  }
  std::span<const uint8_t> reference = sample.Frame(index);
  const double psnr = Psnr(interleaved, reference);
  if (exact_ ? !std::equal(interleaved.begin(), interleaved.end(), reference.begin()) : psnr < min_psnr_db_) {
    return absl::InternalError(absl::StrFormat("planar RGB of frame %d differs from ffmpeg's RGB24 (PSNR %.2f dB)",
                                               index, psnr));
  }
  *detail = absl::StrCat("frame ", index, " as three planes matches the RGB24 reference");
  return absl::OkStatus();
}

absl::Status Suite::BadInput(const Sample& sample, std::string* detail) {
  absl::StatusOr<BackendStatus> before = Status();
  if (!before.ok()) return before.status();
  std::vector<std::string> seen;

  // A file that is not a video: the open fails, naming the file.
  const std::string not_video = absl::StrCat(scratch_, "/not_a_video.mkv");
  std::string text;
  for (int i = 0; i < 200; ++i) absl::StrAppend(&text, "this is not a video, line ", i, "\n");
  if (absl::Status s = WriteBytes(not_video, text); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<VideoDecoder>> opened = Open(not_video);
  if (opened.ok()) return absl::InternalError(absl::StrCat(not_video, " (text) opened as a video"));
  if (!absl::StrContains(opened.status().message(), "not_a_video")) {
    return absl::InternalError(absl::StrCat("the error for a text file does not name it: ", opened.status().message()));
  }
  seen.push_back(absl::StrCat("text file: ", absl::StatusCodeToString(opened.status().code())));

  // A truncated file and one with corrupt packets: frames or clear errors.
  const std::string bytes = ReadText(sample.path);
  std::string corrupt = bytes;
  uint32_t noise = 0x9e3779b9u;
  for (size_t at = 2048; at + 48 < corrupt.size(); at += 1024) {
    for (size_t i = 0; i < 48; ++i) {
      noise = noise * 1664525u + 1013904223u;
      corrupt[at + i] = static_cast<char>(noise >> 24);
    }
  }
  const std::vector<std::pair<std::string, std::string>> damaged = {
      {"truncated.mkv", bytes.substr(0, bytes.size() / 3)}, {"corrupt.mkv", corrupt}};
  for (const auto& entry : damaged) {
    const std::string path = absl::StrCat(scratch_, "/", entry.first);
    if (absl::Status s = WriteBytes(path, entry.second); !s.ok()) return s;
    absl::StatusOr<std::unique_ptr<VideoDecoder>> damaged_decoder = Open(path);
    absl::Status outcome = damaged_decoder.status();
    int64_t frames = 0;
    if (damaged_decoder.ok()) {
      const StreamMetadata& m = (*damaged_decoder)->metadata();
      const int64_t count = m.num_frames_from_scan > 0 ? m.num_frames_from_scan : sample.num_frames();
      outcome = (*damaged_decoder)->ForEachFrame({ipc::IndexRange{0, count, 1}}, [&](Frame) {
        ++frames;
        return absl::OkStatus();
      });
    }
    if (!outcome.ok() && !absl::StrContains(outcome.message(), entry.first)) {
      return absl::InternalError(absl::StrCat("the error for ", path, " does not name the file: ", outcome.message()));
    }
    seen.push_back(absl::StrCat(entry.first, ": ", frames, " frames, ",
                                outcome.ok() ? std::string("OK") : absl::StatusCodeToString(outcome.code())));
  }

  // Out of range, then the same decoder still works.
  absl::StatusOr<std::unique_ptr<VideoDecoder>> good = Open(sample.path);
  if (!good.ok()) return good.status();
  const double after_end = Seconds(sample.pts.back() + sample.durations.back()) + 5;
  const double before_start = Seconds(sample.pts.front()) - 0.25;
  const std::vector<std::pair<std::string, absl::Status>> out_of_range = {
      {absl::StrCat("frame ", sample.num_frames()), (*good)->GetFrameAt(sample.num_frames()).status()},
      {absl::StrCat("time ", after_end, " s"), (*good)->GetFramePlayedAt(after_end).status()},
      {absl::StrCat("time ", before_start, " s"), (*good)->GetFramePlayedAt(before_start).status()},
  };
  for (const auto& [what, status] : out_of_range) {
    if (status.code() != absl::StatusCode::kOutOfRange) {
      return absl::InternalError(absl::StrCat(what, ": expected OUT_OF_RANGE, got ", status.ToString()));
    }
  }
  absl::StatusOr<Frame> frame = (*good)->GetFrameAt(1);
  if (!frame.ok()) return absl::InternalError(absl::StrCat("after the errors: ", frame.status().message()));
  if (absl::Status s = Compare(*frame, sample, 1, "after errors"); !s.ok()) return s;

  absl::StatusOr<BackendStatus> after = Status();
  if (!after.ok()) return after.status();
  if (after->restarts != before->restarts || after->pid != before->pid) {
    return absl::InternalError(absl::StrCat("the backend died on bad input (", after->last_exit,
                                            "); it must return an error instead"));
  }
  seen.push_back("out of range: OUT_OF_RANGE x3");
  *detail = absl::StrCat(absl::StrJoin(seen, "; "), "; backend still up (pid ", after->pid, ")");
  return absl::OkStatus();
}

absl::Status Suite::Concurrency(std::string* detail) {
  const int sessions = options_.concurrent_sessions;
  std::vector<absl::Status> results(static_cast<size_t>(sessions));
  std::vector<std::thread> threads;
  for (int t = 0; t < sessions; ++t) {
    threads.emplace_back([this, t, &results] {
      const Sample& sample = samples_[static_cast<size_t>(t) % samples_.size()];
      absl::Status& result = results[static_cast<size_t>(t)];
      absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(sample.path);
      if (!decoder.ok()) {
        result = decoder.status();
        return;
      }
      int64_t next = 0;
      result = (*decoder)->ForEachFrame({ipc::IndexRange{0, sample.num_frames(), 1}}, [&](Frame frame) {
        return Compare(frame, sample, next++, "concurrent sequential decode");
      });
      if (!result.ok()) return;
      const std::vector<int64_t> indices = {sample.num_frames() - 2, static_cast<int64_t>(t) % 7, 19};
      absl::StatusOr<std::vector<Frame>> frames = (*decoder)->GetFramesAt(indices);
      if (!frames.ok()) {
        result = frames.status();
        return;
      }
      for (size_t i = 0; i < indices.size() && result.ok(); ++i) {
        result = Compare((*frames)[i], sample, indices[i], "concurrent random access");
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < sessions; ++t) {
    if (!results[static_cast<size_t>(t)].ok()) {
      return absl::InternalError(absl::StrCat("session ", t, " of ", sessions, ": ", results[static_cast<size_t>(t)].message()));
    }
  }
  *detail = absl::StrCat(sessions, " sessions at once, each every frame in order then 3 at random, all correct");
  return absl::OkStatus();
}

absl::Status Suite::CrashRecovery(const Sample& sample, std::string* detail) {
  absl::StatusOr<BackendStatus> before = Status();
  if (!before.ok()) return before.status();
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(sample.path);
  if (!decoder.ok()) return decoder.status();
  const int64_t kill_after = sample.num_frames() / 3;
  pid_t killed = -1;
  int64_t next = 0;
  absl::Status status = (*decoder)->ForEachFrame(
      {ipc::IndexRange{0, sample.num_frames(), 1}}, [&](Frame frame) -> absl::Status {
        if (absl::Status s = Compare(frame, sample, next++, "re-issued request"); !s.ok()) return s;
        if (next == kill_after) {
          absl::StatusOr<BackendStatus> now = Status();
          if (!now.ok()) return now.status();
          killed = now->pid;
          if (killed <= 0 || kill(killed, SIGKILL) != 0) {
            return absl::InternalError(absl::StrCat("cannot kill the backend (pid ", killed, ")"));
          }
        }
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  if (next != sample.num_frames()) {
    return absl::InternalError(absl::StrCat(next, " frames after the kill, expected ", sample.num_frames()));
  }
  absl::StatusOr<BackendStatus> after = Status();
  if (!after.ok()) return after.status();
  if ((*decoder)->retries() < 1 || after->restarts <= before->restarts || after->pid == killed) {
    return absl::InternalError(absl::StrCat("the kill of pid ", killed, " went unnoticed: ", (*decoder)->retries(),
                                            " retries, ", after->restarts - before->restarts, " restarts, pid now ",
                                            after->pid));
  }
  *detail = absl::StrCat("killed pid ", killed, " (SIGKILL) after frame ", kill_after - 1, "; all ", next,
                         " frames correct after ", (*decoder)->retries(), " re-issue(s), new pid ", after->pid);
  return absl::OkStatus();
}

absl::Status Suite::Shutdown(std::string* detail) {
  // Every decoder of the suite is closed by now: the backend has no session.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  for (;;) {
    absl::StatusOr<BackendStatus> status = Status();
    if (!status.ok()) return status.status();
    if (status->sessions == 0) break;
    if (Clock::now() > deadline) {
      return absl::InternalError(absl::StrCat(status->sessions, " sessions still open after every decoder closed"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::vector<pid_t> children = tools::ChildProcesses();
  const auto start = Clock::now();
  host_.reset();
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (std::vector<pid_t> left = tools::ChildProcesses(); !left.empty()) {
    return absl::InternalError(absl::StrCat("child processes left after the host was destroyed: ",
                                            absl::StrJoin(left, ", ")));
  }
  const std::vector<std::string> leaked = tools::NewDescriptors(descriptors_before_, tools::OpenDescriptors());
  if (!leaked.empty()) {
    return absl::InternalError(absl::StrCat("descriptors left open: ", absl::StrJoin(leaked, ", ")));
  }
  *detail = absl::StrCat("host destroyed in ", absl::StrFormat("%.1f", ms), " ms; ", children.size(),
                         " child process(es) gone, no descriptor left");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ConformanceReport> RunConformance(const ConformanceTarget& target, ConformanceOptions options) {
  Suite suite(target, std::move(options));
  return suite.Run();
}

}  // namespace codecvisor::conformance
