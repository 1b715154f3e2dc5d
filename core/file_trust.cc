#include "core/file_trust.h"

#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace codecvisor {

std::string WhyOthersCouldChange(const std::string& name, const Ownership& entry, uid_t self_uid, gid_t self_gid) {
  if (entry.uid != 0 && entry.uid != self_uid) {
    return absl::StrCat(name, " belongs to uid ", entry.uid, ", another user");
  }
  // A folder's sticky bit keeps others from removing or replacing what is
  // not theirs in it; a file's means nothing.
  const bool sticky = entry.folder && (entry.mode & S_ISVTX) != 0;
  if ((entry.mode & S_IWOTH) != 0 && !sticky) return absl::StrCat(name, " may be written by every user");
  if ((entry.mode & S_IWGRP) != 0 && !sticky && entry.gid != self_gid) {
    return absl::StrCat(name, " may be written by group ", entry.gid);
  }
  return "";
}

absl::Status CheckOnlyOwnerCanChange(const std::string& path, absl::string_view what) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) {
    return absl::NotFoundError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
  }
  const uid_t self_uid = geteuid();
  const gid_t self_gid = getegid();
  std::string entry = resolved;
  for (;;) {
    struct stat st {};
    if (stat(entry.c_str(), &st) != 0) {
      return absl::NotFoundError(absl::StrCat(what, " ", path, ": ", entry, ": ", std::strerror(errno)));
    }
    const Ownership o{st.st_uid, st.st_gid, st.st_mode, S_ISDIR(st.st_mode)};
    const std::string why =
        WhyOthersCouldChange(entry == resolved ? std::string(resolved) : absl::StrCat("its folder ", entry), o,
                             self_uid, self_gid);
    if (!why.empty()) {
      return absl::PermissionDeniedError(absl::StrCat(
          what, " ", path, " is not trusted: ", why,
          ", who could change what the backend runs; only files that no one but root and this user (uid ", self_uid,
          ") can change are loaded"));
    }
    if (entry == "/") return absl::OkStatus();
    const size_t slash = entry.rfind('/');
    entry = slash == 0 ? "/" : entry.substr(0, slash);
  }
}

absl::Status CheckDeviceNodes(const std::vector<std::string>& devices) {
  for (const std::string& d : devices) {
    struct stat st {};
    if (stat(d.c_str(), &st) != 0) continue;
    auto refused = [&](absl::string_view what) {
      return absl::FailedPreconditionError(
          absl::StrCat("[sandbox] devices: ", d, " is ", what, "; devices are granted read-write, and only "
                       "character devices that are not terminals may be"));
    };
    if (S_ISDIR(st.st_mode)) return refused("a folder");
    if (S_ISBLK(st.st_mode)) return refused("a block device (a disk)");
    if (!S_ISCHR(st.st_mode)) return refused("not a device node");
    // Terminals: the tty majors (4: ttyN and serial, 5: tty, console and
    // ptmx) and the pseudo-terminals' (136-143).
    const unsigned int major_number = major(st.st_rdev);
    if (major_number == 4 || major_number == 5 || (major_number >= 136 && major_number <= 143)) {
      return refused("a terminal");
    }
  }
  return absl::OkStatus();
}

}  // namespace codecvisor
