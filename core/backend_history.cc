#include "core/backend_history.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include <toml++/toml.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ipc/unique_fd.h"

namespace codecvisor {
namespace {

absl::Status Errno(absl::string_view what, const std::string& path) {
  return ipc::ErrnoStatus(absl::StrCat(what, " ", path));
}

// The first line of every history written: a file without it is not one,
// and is never replaced.
// How long a writer waits for another's lock before it gives up.
constexpr std::chrono::milliseconds kLockWait{2000};

constexpr char kHeader[] = "# Backend failures seen by codecvisor hosts; `codecvisor backends --reset NAME` clears one.\n";

// The file's text; NotFound where there is none. Only a regular file is
// read (a FIFO there would block the host, a device feed it without end).
absl::StatusOr<std::string> ReadText(const std::string& path) {
  ipc::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return Errno("cannot read", path);
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return Errno("cannot read", path);
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ipc::RetryEintr([&] { return read(fd.get(), buffer, sizeof(buffer)); });
    if (n < 0) return Errno("cannot read", path);
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > (1 << 20)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": over 1 MiB, not a backend history"));
    }
  }
  return text;
}

// mkdir -p with mode 0700 for each folder it makes.
absl::Status MakeFolders(const std::string& folder) {
  if (folder.empty()) return absl::OkStatus();
  struct stat st;
  if (stat(folder.c_str(), &st) == 0) {
    return S_ISDIR(st.st_mode) ? absl::OkStatus() : absl::FailedPreconditionError(absl::StrCat(folder, ": not a folder"));
  }
  const size_t slash = folder.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    if (absl::Status s = MakeFolders(folder.substr(0, slash)); !s.ok()) return s;
  }
  if (mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) return Errno("mkdir", folder);
  return absl::OkStatus();
}

std::string Folder(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

// The history is written only into folders of this process's user: root
// run with a user's HOME (`sudo -E`, a container given the user's home)
// would make a ~/.local of root's that the user can then neither use nor
// remove. FailedPrecondition naming the nearest folder that exists, where
// another user owns it.

}  // namespace

absl::Status CheckOwnFolders(std::string folder, uid_t self) {
  struct stat st;
  while (!folder.empty() && stat(folder.c_str(), &st) != 0) folder = Folder(folder);
  if (folder.empty() && stat("/", &st) != 0) return absl::OkStatus();
  if (st.st_uid == self) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      folder.empty() ? "/" : folder, " belongs to uid ", st.st_uid, ", not to this process's user (uid ", self,
      "): no history is written into another user's folders (sudo -H gives root a HOME of its own)"));
}

bool SameManifest(const BackendRecord& record, const std::string& manifest) {
  // Normal on both sides: a record written with "/x/./a.toml" is /x/a.toml's.
  auto normal = [](const std::string& path) { return std::filesystem::path(path).lexically_normal(); };
  return record.manifest.empty() || normal(record.manifest) == normal(manifest);
}

void AddSightings(const std::vector<BackendSighting>& seen, BackendHistory* history) {
  for (const BackendSighting& s : seen) {
    const bool quarantined = s.state == "quarantined";
    const bool trouble = s.restarts > 0 || !s.last_exit.empty() || quarantined;
    auto it = history->find(s.name);
    if (it == history->end() || !SameManifest(it->second, s.manifest)) {
      if (!trouble) continue;  // nothing worth keeping; another manifest's record stays its own
      it = history->insert_or_assign(s.name, BackendRecord{}).first;
    }
    BackendRecord& r = it->second;
    r.manifest = s.manifest;
    r.restarts += s.restarts;
    if (!s.last_exit.empty()) {
      r.last_exit = s.last_exit;
      r.last_exit_time = s.last_exit_time;
    }
    if (quarantined) r.quarantine = s.diagnostic;
  }
}

absl::StatusOr<BackendHistory> ParseBackendHistory(absl::string_view text, absl::string_view path) {
  toml::table root;
  try {
    root = toml::parse(std::string_view(text.data(), text.size()), std::string_view(path.data(), path.size()));
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a backend history (", std::string(e.description()), ")"));
  }
  BackendHistory history;
  const toml::table* backends = root["backend"].as_table();
  if (backends == nullptr) return history;
  for (const auto& [key, node] : *backends) {
    const std::string name(key.str());
    const toml::table* t = node.as_table();
    if (t == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": backend.", name, " is not a table"));
    }
    BackendRecord r;
    r.manifest = (*t)["manifest"].value_or(std::string());
    const int64_t restarts = (*t)["restarts"].value_or(int64_t{0});
    if (restarts < 0) return absl::InvalidArgumentError(absl::StrCat(path, ": backend.", name, ".restarts < 0"));
    r.restarts = static_cast<uint64_t>(restarts);
    r.last_exit = (*t)["last_exit"].value_or(std::string());
    r.last_exit_time = (*t)["last_exit_time"].value_or(std::string());
    r.quarantine = (*t)["quarantine"].value_or(std::string());
    history.emplace(name, std::move(r));
  }
  return history;
}

std::string FormatBackendHistory(const BackendHistory& history) {
  toml::table backends;
  for (const auto& [name, r] : history) {
    toml::table t;
    t.insert("manifest", r.manifest);
    t.insert("restarts", static_cast<int64_t>(r.restarts));
    if (!r.last_exit.empty()) t.insert("last_exit", r.last_exit);
    if (!r.last_exit_time.empty()) t.insert("last_exit_time", r.last_exit_time);
    if (!r.quarantine.empty()) t.insert("quarantine", r.quarantine);
    backends.insert(name, std::move(t));
  }
  toml::table root;
  root.insert("backend", std::move(backends));
  std::ostringstream out;
  out << kHeader << root << "\n";
  return out.str();
}

std::string DefaultBackendHistoryPath() {
  constexpr char kFile[] = "/codecvisor/backends.toml";
  if (const char* state = std::getenv("XDG_STATE_HOME"); state != nullptr && state[0] == '/') {
    return absl::StrCat(state, kFile);
  }
  // The folders below a home are made as needed, never the home itself: a
  // service account's (Debian's /nonexistent) keeps no history.
  struct stat st;
  if (const char* home = std::getenv("HOME");
      home != nullptr && home[0] == '/' && stat(home, &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::StrCat(home, "/.local/state", kFile);
  }
  return "";
}

namespace {

// A file that is not one this code wrote (a path set by mistake to a
// video) is left as it is; a history damaged after its header, or zeroed
// by a crash, starts afresh.
absl::Status CheckIsHistory(const std::string& text, const std::string& path) {
  const bool zeroed = text.find_first_not_of('\0') == std::string::npos;
  if (!zeroed && !absl::StartsWith(text, kHeader)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path,
                     ": not a codecvisor backend history (it does not begin with its header); not replaced: "
                     "remove it to start a new one"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BackendHistory> ReadBackendHistory(const std::string& path) {
  absl::StatusOr<std::string> text = ReadText(path);
  if (absl::IsNotFound(text.status())) return BackendHistory{};
  if (!text.ok()) return text.status();
  return ParseBackendHistory(*text, path);
}

absl::Status UpdateBackendHistory(const std::string& path, absl::FunctionRef<void(BackendHistory*)> change) {
  // The folders below the home are made as needed, never the home itself
  // (XDG_STATE_HOME under a service account's /nonexistent, or a home
  // removed since).
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') {
    std::string h = home;
    while (h.size() > 1 && h.back() == '/') h.pop_back();
    struct stat st;
    if (absl::StartsWith(path, absl::StrCat(h, "/")) && (stat(h.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
      return absl::NotFoundError(absl::StrCat(h, ": the home folder does not exist; no history is kept"));
    }
  }
  // Root's, run with a user's HOME (sudo -E); another user's folders are
  // a non-root host's own choice (OpenShift's random uid in a home of
  // uid 1001, group-writable).
  if (geteuid() == 0) {
    if (absl::Status s = CheckOwnFolders(Folder(path), 0); !s.ok()) return s;
  }
  // Checked before the lock too, whose file would be left beside the user's.
  if (absl::StatusOr<std::string> text = ReadText(path); text.ok()) {
    if (absl::Status s = CheckIsHistory(*text, path); !s.ok()) return s;
  }
  if (absl::Status s = MakeFolders(Folder(path)); !s.ok()) return s;
  const std::string lock_path = path + ".lock";
  ipc::UniqueFd lock(open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock.valid()) return Errno("cannot open", lock_path);
  // Held until `lock` closes. A writer holds it for a read and a rename: one
  // that holds it for long (a stopped process, or another user's in a shared
  // folder) must not hang this one (a Host's destructor).
  const auto give_up = std::chrono::steady_clock::now() + kLockWait;
  while (flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) return Errno("cannot lock", lock_path);
    if (std::chrono::steady_clock::now() >= give_up) {
      return absl::UnavailableError(absl::StrCat(lock_path, ": locked by another process for ",
                                                 kLockWait.count(), " ms; the history was not updated"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  BackendHistory updated;
  if (absl::StatusOr<std::string> text = ReadText(path); text.ok()) {
    if (absl::Status s = CheckIsHistory(*text, path); !s.ok()) return s;
    absl::StatusOr<BackendHistory> history = ParseBackendHistory(*text, path);
    if (history.ok()) updated = *std::move(history);
  } else if (!absl::IsNotFound(text.status())) {
    return text.status();
  }
  change(&updated);
  // A new file with a name no one can guess, never one already there: in a
  // folder others may write (history_file set to /tmp/...), a link planted
  // at a known name would have the write truncate what it points at.
  std::string tmp = absl::StrCat(path, ".XXXXXX");
  const std::string text = FormatBackendHistory(updated);
  ipc::UniqueFd fd(mkostemp(tmp.data(), O_CLOEXEC));
  if (!fd.valid()) return Errno("cannot create a file beside", path);
  absl::Status written = [&]() -> absl::Status {
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = ipc::RetryEintr([&] { return write(fd.get(), text.data() + done, text.size() - done); });
      if (n <= 0) return Errno("cannot write", tmp);
      done += static_cast<size_t>(n);
    }
    if (close(fd.release()) != 0) return Errno("cannot write", tmp);
    if (rename(tmp.c_str(), path.c_str()) != 0) return Errno("cannot replace", path);
    return absl::OkStatus();
  }();
  if (!written.ok()) unlink(tmp.c_str());
  return written;
}

}  // namespace codecvisor
