#include "tools/conformance/conformance.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/common/process_census.h"
#include "tools/conformance/first_seek.h"
#include "tools/conformance/suite.h"

namespace codecvisor::conformance {

using ::codecvisor::internal::Host;
using ::codecvisor::internal::BackendStatus;
using ::codecvisor::internal::VideoDecoder;
using ::codecvisor::internal::DecoderOptions;
using ::codecvisor::internal::Frame;
using ::codecvisor::internal::SeekMode;
using ::codecvisor::internal::OutputFormat;
namespace {

int CountIf(const std::vector<CheckResult>& checks, const std::function<bool(const CheckResult&)>& which) {
  return static_cast<int>(std::count_if(checks.begin(), checks.end(), which));
}

}  // namespace

int ConformanceReport::passed() const {
  return CountIf(checks, [](const CheckResult& c) { return c.passed; });
}
int ConformanceReport::failed() const {
  return CountIf(checks, [](const CheckResult& c) { return !c.passed && !c.skipped; });
}
int ConformanceReport::skipped() const {
  return CountIf(checks, [](const CheckResult& c) { return c.skipped; });
}

namespace internal {
namespace {

// What the checks of a vendor's sample are called after: the file's name,
// made an identifier (GoogleTest case names in the Bazel macro).
std::string CheckSuffix(const std::string& path) {
  std::string suffix = path.substr(path.rfind('/') + 1);
  for (char& c : suffix) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return suffix;
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

}  // namespace

void Suite::Check(const std::string& name, const std::function<absl::Status(std::string* detail)>& body) {
  CheckResult result;
  result.name = name;
  // Two checks have quarantined the backend: the checks after them would
  // only meet the quarantine (or a third crash loop). These three need no
  // backend: two read what was captured, and the shutdown check the host's
  // teardown (what a crash loop left behind most of all).
  if (quarantines_.size() >= kMaxQuarantines && name != "quiet_output" && name != "frame_pool" && name != "shutdown") {
    result.detail = absl::StrCat("not run: the backend was quarantined during the '",
                                 absl::StrJoin(quarantines_, "' and '"), "' checks (they say why)");
    return Record(std::move(result));
  }
  // Only these two end the backend's process on purpose; in any other
  // check a restart is the backend dying or running out of something in
  // normal use, which the host's recovery would otherwise hide.
  const bool may_restart = name == "crash_recovery" || name == "shutdown";
  const absl::StatusOr<BackendStatus> before = Status();
  const auto start = Clock::now();
  absl::Status status = body(&result.detail);
  // (The shutdown check ends the host.)
  const absl::StatusOr<BackendStatus> after = host_ != nullptr ? Status() : absl::FailedPreconditionError("no host");
  if (status.ok() && !may_restart && after.ok() && before.ok() && after->restarts > before->restarts) {
    status = absl::InternalError(
        absl::StrCat("the backend was restarted ", after->restarts - before->restarts,
                     " time(s) during this check (last exit: ", after->last_exit.empty() ? "unknown" : after->last_exit,
                     "); it must not die or run out of resources in normal use",
                     after->last_exit_advice.empty() ? "" : absl::StrCat("; ", after->last_exit_advice)));
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.skipped = status.ok() && nothing_checked_;
  nothing_checked_ = false;
  result.passed = status.ok() && !result.skipped;
  if (!status.ok()) result.detail = std::string(status.message());
  // A quarantine lasts a minute or more: lifted at once, so that the
  // checks after this one say what they find of the backend, not that the
  // host gave up on it (advice a conformance run's user cannot take).
  if (after.ok() && after->state == "quarantined" && !(before.ok() && before->state == "quarantined")) {
    quarantines_.push_back(name);
    const bool lift = quarantines_.size() < kMaxQuarantines && host_->ResetBackend(report_.backend).ok();
    absl::StrAppend(&result.detail, result.detail.empty() ? "" : "; ", "the backend was quarantined during this check",
                    lift ? ", and the suite lifted the quarantine for the checks after it"
                         : ", for the second time: the checks after it that need the backend are not run");
  }
  Record(std::move(result));
}

void Suite::Record(CheckResult result) {
  if (options_.on_check) options_.on_check(result);
  report_.checks.push_back(std::move(result));
}

void Suite::NotRun(const std::string& name, const std::string& why) {
  Check(name, [&](std::string*) { return absl::FailedPreconditionError(absl::StrCat("not run: ", why)); });
}

absl::StatusOr<BackendStatus> Suite::Status() const {
  for (BackendStatus& s : host_->Backends()) {
    if (s.name == report_.backend) return s;
  }
  return absl::NotFoundError(absl::StrCat("backend '", report_.backend, "' is no longer registered"));
}

absl::StatusOr<BackendStatus> Suite::Running(absl::string_view look_at) {
  if (absl::Status s = host_->StartBackend(report_.backend, options_.timeout); !s.ok()) return s;
  absl::StatusOr<BackendStatus> backend = Status();
  if (!backend.ok()) return backend.status();
  if (backend->pid <= 0) {
    return absl::UnavailableError(absl::StrCat("the backend has no process to ", look_at, " (", backend->state,
                                               backend->diagnostic.empty() ? "" : ": ", backend->diagnostic, ")"));
  }
  return backend;
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

absl::Status Suite::Compare(const Frame& frame, const Sample& sample, int64_t index, absl::string_view what,
                            double* psnr, bool check_index) const {
  const std::string pixels = PackedRgb24(frame);
  return Compare(frame, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(pixels.data()), pixels.size()),
                 sample, index, what, psnr, check_index);
}

absl::Status Suite::CompareByPts(const Frame& frame, const Sample& sample, absl::string_view what) const {
  const auto at = std::find(sample.pts.begin(), sample.pts.end(), frame.pts());
  if (at == sample.pts.end()) {
    return absl::InternalError(absl::StrCat(what, ": frame ", frame.index(), " of ", sample.path, ": pts ", frame.pts(),
                                            ", where the reference has no frame"));
  }
  return Compare(frame, sample, at - sample.pts.begin(), what, nullptr, /*check_index=*/false);
}

absl::Status Suite::Compare(const Frame& frame, std::span<const uint8_t> got, const Sample& sample, int64_t index,
                            absl::string_view what, double* psnr, bool check_index) const {
  auto wrong = [&](auto&&... parts) {
    return absl::InternalError(absl::StrCat(what, ": frame ", index, " of ", sample.path, ": ", parts...));
  };
  if (frame.width() != sample.stream.width || frame.height() != sample.stream.height) {
    return wrong("size ", frame.width(), "x", frame.height(), ", the reference says ", sample.stream.width, "x",
                 sample.stream.height);
  }
  if (check_index && frame.index() != index) return wrong("the frame says it is index ", frame.index());
  if (frame.pts() != sample.pts[index]) return wrong("pts ", frame.pts(), ", the reference says ", sample.pts[index]);
  if (const double start = Seconds(sample, sample.pts[index]); !(std::abs(frame.pts_seconds() - start) <= 1e-6)) {
    return wrong("pts_seconds ", frame.pts_seconds(), ", but pts ", frame.pts(), " is ", start, " s");
  }
  const double duration = Seconds(sample, sample.durations[index]);
  if (std::abs(frame.duration_seconds() - duration) > 1e-6) {
    return wrong("duration ", frame.duration_seconds(), " s, the reference says ", duration, " s");
  }
  const std::span<const uint8_t> reference = sample.Frame(index);
  if (got.size() != reference.size()) return wrong(got.size(), " bytes of RGB24, expected ", reference.size());
  const bool same = std::equal(got.begin(), got.end(), reference.begin());
  const double measured = same ? std::numeric_limits<double>::infinity() : Psnr(got, reference);
  if (psnr != nullptr) *psnr = measured;
  if (same || (!exact_ && measured >= min_psnr_db_)) return absl::OkStatus();
  const std::string where = Describe(Difference(got, reference, sample.stream.width, sample.stream.height));
  if (exact_) return wrong("not bit-exact with ", sample.reference, ": ", where);
  return wrong(absl::StrFormat("below the required %.2f dB against %s: ", min_psnr_db_, sample.reference), where);
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
                                            "); a plugin installed elsewhere is found by putting its manifest's folder "
                                            "on CODECVISOR_BACKEND_PATH, or give its manifest with --backend-manifest"));
  }
  report_.manifest_path = status->manifest_path;
  if (status->devices.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("backend '", name, "' serves no device: ", status->diagnostic));
  }
  device_ = status->devices.front();
  absl::StatusOr<BackendManifest> manifest = LoadManifest(status->manifest_path);
  if (!manifest.ok()) return manifest.status();
  // (With --sample, the table is not read.)
  if (!manifest->conformance.problem.empty() && options_.samples.empty()) {
    return absl::InvalidArgumentError(manifest->conformance.problem);
  }
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

void Suite::CheckSample(const std::string& suffix, absl::StatusOr<Sample> sample) {
  const char* kinds[] = {"metadata", "frames", "access", "approximate", "planar", "native"};
  std::string why = !ready_ ? "the backend did not start"
                            : (!sample.ok() ? absl::StrCat("no sample: ", sample.status().message()) : "");
  if (!why.empty()) {
    for (const char* kind : kinds) NotRun(absl::StrCat(kind, "_", suffix), why);
    return;
  }
  samples_.push_back(*std::move(sample));
  const Sample& s = samples_.back();
  Check(absl::StrCat("metadata_", suffix), [&](std::string* d) { return Metadata(s, d); });
  Check(absl::StrCat("frames_", suffix), [&](std::string* d) { return Sequential(s, d); });
  Check(absl::StrCat("access_", suffix), [&](std::string* d) { return AccessMethods(s, d); });
  Check(absl::StrCat("approximate_", suffix), [&](std::string* d) { return Approximate(s, d); });
  Check(absl::StrCat("planar_", suffix), [&](std::string* d) { return Planar(s, d); });
  Check(absl::StrCat("native_", suffix), [&](std::string* d) { return Native(s, d); });
}

void Suite::CheckSamples() {
  std::vector<SampleFile> files = options_.samples;
  if (files.empty()) {
    for (const std::string& codec : manifest_.conformance.codecs) CheckSample(codec, MakeSample(codec, scratch_));
    for (const std::string& path : manifest_.conformance.samples) files.push_back({.path = path, .reference = {}});
  }
  for (const SampleFile& file : files) CheckSample(CheckSuffix(file.path), LoadSample(file.path, file.reference));
}

void Suite::CheckFirstSeek() {
  const bool generated = options_.samples.empty() && !manifest_.conformance.codecs.empty();
  if (generated) {
    const std::string& codec = manifest_.conformance.codecs.front();
    const std::string name = absl::StrCat("first_seek_", codec);
    if (!ready_) return NotRun(name, "the backend did not start");
    absl::StatusOr<Sample> sample = MakeLongSample(codec, scratch_);
    if (!sample.ok()) return NotRun(name, absl::StrCat("no long sample: ", sample.status().message()));
    return Check(name, [&](std::string* d) { return FirstSeek(*sample, d); });
  }
  if (samples_.empty()) return NotRun("first_seek", "no sample video decoded");
  const Sample& sample = samples_.front();
  const std::string name = absl::StrCat("first_seek_", CheckSuffix(sample.path));
  absl::StatusOr<std::vector<PacketInfo>> packets = ProbePackets(sample.path);
  // A sample FFmpeg cannot read (the vendor's own format, checked against
  // the vendor's reference) has no packets ffprobe can list: where its key
  // frames are is unknown, and a codec's long sample says nothing of that
  // format.
  if (!packets.ok() && !sample.header.has_value()) {
    return Check(name, [&](std::string* d) {
      *d = absl::StrCat("nothing to check (", sample.path,
                        " is not a file FFmpeg reads, so where its key frames are is unknown)");
      nothing_checked_ = true;
      return absl::OkStatus();
    });
  }
  // A sample whose last frame is decoded from its first packet (a short
  // clip with one key frame) has nothing to seek past, which says nothing
  // about the backend: the check takes a long sample of a codec the
  // backend claims instead, or is skipped, saying there was nothing to check.
  if (packets.ok()) {
    absl::StatusOr<KeyFrameSpan> span = SpanBefore(*packets, sample.pts[sample.num_frames() - 1]);
    if (absl::IsFailedPrecondition(span.status())) {
      const std::string why = absl::StrCat(sample.path, ": ", span.status().message());
      absl::StatusOr<Sample> long_sample = manifest_.conformance.codecs.empty()
                                               ? absl::NotFoundError("the backend claims no codec")
                                               : MakeLongSample(manifest_.conformance.codecs.front(), scratch_);
      if (!long_sample.ok()) {
        return Check(name, [&](std::string* d) {
          *d = absl::StrCat("nothing to check (", why, "; no long sample: ", long_sample.status().message(), ")");
          nothing_checked_ = true;
          return absl::OkStatus();
        });
      }
      return Check(name, [&](std::string* d) {
        absl::Status s = FirstSeek(*long_sample, d);
        *d = absl::StrCat(*d, " (a long ", manifest_.conformance.codecs.front(), " sample: ", why, ")");
        return s;
      });
    }
  }
  Check(name, [&](std::string* d) { return FirstSeek(sample, d); });
}

absl::StatusOr<ConformanceReport> Suite::Run() {
  descriptors_before_ = tools::OpenDescriptors();
  if (absl::Status s = Prepare(); !s.ok()) return s;
  report_.warnings = host_->warnings();
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

  // From before the backend's first start, so that nothing it writes at
  // start-up is missed.
  output_ = OutputCapture::Start(report_.backend);
  Check("handshake", [this](std::string* d) { return Handshake(d); });
  if (ready_) {
    Check("sandbox", [this](std::string* d) { return SandboxEngaged(d); });
  } else {
    NotRun("sandbox", "the backend did not start");
  }
  CheckSamples();
  // The first generated sample again, remuxed into MP4 (the generator
  // writes Matroska, and most files are MP4); then rotation on it, remuxed
  // with a display matrix (a vendor's own files are checked as they are).
  if (options_.samples.empty() && !manifest_.conformance.codecs.empty() && !samples_.empty() &&
      samples_.front().codec == manifest_.conformance.codecs.front()) {
    CheckSample(absl::StrCat(samples_.front().codec, "_in_mp4"), MakeMp4Sample(samples_.front(), scratch_));
    const std::string name = absl::StrCat("rotation_", samples_.front().codec);
    absl::StatusOr<Sample> rotated = MakeRotatedSample(samples_.front(), scratch_);
    if (rotated.ok()) {
      Check(name, [&](std::string* d) { return Rotation(*rotated, d); });
    } else {
      NotRun(name, absl::StrCat("no rotated sample: ", rotated.status().message()));
    }
  }
  CheckFirstSeek();
  if (samples_.empty()) {
    for (const char* name :
         {"cancel", "bad_input", "concurrency", "session_leak", "session_threads", "crash_recovery"}) {
      NotRun(name, "no sample video decoded");
    }
  } else {
    Check("cancel", [this](std::string* d) { return Cancel(samples_.front(), d); });
    Check("bad_input", [this](std::string* d) { return BadInput(samples_.front(), d); });
    Check("concurrency", [this](std::string* d) { return Concurrency(d); });
    Check("session_leak", [this](std::string* d) { return SessionLeak(samples_.front(), d); });
    Check("session_threads", [this](std::string* d) { return SessionThreads(samples_.front(), d); });
    Check("crash_recovery", [this](std::string* d) { return CrashRecovery(samples_.front(), d); });
  }
  Check("quiet_output", [this](std::string* d) { return QuietOutput(d); });
  Check("frame_pool", [this](std::string* d) { return FramePool(d); });
  Check("shutdown", [this](std::string* d) { return Shutdown(d); });
  return report_;
}

}  // namespace internal

absl::StatusOr<ConformanceReport> RunConformance(const ConformanceTarget& target, ConformanceOptions options) {
  internal::Suite suite(target, std::move(options));
  return suite.Run();
}

}  // namespace codecvisor::conformance
