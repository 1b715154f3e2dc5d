// File: codecvisor/host.h
//
// codecvisor::Host: the entry point. Creating one discovers the installed
// backends (the built-in FFmpeg "cpu" one always; vendors' from
// CODECVISOR_BACKEND_PATH and the install prefix, unless
// CODECVISOR_DEVICE_BACKEND_AUTOLOAD=0) by reading their manifests only: no
// backend code ever runs in the calling process. Each backend runs as a
// sandboxed child process, started on first use and restarted if it dies.
// A broken plugin never breaks Create(): it is listed as failed, and only a
// decoder asking for its device gets its diagnostic.
//
// Thread-safety: every method may be called from any thread. Destroying the
// Host stops its backends' processes within a bounded time; decoders that
// outlive it fail with kUnavailable and nothing worse.
//
// Fork: a Host belongs to the process that created it. A child forked from
// it (e.g. a DataLoader worker) must create its own Host. In the child, the
// inherited Host, its decoders and their frames still on arena slots are
// the parent's: every call that would reach a backend (OpenDecoder*,
// LoadBackend, ResetBackend, StartBackend, a decoder's requests) fails
// with kFailedPrecondition, Backends() and warnings() return nothing (the
// parent's threads may have held their locks at the fork), and
// destroying them (returning from main) leaves the parent's threads,
// channels and backends alone; Frame::Detach there copies the pixels.

#ifndef CODECVISOR_HOST_H_
#define CODECVISOR_HOST_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codecvisor/status.h"
#include "codecvisor/types.h"
#include "codecvisor/video_decoder.h"

namespace codecvisor {

struct HostOptions {
  // The device of decoders that name none. Empty: CODECVISOR_DEFAULT_DEVICE,
  // else "cpu".
  std::string default_device;
  // Folders searched for vendors' manifests (*.toml), before the install
  // prefix's. Unset: CODECVISOR_BACKEND_PATH (colon-separated).
  std::optional<std::vector<std::string>> backend_path;
  // false: only the built-in cpu backend. Unset: true when
  // CODECVISOR_DEVICE_BACKEND_AUTOLOAD is unset or 1 (as torch reads its
  // switch), else false.
  std::optional<bool> autoload;
  // Start every backend's process now rather than on first use.
  bool eager_spawn = false;
  // Keep a second process of each backend ready, so a crash costs a
  // failover rather than a cold start.
  bool warm_spare = false;
  // When not empty, a TOML file to which the host adds, as it is destroyed,
  // what it saw of its backends' failures (restarts, last exit,
  // quarantine), for later processes to show: the `codecvisor` commands and
  // the Python package use Host::DefaultHistoryFile().
  // A file there that is not such a history (one that does not begin with
  // the line the host writes first), or not a regular file, is left as it
  // is and nothing is recorded.
  std::string history_file;
};

// What `codecvisor backends` shows for one backend.
struct BackendInfo {
  std::string name;
  std::vector<std::string> devices;
  std::string manifest_path;
  // "discovered", "failed", "spawning", "ready", "restarting", "quarantined"
  std::string state;
  std::string diagnostic;  // why it failed or is quarantined
  pid_t pid = -1;          // of the running process, -1 if none
  double uptime_seconds = 0;
  int sessions = 0;        // open decoders
  // Idle decoders' sessions closed to make room in the backend's address
  // space for others, re-opened on their next call (latency, not failure).
  uint64_t parked = 0;
  uint64_t restarts = 0;
  std::string last_exit;       // "killed by signal 11 (SIGSEGV)"; empty if none
  std::string last_exit_time;  // ISO 8601, UTC
  bool warm_spare = false;     // a spare process is ready
  // Why no spare is kept any more (one used CPU with no decoder on it), or
  // empty.
  std::string spare_stopped;
  std::string sandbox;         // what confines the running process
  // From the running process' handshake (empty / zero until it has run).
  std::string version;
  bool exact_cpu_output = false;  // bit-exact with the cpu backend
  double psnr_threshold_db = 0;   // else at least this close to it
  std::vector<SeekMode> seek_modes;
  std::vector<OutputFormat> output_formats;
  uint32_t max_sessions = 0;
};

class Host {
 public:
  static Result<std::unique_ptr<Host>> Create(HostOptions options = {});
  ~Host();
  // The history file `codecvisor backends` shows:
  // $XDG_STATE_HOME/codecvisor/backends.toml, else
  // $HOME/.local/state/codecvisor/backends.toml; empty when neither
  // variable holds an absolute path, or the home folder does not exist (no
  // history is kept; the home itself is never made).
  static std::string DefaultHistoryFile();
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  // Opens the video at `path` on the device of `options` (the default device
  // if empty). The Host opens the file; the backend only gets its descriptor.
  Result<std::unique_ptr<VideoDecoder>> OpenDecoder(const std::string& path, DecoderOptions options = {});

  // Opens an encoded video held in memory; `label` names it in errors. The
  // bytes are copied once into a sealed memfd the backend reads like a file:
  // nothing is written to disk, and the backend cannot change them.
  Result<std::unique_ptr<VideoDecoder>> OpenDecoderFromBytes(std::string_view bytes, const std::string& label,
                                                             DecoderOptions options = {});

  // Registers the backend whose manifest is at `manifest_path`, as discovery
  // would (reading the manifest only). kInvalidArgument for a malformed
  // manifest, kAlreadyExists for a name already taken.
  Status LoadBackend(const std::string& manifest_path);
  // Lifts backend `name`'s quarantine or load failure.
  Status ResetBackend(const std::string& name);
  // Starts backend `name`'s process now and waits up to `timeout` until it
  // is ready (sandboxed, through its handshake). The timeout must be
  // positive (kInvalidArgument); one over about ten years is taken as that.
  Status StartBackend(const std::string& name, std::chrono::milliseconds timeout);

  std::vector<BackendInfo> Backends() const;
  // What the host found as it was made that works, but not as asked or
  // not fully: a device claimed by two manifests, a CODECVISOR_* value it
  // cannot read, backends running without a cgroup (this user may make
  // none). The CLI prints them; Python warns them.
  std::vector<std::string> warnings() const;
  const std::string& default_device() const;

 private:
  struct Impl;
  explicit Host(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace codecvisor

#endif  // CODECVISOR_HOST_H_
