#include "core/manifest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <string_view>
#include <system_error>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/sdk/codecvisor_backend.h"
#include "core/file_trust.h"
#include "core/read_path_policy.h"

namespace codecvisor {
namespace {

bool ValidName(absl::string_view s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  }
  return true;
}

// Whether `path` has a ".." component.
bool HasDotDot(absl::string_view path) {
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part == "..") return true;
  }
  return false;
}

bool IsSampleCodec(const std::string& codec) {
  for (const char* c : kConformanceSampleCodecs) {
    if (codec == c) return true;
  }
  return false;
}

std::string Folder(absl::string_view path) {
  size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? std::string(".") : std::string(path.substr(0, slash));
}

// Why a file of this mode is not read as a manifest.
const char* NotAFile(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder, not a file";
  if (S_ISFIFO(mode)) return "a FIFO, not a file";
  return "not a regular file";
}

// Adds to `warnings` one line per key of `table` not in `known`; returns
// those keys.
std::vector<std::string> WarnOfUnknownKeys(const toml::table& table, absl::string_view prefix,
                                           std::initializer_list<absl::string_view> known, absl::string_view path,
                                           std::vector<std::string>* warnings) {
  std::vector<std::string> unknown;
  for (const auto& entry : table) {
    const absl::string_view key(entry.first.str().data(), entry.first.str().size());
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    unknown.emplace_back(key);
    warnings->push_back(absl::StrCat("manifest ", path, ": key '", prefix, key, "' is unknown and ignored (",
                                     prefix.empty() ? "keys" : absl::StrCat("[", prefix.substr(0, prefix.size() - 1),
                                                                            "] keys"),
                                     ": ", absl::StrJoin(known, ", "), ")"));
  }
  return unknown;
}

absl::Status BadManifest(absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("manifest ", path, ": ", what));
}

// The [conformance] table (`node`, absent or not) into `claims`.
absl::Status ParseConformance(toml::node_view<toml::node> node, absl::string_view path, ConformanceClaims* claims) {
  auto bad = [&](absl::string_view what) { return BadManifest(path, what); };
  if (!node) return absl::OkStatus();
  const auto* conformance = node.as_table();
  if (conformance == nullptr) return bad("key 'conformance': not a table");
  const std::string sample_codecs = absl::StrJoin(kConformanceSampleCodecs, ", ");
  if (conformance->contains("samples") && !conformance->contains("codecs")) claims->codecs.clear();
  for (const auto& entry : *conformance) {
    const std::string k(entry.first.str());
    if (k != "codecs" && k != "samples")
      return bad(absl::StrCat("key 'conformance.", k, "': unknown (codecs, samples)"));
    const auto* array = entry.second.as_array();
    if (array == nullptr || array->empty())
      return bad(absl::StrCat("key 'conformance.", k, "': expected a non-empty array"));
    std::vector<std::string>& values = k == "codecs" ? claims->codecs : claims->samples;
    values.clear();
    for (const auto& value : *array) {
      const auto* str = value.as_string();
      if (str == nullptr || str->get().empty()) {
        return bad(absl::StrCat("key 'conformance.", k, "': expected an array of non-empty strings"));
      }
      if (k == "codecs" && !IsSampleCodec(str->get())) {
        return bad(absl::StrCat("key 'conformance.codecs': the sample generator cannot make '", str->get(),
                                "' (it makes ", sample_codecs,
                                "); name your own files with "
                                "[conformance] samples = [\"clip.ext\"] or run codecvisor conformance --sample FILE"));
      }
      const std::string& v = str->get();
      values.push_back(k == "samples" && v[0] != '/' ? absl::StrCat(Folder(path), "/", v) : v);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BackendManifest> ParseManifest(absl::string_view text, absl::string_view path) {
  auto bad = [&](absl::string_view what) { return BadManifest(path, what); };
  if (text.size() > kMaxManifestBytes) return bad(absl::StrCat("larger than ", kMaxManifestBytes, " bytes"));
  toml::table table;
  try {
    table = toml::parse(std::string_view(text.data(), text.size()), std::string_view(path.data(), path.size()));
  } catch (const toml::parse_error& e) {
    return bad(absl::StrCat("line ", e.source().begin.line, ": ", std::string(e.description())));
  }
  BackendManifest m;
  m.path = std::string(path);
  // A key this version does not know is ignored, so that a manifest
  // written for a later one still loads; but said, since it is more often
  // a typo ([conformence], max_restart) whose setting silently does not
  // apply.
  const std::vector<std::string> unknown = WarnOfUnknownKeys(
      table, "", {"name", "devices", "library", "entry", "abi_version", "restart", "sandbox", "conformance", "config"},
      path, &m.warnings);
  // A required key missing beside an unknown one ('libary'): most likely
  // its typo, so the error names both.
  auto missing = [&](absl::string_view what) {
    if (unknown.empty()) return bad(what);
    return bad(absl::StrCat(what, " (the manifest has ", unknown.size() == 1 ? "an unknown key '" : "unknown keys '",
                            absl::StrJoin(unknown, "', '"), "': a misspelling?)"));
  };

  const auto* name = table["name"].as_string();
  if (name == nullptr) return missing("key 'name': missing, or not a string");
  m.name = name->get();
  if (!ValidName(m.name, 32)) return bad(absl::StrCat("key 'name': '", m.name, "' is not [a-z0-9_-]{1,32}"));

  const auto* devices = table["devices"].as_array();
  if (devices == nullptr || devices->empty()) return missing("key 'devices': missing, or not a non-empty array");
  for (const auto& d : *devices) {
    const auto* s = d.as_string();
    if (s == nullptr || !ValidName(s->get(), 32)) {
      return bad("key 'devices': every device must be a string of [a-z0-9_-]{1,32}");
    }
    m.devices.push_back(s->get());
  }

  const auto* library = table["library"].as_string();
  if (library == nullptr || library->get().empty()) return missing("key 'library': missing, or not a string");
  m.library = library->get();
  if (m.library[0] != '/') m.library = absl::StrCat(Folder(path), "/", m.library);
  // Normal: the runner compares its folder with the read paths.
  m.library = std::filesystem::path(m.library).lexically_normal().string();

  if (auto node = table["entry"]; node) {
    const auto* entry = node.as_string();
    if (entry == nullptr || entry->get().empty()) return bad("key 'entry': not a non-empty string");
    m.entry = entry->get();
  }
  const auto* abi = table["abi_version"].as_integer();
  if (abi == nullptr) return missing("key 'abi_version': missing, or not an integer");
  m.abi_version = abi->get();
  if (m.abi_version != CODECVISOR_BACKEND_ABI_VERSION) {
    return bad(absl::StrCat("key 'abi_version': ", m.abi_version, ", but this codecvisor speaks backend ABI ",
                            CODECVISOR_BACKEND_ABI_VERSION,
                            " (CODECVISOR_BACKEND_ABI_VERSION in codecvisor_backend.h): rebuild the plugin against "
                            "this codecvisor's header and set abi_version = ",
                            CODECVISOR_BACKEND_ABI_VERSION));
  }

  if (auto node = table["restart"]; node) {
    const auto* restart = node.as_table();
    if (restart == nullptr) return bad("key 'restart': not a table");
    auto positive = [&](const char* key, int64_t max, int64_t* out, int64_t min = 0) -> absl::Status {
      auto v = (*restart)[key];
      if (!v) return absl::OkStatus();
      const auto* i = v.as_integer();
      if (i == nullptr || i->get() < min || i->get() > max) {
        return bad(absl::StrCat("key 'restart.", key, "': expected an integer in [", min, ", ", max, "]"));
      }
      *out = i->get();
      return absl::OkStatus();
    };
    int64_t max_restarts = m.restart.max_restarts, window = m.restart.window.count() / 1000,
            initial = m.restart.backoff_initial.count(), cap = m.restart.backoff_max.count(),
            poison = m.restart.max_poison_in_a_row, heal = m.restart.heal_after_successes, start = 0,
            close = m.close_timeout.count(), quarantine = m.restart.quarantine.count() / 1000;
    for (auto s :
         {positive("max_restarts", 1000, &max_restarts), positive("window_seconds", 86400, &window),
          positive("backoff_initial_ms", 600'000, &initial), positive("backoff_max_ms", 600'000, &cap),
          positive("max_poison_in_a_row", 1'000'000, &poison), positive("heal_after_successes", 1'000'000, &heal, 1),
          positive("start_timeout_seconds", 120, &start, 1), positive("close_timeout_seconds", 3600, &close, 1),
          positive("quarantine_seconds", 86400, &quarantine)}) {
      if (!s.ok()) return s;
    }
    if (start > 0) m.start_timeout = std::chrono::seconds(start);
    m.close_timeout = std::chrono::seconds(close);
    m.restart.max_restarts = static_cast<int>(max_restarts);
    m.restart.max_poison_in_a_row = static_cast<int>(poison);
    m.restart.heal_after_successes = static_cast<int>(heal);
    m.restart.window = std::chrono::seconds(window);
    m.restart.backoff_initial = std::chrono::milliseconds(initial);
    m.restart.backoff_max = std::chrono::milliseconds(cap);
    m.restart.quarantine = std::chrono::seconds(quarantine);
    m.restart.quarantine_max = std::max(m.restart.quarantine_max, m.restart.quarantine);
    if (auto spare = (*restart)["warm_spare"]; spare) {
      if (!spare.is_boolean()) return bad("key 'restart.warm_spare': expected true or false");
      m.warm_spare = spare.as_boolean()->get();
    }
    WarnOfUnknownKeys(
        *restart, "restart.",
        {"max_restarts", "window_seconds", "backoff_initial_ms", "backoff_max_ms", "max_poison_in_a_row",
         "heal_after_successes", "warm_spare", "start_timeout_seconds", "close_timeout_seconds", "quarantine_seconds"},
        path, &m.warnings);
  }

  if (auto node = table["sandbox"]; node) {
    const auto* sandbox = node.as_table();
    if (sandbox == nullptr) return bad("key 'sandbox': not a table");
    for (const auto& entry : *sandbox) {
      const std::string k(entry.first.str());
      const toml::node& value = entry.second;
      if (k == "network") return bad("key 'sandbox.network': no backend may have network access");
      auto paths = [&](std::vector<std::string>* out) -> absl::Status {
        // A read path may be relative to the manifest's folder, so that a
        // relocatable package can grant its own files (read_paths = ["."]).
        const bool relative_ok = k == "read_paths";
        const std::string expected = relative_ok ? "expected an array of paths (absolute, or relative to the manifest)"
                                                 : "expected an array of absolute paths";
        const auto* array = value.as_array();
        if (array == nullptr) return bad(absl::StrCat("key 'sandbox.", k, "': ", expected));
        for (const auto& p : *array) {
          const auto* str = p.as_string();
          if (str == nullptr || str->get().empty() || (str->get()[0] != '/' && !relative_ok) ||
              str->get().find('\0') != std::string::npos) {
            return bad(absl::StrCat("key 'sandbox.", k, "': ", expected));
          }
          if (str->get()[0] != '/') {
            std::string resolved =
                std::filesystem::path(absl::StrCat(Folder(path), "/", str->get())).lexically_normal().string();
            while (resolved.size() > 1 && resolved.back() == '/') resolved.pop_back();
            out->push_back(std::move(resolved));
            continue;
          }
          // Devices are granted read-write (and ioctl): only device nodes,
          // never a folder of the user's files.
          if (k == "devices" && (!absl::StartsWith(str->get(), "/dev/") || HasDotDot(str->get()))) {
            return bad(absl::StrCat("key 'sandbox.devices': '", str->get(),
                                    "' is not under /dev/ (devices are opened read-write)"));
          }
          // The folders under /dev that hold files anyone may create, and
          // the terminals: never a device a backend may have.
          if (k == "devices") {
            // Written plainly ("/dev/./shm/x" would pass the prefixes below).
            if (std::filesystem::path(str->get()).lexically_normal().string() != str->get()) {
              return bad(absl::StrCat("key 'sandbox.devices': '", str->get(), "' is not written plainly (write '",
                                      std::filesystem::path(str->get()).lexically_normal().string(), "')"));
            }
            bool refused = str->get() == "/dev/";
            for (const char* shared : {"/dev/shm", "/dev/mqueue", "/dev/pts", "/dev/fd"}) {
              refused = refused || str->get() == shared || absl::StartsWith(str->get(), absl::StrCat(shared, "/"));
            }
            if (refused) {
              return bad(absl::StrCat("key 'sandbox.devices': '", str->get(),
                                      "' is not a device node a backend may have (devices are opened read-write)"));
            }
          }
          out->push_back(str->get());
        }
        return absl::OkStatus();
      };
      // `max` keeps the limit meaningful (memory_mb << 20 must not wrap).
      auto number = [&](uint64_t* out, int64_t max, int64_t min = 1, absl::string_view why_min = "") -> absl::Status {
        const auto* i = value.as_integer();
        if (i == nullptr || i->get() < min || i->get() > max) {
          return bad(absl::StrCat("key 'sandbox.", k, "': expected an integer from ", min, " to ", max, why_min));
        }
        *out = static_cast<uint64_t>(i->get());
        return absl::OkStatus();
      };
      absl::Status s;
      if (k == "read_paths") {
        s = paths(&m.sandbox.read_paths);
      } else if (k == "devices") {
        s = paths(&m.sandbox.devices);
      } else if (k == "memory_mb") {
        s = number(&m.sandbox.memory_mb, int64_t{1} << 30);  // 1 PiB
      } else if (k == "cpu_seconds") {
        s = number(&m.sandbox.cpu_seconds, int64_t{1} << 40);
      } else if (k == "open_files") {
        s = number(&m.sandbox.open_files, int64_t{1} << 30, SandboxPolicy::kMinOpenFiles,
                   " (the runner holds about 10 descriptors of its own and each open decoder about 3)");
      } else if (k == "threads") {
        s = number(&m.sandbox.threads, int64_t{1} << 30);
      } else if (k == "allow_degraded") {
        if (!value.is_boolean()) return bad("key 'sandbox.allow_degraded': expected true or false");
        m.sandbox.allow_degraded = value.as_boolean()->get();
      } else {
        return bad(absl::StrCat("key 'sandbox.", k, "': unknown (read_paths, devices, memory_mb, cpu_seconds, "
                                "open_files, threads, allow_degraded)"));
      }
      if (!s.ok()) return s;
    }
  }

  // The [conformance] table is the suite's alone: a mistake there must
  // not take the device from users, so the backend loads, with a warning,
  // and the suite refuses the manifest (ConformanceClaims::problem).
  if (absl::Status s = ParseConformance(table["conformance"], path, &m.conformance); !s.ok()) {
    m.conformance = ConformanceClaims{.codecs = {}, .problem = std::string(s.message())};
    m.warnings.push_back(absl::StrCat(s.message(), "; the backend loads, the conformance suite refuses the manifest"));
  }

  if (auto node = table["config"]; node) {
    const auto* config = node.as_table();
    if (config == nullptr) return bad("key 'config': not a table");
    for (const auto& [key, value] : *config) {
      std::string v;
      if (const auto* s = value.as_string()) {
        v = s->get();
      } else if (const auto* i = value.as_integer()) {
        v = absl::StrCat(i->get());
      } else if (const auto* f = value.as_floating_point()) {
        v = absl::StrCat(f->get());
      } else if (const auto* b = value.as_boolean()) {
        v = b->get() ? "true" : "false";
      } else {
        return bad(absl::StrCat("key 'config.", std::string(key.str()), "': only strings, numbers and booleans"));
      }
      // create() reads key=value lines: a newline or '=' in a key, or a
      // newline in a value, would make lines of the manifest writer's
      // choosing (a value "ok\nfault=crash" two settings), and a NUL
      // would cut the text short.
      const std::string k(key.str());
      if (k.empty() || k.find_first_of(std::string("=\n\r\0", 4)) != std::string::npos) {
        return bad(absl::StrCat("key 'config.", absl::CEscape(k), "': a config key is one line without '='"));
      }
      if (v.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
        return bad(absl::StrCat("key 'config.", absl::CEscape(k), "': a config value is one line (put longer data in a file "
                                "the plugin reads through [sandbox] read_paths)"));
      }
      absl::StrAppend(&m.config, k, "=", v, "\n");
    }
  }
  return m;
}

absl::StatusOr<BackendManifest> LoadManifest(absl::string_view relative_path) {
  // Absolute: the library path it resolves must not change meaning when
  // the process changes its working folder before the backend starts.
  std::error_code absolute_error;
  // Normal too: one file, however it was typed ("./x.toml", "a/../x.toml"),
  // is one manifest to the backend history.
  const std::string file =
      std::filesystem::absolute(std::string(relative_path), absolute_error).lexically_normal().string();
  if (absolute_error) {
    return absl::NotFoundError(absl::StrCat("manifest ", relative_path, ": ", absolute_error.message()));
  }
  const absl::string_view path = file;
  auto unreadable = [&](absl::string_view why) {
    return absl::NotFoundError(absl::StrCat("manifest ", path, ": cannot be read (", why, ")"));
  };
  // Another user's manifest, or one another user could change, would run
  // code of theirs with this user's rights.
  if (absl::Status s = CheckOnlyOwnerCanChange(file, "manifest"); !s.ok()) return s;  // missing: not opened
  // Only a regular file is opened: opening a device node may act on it.
  struct stat before {};
  if (stat(file.c_str(), &before) != 0) return unreadable(std::strerror(errno));
  if (!S_ISREG(before.st_mode)) return unreadable(NotAFile(before.st_mode));
  // O_NONBLOCK: a FIFO put in its place meanwhile would block the open
  // forever (and with it every Python thread, discovery being under the GIL).
  const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return unreadable(std::strerror(errno));
  struct stat st {};
  const bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  std::string text;
  int read_error = 0;
  if (regular) {
    text.resize(kMaxManifestBytes + 1);
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = read(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) read_error = errno;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    text.resize(done);
  }
  close(fd);
  if (!regular) return unreadable(NotAFile(st.st_mode));
  if (read_error != 0) return unreadable(std::strerror(read_error));
  absl::StatusOr<BackendManifest> m = ParseManifest(text, path);
  if (!m.ok()) return m;
  // A library that is missing says so when the backend starts.
  if (absl::Status s = CheckOnlyOwnerCanChange(m->library, "library"); !s.ok() && !absl::IsNotFound(s)) return s;
  if (absl::Status s = CheckDeviceNodes(m->sandbox.devices); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("manifest ", path, ": ", s.message()));
  }
  if (absl::Status s = CheckReadPaths(m->sandbox.read_paths, m->path); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("manifest ", path, ": ", s.message()));
  }
  for (const std::string& w : DeviceAccessWarnings(m->sandbox.devices, geteuid() == 0)) {
    m->warnings.push_back(absl::StrCat("manifest ", path, ": ", w));
  }
  // Left out of the sandbox, as it is not there: said now, not only when
  // the plugin fails to open it.
  for (const std::string& p : m->sandbox.read_paths) {
    struct stat st {};
    if (stat(p.c_str(), &st) != 0 && errno == ENOENT) {
      m->warnings.push_back(absl::StrCat("manifest ", path, ": [sandbox] read_paths: ", absl::CEscape(p),
                                         " does not exist: the backend will not see it (a misspelled path, or a file "
                                         "the plugin's package did not install)"));
    }
  }
  return m;
}

}  // namespace codecvisor
