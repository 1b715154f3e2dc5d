// File: core/manifest.h
//
// A backend's manifest: the TOML file that says what a backend is and where
// its library lives, the analogue of a Python entry point. Reading one runs
// no plugin code: it is only parsed and checked. Thread-safe (pure).

#ifndef CODECVISOR_CORE_MANIFEST_H_
#define CODECVISOR_CORE_MANIFEST_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/restart_policy.h"

namespace codecvisor {

// Manifests larger than this are rejected before parsing: a manifest is a
// few hundred bytes, and the parser should not be handed megabytes.
inline constexpr size_t kMaxManifestBytes = 64 << 10;

// [sandbox]: what a backend may touch beyond the strict default, and its
// limits. The defaults are the cpu backend's policy: no extra path, no
// device, no network ever (a manifest cannot ask for it).
struct SandboxPolicy {
  std::vector<std::string> read_paths;  // read-only files or folders
  std::vector<std::string> devices;     // device nodes opened read-write, e.g. /dev/nvidia0
  uint64_t memory_mb = 8192;            // address space
  uint64_t cpu_seconds = 86400;         // CPU time of one child
  // Descriptors (RLIMIT_NOFILE; the host's own hard limit, if lower). Each
  // open decoder holds about three in its backend, so this bounds how many
  // a process may have open at once on one backend.
  uint64_t open_files = 65536;
  // The least a manifest may set: the runner's own descriptors (its
  // channel, libraries, sandbox set-up), about 10, and room for two
  // decoders. Below
  // it the backend failed to start with messages about Landlock or the
  // loader that never named open_files.
  static constexpr int64_t kMinOpenFiles = 16;
  // Processes of the sandbox uid, threads included. The kernel counts them
  // per uid, so every backend running as nobody shares this budget; seccomp
  // already forbids new processes, this bounds threads.
  uint64_t threads = 4096;
  // Run with whatever mechanisms the kernel offers, warning loudly, instead
  // of refusing to start when one is missing.
  bool allow_degraded = false;
};

// The codecs the conformance suite's sample generator (tools/conformance)
// can encode: the one list of them.
inline constexpr const char* kConformanceSampleCodecs[] = {"h264", "hevc", "vp9", "av1", "mpeg4"};

// [conformance]: the samples the conformance suite (tools/conformance)
// checks the backend on: videos it generates in `codecs`, and the vendor's
// own files in `samples`. Whether output must be bit-exact or within a PSNR
// is the backend's own claim, in its capabilities (codecvisor_backend.h).
struct ConformanceClaims {
  // Of kConformanceSampleCodecs; {"h264"} when the table names neither key,
  // empty when it names only `samples` (or has a problem).
  std::vector<std::string> codecs = {"h264"};
  std::vector<std::string> samples;  // absolute: resolved against the manifest's folder
  // What is wrong with the table, if anything (then it claims nothing).
  // The backend loads anyway; the conformance suite refuses the manifest.
  std::string problem;
};

struct BackendManifest {
  std::string path;                 // the manifest file itself
  std::string name;                 // [a-z0-9_-]{1,32}
  std::vector<std::string> devices; // device names served, e.g. {"cpu"}
  std::string library;              // absolute: resolved against the manifest's folder
  std::string entry = "codecvisor_backend_v1";
  int64_t abi_version = 1;
  std::string config;               // the [config] table as "key=value" lines
  // [restart]: max_restarts, window_seconds, backoff_initial_ms,
  // backoff_max_ms override RestartLimits' defaults; warm_spare keeps one
  // initialised child ready for failover.
  RestartLimits restart;
  bool warm_spare = false;
  // [restart] start_timeout_seconds (1 to 120): how long one start
  // (sandboxing, loading the library, create()) may take, for a plugin
  // whose device initialises slowly; unset, the host's
  // (SupervisorOptions::spawn_timeout). An open waits for a start and its
  // retry, so at most 120 s keeps that wait within about four minutes.
  std::optional<std::chrono::seconds> start_timeout;
  // [restart] close_timeout_seconds (1 to 3600, default 60): how long the
  // plugin's close_session of a session may run. Nobody waits for a close,
  // so one that never returns would keep its thread for the life of the
  // process; past this the backend ends and is restarted as after a crash.
  std::chrono::seconds close_timeout{60};
  SandboxPolicy sandbox;
  ConformanceClaims conformance;
  // Keys of the manifest's own tables this version does not know (a typo,
  // or a later version's key), one line each; the manifest loads anyway.
  std::vector<std::string> warnings;
};

// Parses `text` as the manifest at `path` (used for messages and to resolve
// a relative library path). kInvalidArgument names the file, the key and
// the problem: "acme.toml: key 'devices': expected an array of strings".
[[nodiscard]] absl::StatusOr<BackendManifest> ParseManifest(absl::string_view text,
                                                            absl::string_view path);

// Reads and parses the manifest file at `path`, made absolute first (so
// is a library path relative to it). Only a regular file is read: a FIFO,
// a folder or an unreadable file is kNotFound ("cannot be read (why)"),
// and the open never blocks.
[[nodiscard]] absl::StatusOr<BackendManifest> LoadManifest(absl::string_view path);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_MANIFEST_H_
