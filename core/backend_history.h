// File: core/backend_history.h
//
// What hosts saw of each backend's failures, kept in a small per-user file
// so that a later process (each `codecvisor` command is a host of its own)
// can show the last crash, the restarts and a quarantine that happened in
// an earlier one. A host adds what it saw when it is destroyed
// (HostOptions::history_file); `codecvisor backends` reads it, and
// `--reset NAME` clears a backend's record.
//
// The file is TOML, one table per backend name, of the manifest it was
// last loaded from (another manifest of that name starts it afresh):
//
//   [backend.faulty]
//   manifest = "/usr/lib/codecvisor/backends/faulty.toml"
//   restarts = 3                      # summed over the hosts that saw them
//   last_exit = "killed by signal 11 (SIGSEGV)"
//   last_exit_time = "2026-11-23T08:50:01Z"
//   quarantine = "backend 'faulty' (...) is quarantined after ..."   # the last host that quarantined it
//
// Writers take an exclusive flock on PATH.lock, read, change and write a
// temporary file renamed over PATH, so concurrent commands neither lose
// nor tear each other's records. A file that does not parse is replaced by
// the next write (its records are lost, nothing else is) when it is
// empty, zeroed, or begins with the line every history begins with; any
// other file (a path set by mistake) is never replaced, and neither is
// anything but a regular file. A writer gives up after 2 s if another
// holds the lock.

#ifndef CODECVISOR_CORE_BACKEND_HISTORY_H_
#define CODECVISOR_CORE_BACKEND_HISTORY_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace codecvisor {

struct BackendRecord {
  std::string manifest;
  uint64_t restarts = 0;
  std::string last_exit;       // DeathRecord::Describe() of the last death seen
  std::string last_exit_time;  // ISO 8601, UTC
  std::string quarantine;      // the diagnostic of the last host that quarantined it
  friend bool operator==(const BackendRecord&, const BackendRecord&) = default;
};

// By backend name.
using BackendHistory = std::map<std::string, BackendRecord>;

// What one host saw of one backend, as it is destroyed.
struct BackendSighting {
  std::string name;
  std::string manifest;
  std::string state;  // BackendStatus::state
  std::string diagnostic;
  uint64_t restarts = 0;
  std::string last_exit;
  std::string last_exit_time;
};

// Adds what one host saw: restarts add up, a last exit replaces the one
// recorded, a quarantine replaces the one recorded. Only erasing the record
// (`codecvisor backends --reset NAME`) forgets them. Backends the host never
// had trouble with are left as they were. A record is one manifest's: a
// backend of the same name from another manifest that had trouble starts
// the record afresh.
void AddSightings(const std::vector<BackendSighting>& seen, BackendHistory* history);

// Whether `record` is of the backend loaded from `manifest` (a record
// written before manifests were kept is taken to be).
bool SameManifest(const BackendRecord& record, const std::string& manifest);

[[nodiscard]] absl::StatusOr<BackendHistory> ParseBackendHistory(absl::string_view text, absl::string_view path);
std::string FormatBackendHistory(const BackendHistory& history);

// $XDG_STATE_HOME/codecvisor/backends.toml, else
// $HOME/.local/state/codecvisor/backends.toml where $HOME is a folder; ""
// if neither is set (or $HOME is missing, as a service account's is).
std::string DefaultBackendHistoryPath();

// Root writes the history only into its own folders: run with a user's
// HOME (`sudo -E`, a container given the user's home) it would make a
// ~/.local of root's that the user can then neither use nor remove. OK
// when the nearest folder of `folder` that exists (it, or one above it)
// belongs to `self`; else FailedPrecondition naming it.
[[nodiscard]] absl::Status CheckOwnFolders(std::string folder, uid_t self);

// The file's history; empty if it does not exist.
[[nodiscard]] absl::StatusOr<BackendHistory> ReadBackendHistory(const std::string& path);

// Applies `change` to the file's history under its lock (creating its
// folder, mode 0700, and the file, mode 0600, as needed).
[[nodiscard]] absl::Status UpdateBackendHistory(const std::string& path,
                                                absl::FunctionRef<void(BackendHistory*)> change);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_BACKEND_HISTORY_H_
