// File: tools/conformance/conformance.h
//
// The backend conformance suite: one set of integration checks that any
// backend, first-party or vendor, must pass, run through the real host,
// runner, channel and sandbox. It checks the handshake and capabilities,
// that the sandbox is engaged, metadata against ffprobe, frames against the
// ffmpeg CLI (bit for bit when the backend claims exact CPU output, else
// against the PSNR it declares), every access method and both seek modes,
// that approximate mode's first request for a late frame seeks rather
// than decoding from the start (counted in bytes the backend reads, not
// in time: first_seek.h), errors on bad input, 8 concurrent sessions, recovery from a backend
// killed in the middle of a request, and a clean shutdown (no child, no
// descriptor left). The samples are videos made with the ffmpeg CLI in the
// codecs the backend's manifest lists under [conformance] `codecs`, plus
// the vendor's own files (`samples` there, or ConformanceOptions::samples),
// checked against ffmpeg's RGB24 or a reference the vendor gives.
//
// Used by `codecvisor conformance` and by the backend_conformance_test
// Bazel macro (tests/conformance.bzl). Not thread-safe: one run at a time
// per process (the shutdown check counts the process's children and
// descriptors).

#ifndef CODECVISOR_TOOLS_CONFORMANCE_CONFORMANCE_H_
#define CODECVISOR_TOOLS_CONFORMANCE_CONFORMANCE_H_

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/host.h"
#include "tools/conformance/samples.h"

namespace codecvisor::conformance {

using ::codecvisor::internal::HostOptions;

struct ConformanceTarget {
  // The backend to check, by name. Empty: the manifest's name.
  std::string backend;
  // A manifest to register first (Host::LoadBackend), unless the host
  // already discovered that backend from this very file.
  std::string manifest_path;
};

struct CheckResult {
  std::string name;    // e.g. "handshake", "frames_av1"
  bool passed = false;
  // Nothing here to check (the run lets backends log; no sample with key
  // frames to seek past): neither passed nor failed; `detail` says why.
  bool skipped = false;
  std::string detail;  // why it failed or was skipped; what was seen when it passed
  double seconds = 0;
};

// One of the vendor's own sample files. Without `reference.frames`, the
// suite computes the reference with the ffmpeg CLI; otherwise it is the
// vendor's (samples.h, VendorReference).
struct SampleFile {
  std::string path;
  VendorReference reference;
};

// The least PSNR a backend may declare, unless the run lowers it.
inline constexpr double kDefaultMinPsnrFloorDb = 30;

struct ConformanceOptions {
  HostOptions host;
  // The samples to check instead of the manifest's [conformance] codecs and
  // samples. Empty: the manifest's.
  std::vector<SampleFile> samples;
  // A declared PSNR below this fails the handshake check, and frames are
  // then held to this floor instead.
  double min_psnr_floor_db = kDefaultMinPsnrFloorDb;
  // Where the sample and bad-input videos go. Empty: a new folder under
  // $TMPDIR, removed afterwards.
  std::string scratch_dir;
  int concurrent_sessions = 8;
  // Bound on each wait for the backend (start, one request).
  std::chrono::milliseconds timeout{60'000};
  // Called after each check, e.g. to print progress.
  std::function<void(const CheckResult&)> on_check;
};

struct ConformanceReport {
  std::string backend;
  std::string manifest_path;
  std::string backend_version;
  // The host's warnings once the backend is loaded: a manifest key this
  // version does not know (a typo such as [conformence]), a device taken.
  std::vector<std::string> warnings;
  std::vector<CheckResult> checks;

  int passed() const;
  int failed() const;
  int skipped() const;
  bool ok() const { return failed() == 0 && passed() > 0; }
};

// Runs every check. A check that cannot run because an earlier one failed
// (no handshake, no sample) is reported failed, with the reason. Errors are
// for a run that could not start: an unknown backend, a manifest that does
// not load, no usable scratch folder.
[[nodiscard]] absl::StatusOr<ConformanceReport> RunConformance(const ConformanceTarget& target,
                                                               ConformanceOptions options);

}  // namespace codecvisor::conformance

#endif  // CODECVISOR_TOOLS_CONFORMANCE_CONFORMANCE_H_
