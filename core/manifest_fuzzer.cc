// Fuzzes manifest parsing (core/manifest.h): whatever bytes sit in a
// *.toml file on the backend search path, ParseManifest returns a manifest
// or an error, never crashes, and what it accepts obeys the documented
// rules. A violated rule traps, which libFuzzer reports as a finding.

#include <cstddef>
#include <cstdint>

#include "core/manifest.h"

namespace {

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  }
  return true;
}

void Require(bool rule) {
  if (!rule) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<codecvisor::BackendManifest> m = codecvisor::ParseManifest(text, "/plugins/fuzz.toml");
  if (!m.ok()) {
    Require(m.status().code() == absl::StatusCode::kInvalidArgument);
    Require(m.status().message().find("/plugins/fuzz.toml") != absl::string_view::npos);
    return 0;
  }
  Require(ValidName(m->name));
  Require(!m->devices.empty());
  for (const std::string& d : m->devices) Require(ValidName(d));
  Require(!m->library.empty() && m->library[0] == '/');
  Require(!m->entry.empty());
  for (const std::string& p : m->sandbox.read_paths) Require(!p.empty() && p[0] == '/');
  for (const std::string& p : m->sandbox.devices) Require(!p.empty() && p[0] == '/');
  Require(m->sandbox.memory_mb > 0 && m->sandbox.threads > 0 &&
          m->sandbox.open_files >= static_cast<uint64_t>(codecvisor::SandboxPolicy::kMinOpenFiles));
  // A table with a problem claims nothing (the suite refuses it).
  Require(!m->conformance.codecs.empty() || !m->conformance.samples.empty() || !m->conformance.problem.empty());
  for (const std::string& p : m->conformance.samples) Require(!p.empty() && p[0] == '/');
  Require(m->restart.max_restarts >= 0);
  return 0;
}
