#include "core/file_trust.h"

#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/refreshed_value.h"
#include "core/device_policy.h"

namespace codecvisor {
namespace {

// Links followed at most, as the kernel's ELOOP limit.
constexpr int kMaxLinks = 40;

// Whether `gid` is `uid`'s user-private group: named after the user, with
// no other member listed, and no other user's primary group.
bool LookUpPrivateGroup(gid_t gid, uid_t uid) {
  std::vector<char> buffer(16384);
  passwd pw{};
  passwd* user = nullptr;
  group gr{};
  group* grp = nullptr;
  if (getpwuid_r(uid, &pw, buffer.data(), buffer.size() / 2, &user) != 0 || user == nullptr) return false;
  if (getgrgid_r(gid, &gr, buffer.data() + buffer.size() / 2, buffer.size() / 2, &grp) != 0 || grp == nullptr) {
    return false;
  }
  if (std::strcmp(grp->gr_name, user->pw_name) != 0) return false;
  for (char** member = grp->gr_mem; member != nullptr && *member != nullptr; ++member) {
    if (std::strcmp(*member, user->pw_name) != 0) return false;
  }
  // The user database's iteration is process-wide state.
  static std::mutex users_mu;
  std::lock_guard<std::mutex> lock(users_mu);
  bool shared = false;
  setpwent();
  for (passwd* other = getpwent(); other != nullptr && !shared; other = getpwent()) {
    shared = other->pw_gid == gid && other->pw_uid != uid;
  }
  endpwent();
  return !shared;
}

// LookUpPrivateGroup, remembered for a few seconds: it goes through every
// user of the database (with systemd's NSS module, every userdb folder),
// and each manifest, library and read path checked asks it again (it was
// most of `codecvisor-bench restart`'s discovery_ms_100).
bool IsPrivateGroup(gid_t gid, uid_t uid) {
  using Clock = std::chrono::steady_clock;
  struct Answer {
    gid_t gid;
    uid_t uid;
    bool private_group;
    Clock::time_point when;
  };
  static std::mutex mu;
  static std::optional<Answer> last;
  const Clock::time_point now = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu);
    if (last.has_value() && last->gid == gid && last->uid == uid && now - last->when < std::chrono::seconds(5)) {
      return last->private_group;
    }
  }
  const bool private_group = LookUpPrivateGroup(gid, uid);
  std::lock_guard<std::mutex> lock(mu);
  last = Answer{gid, uid, private_group, now};
  return private_group;
}

}  // namespace

namespace {

uid_t ReadUnmappedOwnerUid() {
  std::ifstream overflow("/proc/sys/kernel/overflowuid");
  unsigned long long uid = 65534;
  overflow >> uid;
  // Where the namespace maps the overflow uid itself (every user, outside
  // any namespace: "0 0 4294967295"; or a container's own nobody), its
  // files are that user's.
  std::ifstream map("/proc/self/uid_map");
  unsigned long long inside = 0, outside = 0, count = 0;
  bool read_any = false;  // (no /proc: nothing is known)
  while (map >> inside >> outside >> count) {
    read_any = true;
    if (uid >= inside && uid - inside < count) return static_cast<uid_t>(-1);
  }
  return read_any ? static_cast<uid_t>(uid) : static_cast<uid_t>(-1);
}

}  // namespace

namespace {

constexpr absl::string_view kUnmappedOwnerPayload = "codecvisor.dev/unmapped-owner";

// Whether `entry` belongs to the uid that stands, in this user namespace,
// for every user outside it that it does not map.
bool OwnedByUnmapped(const Ownership& entry, const Self& self) {
  return entry.uid == self.unmapped_uid && entry.uid != self.uid;
}

}  // namespace

bool IsUnmappedOwnerRefusal(const absl::Status& status) { return status.GetPayload(kUnmappedOwnerPayload).has_value(); }

uid_t UnmappedOwnerUid() {
  // Every check of a path asks: reading two /proc files each time was most
  // of the cost of discovering 100 manifests.
  static RefreshedValue<uid_t> unmapped;
  return unmapped.Get(ReadUnmappedOwnerUid);
}

std::string WhyOthersCouldChange(const std::string& name, const Ownership& entry, const Self& self) {
  if (OwnedByUnmapped(entry, self)) {
    return absl::StrCat(name, " belongs to uid ", entry.uid,
                        ", which in this user namespace stands for every user outside it that the namespace does "
                        "not map, root included, so who may change it cannot be told (run codecvisor outside the "
                        "namespace, or in one that maps root and the install's owner: every folder above the "
                        "install, / included, must belong to a user the namespace maps, which a namespace that "
                        "maps only you never does)");
  }
  if (entry.uid != 0 && entry.uid != self.uid) {
    return absl::StrCat(name, " belongs to uid ", entry.uid, ", another user");
  }
  // A symbolic link's mode means nothing: only its owner may replace it.
  if (entry.link) return "";
  // A folder's sticky bit keeps others from removing or replacing what is
  // not theirs in it; a file's means nothing.
  const bool sticky = entry.folder && (entry.mode & S_ISVTX) != 0;
  if ((entry.mode & S_IWOTH) != 0 && !sticky) return absl::StrCat(name, " may be written by every user");
  if ((entry.mode & S_IWGRP) != 0 && !sticky && !(entry.gid == self.gid && self.private_group)) {
    return absl::StrCat(name, " may be written by group ", entry.gid);
  }
  return "";
}

absl::Status CheckOnlyOwnerCanChange(const std::string& path, absl::string_view what) {
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", path, ": not an absolute path"));
  }
  Self self{geteuid(), getegid(), false, UnmappedOwnerUid()};
  bool private_group_known = false;
  auto untrusted = [&](const std::string& why) {
    return absl::PermissionDeniedError(absl::StrCat(
        what, " ", path, " is not trusted: ", why,
        ", who could change what the backend runs; only files that no one but root and this user (uid ", self.uid,
        ") can change are loaded"));
  };
  // Walks the path as the kernel resolves it: every folder searched (the
  // one a name is looked up in) and every entry met, links included, must
  // be one no other user can change; a link's target is walked the same
  // way from where it points.
  std::vector<std::string> pending;  // names still to resolve, the next last
  auto push = [&pending](const std::string& p) {
    std::vector<std::string> names = absl::StrSplit(p, '/', absl::SkipEmpty());
    pending.insert(pending.end(), names.rbegin(), names.rend());
  };
  push(path);
  std::string folder = "/";
  int links = 0;
  auto check = [&](const std::string& entry, const struct stat& st) -> absl::Status {
    Ownership o{st.st_uid, st.st_gid, st.st_mode, S_ISDIR(st.st_mode), S_ISLNK(st.st_mode)};
    if (!o.link && (o.mode & S_IWGRP) != 0 && o.gid == self.gid && !private_group_known) {
      self.private_group = IsPrivateGroup(self.gid, self.uid);
      private_group_known = true;
    }
    const std::string why = WhyOthersCouldChange(entry, o, self);
    if (why.empty()) return absl::OkStatus();
    absl::Status refused = untrusted(why);
    if (OwnedByUnmapped(o, self)) refused.SetPayload(kUnmappedOwnerPayload, absl::Cord());
    return refused;
  };
  auto stat_error = [&](const std::string& entry) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(what, " ", path, ": ", entry, ": ", std::strerror(errno)));
    return untrusted(absl::StrCat(entry, " cannot be checked (", std::strerror(errno), ")"));
  };
  struct stat st {};
  if (lstat("/", &st) != 0) return stat_error("/");
  if (absl::Status s = check("/", st); !s.ok()) return s;
  while (!pending.empty()) {
    const std::string name = std::move(pending.back());
    pending.pop_back();
    if (name == ".") continue;
    if (name == "..") {  // `folder` is resolved: its parent was walked through
      const size_t slash = folder.rfind('/');
      folder = slash == 0 ? "/" : folder.substr(0, slash);
      continue;
    }
    const std::string entry = folder == "/" ? "/" + name : absl::StrCat(folder, "/", name);
    if (lstat(entry.c_str(), &st) != 0) return stat_error(entry);
    if (absl::Status s = check(entry, st); !s.ok()) return s;
    if (S_ISLNK(st.st_mode)) {
      if (++links > kMaxLinks) return untrusted(absl::StrCat(entry, " cannot be checked (too many links)"));
      std::vector<char> target(PATH_MAX + 1);
      const ssize_t n = readlink(entry.c_str(), target.data(), target.size() - 1);
      if (n <= 0) return stat_error(entry);
      const std::string to(target.data(), static_cast<size_t>(n));
      if (to[0] == '/') folder = "/";
      push(to);
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      folder = entry;
    } else if (!pending.empty()) {
      errno = ENOTDIR;
      return stat_error(entry);
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> DeviceAccessWarnings(const std::vector<std::string>& devices, bool host_is_root,
                                              uid_t sandbox_uid, gid_t sandbox_gid) {
  std::vector<std::string> warnings;
  for (const std::string& d : devices) {
    struct stat st {};
    if (stat(d.c_str(), &st) != 0) {
      if (errno == ENOENT) {
        warnings.push_back(absl::StrCat("[sandbox] devices: ", absl::CEscape(d),
                                        " does not exist on this machine: the backend will not see it (a device or "
                                        "driver this machine lacks, or a misspelled path)"));
      }
      continue;
    }
    bool usable;
    if (host_is_root) {
      const mode_t rw = st.st_uid == sandbox_uid   ? (S_IRUSR | S_IWUSR)
                        : st.st_gid == sandbox_gid ? (S_IRGRP | S_IWGRP)
                                                   : (S_IROTH | S_IWOTH);
      usable = (st.st_mode & rw) == rw;
    } else {
      usable = access(d.c_str(), R_OK | W_OK) == 0;
    }
    if (usable) continue;
    warnings.push_back(absl::StrCat(
        "[sandbox] devices: ", absl::CEscape(d), " (owner ", st.st_uid, ", group ", st.st_gid, ", mode ",
        absl::StrFormat("%04o", st.st_mode & 07777), ") cannot be opened read-write by the backend, which runs as ",
        host_is_root ? "nobody without supplementary groups (the host is root)" : "this user",
        "; grant it with the node's permissions (a udev rule), or run the host as a user who may open it"));
  }
  return warnings;
}

absl::Status CheckDeviceNodes(const std::vector<std::string>& devices) {
  for (const std::string& d : devices) {
    struct stat st {};
    if (stat(d.c_str(), &st) != 0) continue;
    auto refused = [&](absl::string_view what) {
      return absl::FailedPreconditionError(
          absl::StrCat("[sandbox] devices: ", d, " is ", what,
                       "; devices are granted read-write, and only "
                       "character devices a decoder uses may be (never terminals, screens, input, sound, cameras "
                       "or the kernel's memory)"));
    };
    if (S_ISDIR(st.st_mode)) return refused("a folder");
    if (S_ISBLK(st.st_mode)) return refused("a block device (a disk)");
    if (!S_ISCHR(st.st_mode)) return refused("not a device node");
    const DeviceFacts facts = ReadDeviceFacts(d, st.st_rdev);
    if (facts.short_of_descriptors) {
      return absl::ResourceExhaustedError(
          absl::StrCat("[sandbox] devices: ", d, " could not be checked: ", std::strerror(EMFILE)));
    }
    if (const std::string why = WhyDeviceIsRefused(facts); !why.empty()) return refused(why);
  }
  return absl::OkStatus();
}

}  // namespace codecvisor
