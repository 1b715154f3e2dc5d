// File: core/file_trust.h
//
// Whether another local user could have written, or could still change, a
// file the host is about to trust: a backend's manifest (which names the
// code to run and the paths and devices it may use) and its library.
// A manifest planted in a shared folder on CODECVISOR_BACKEND_PATH, or a
// library another user can rewrite, would otherwise run that user's code
// with the caller's rights over the caller's files.
//
// The rule, as OpenSSH's StrictModes applies it to authorized_keys: the
// file, and every folder from it up to /, belongs to root or to this
// process's user, and no one else may write it. A folder that others may
// write is accepted only with the sticky bit (/tmp): there, no one may
// remove or replace another's file. Group write is accepted where the group
// is this process's own primary group (a user-private group, the umask 002
// systems' default). Symbolic links are followed first: the file and the
// folders checked are those the path resolves to.
//
// Thread-safe: pure functions and system calls only.

#ifndef CODECVISOR_CORE_FILE_TRUST_H_
#define CODECVISOR_CORE_FILE_TRUST_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace codecvisor {

// Who owns an entry and who may write it (from stat).
struct Ownership {
  uid_t uid = 0;
  gid_t gid = 0;
  mode_t mode = 0;
  bool folder = false;
};

// Pure: why another user could change `entry` (named `name` in the
// sentence), or "" when no one but root and `self_uid` can. `self_gid`
// is this process's primary group.
std::string WhyOthersCouldChange(const std::string& name, const Ownership& entry, uid_t self_uid, gid_t self_gid);

// The check on a real path: PERMISSION_DENIED naming `what` ("manifest",
// "library") and the first entry that fails, or NOT_FOUND when the path
// does not resolve; OK otherwise.
absl::Status CheckOnlyOwnerCanChange(const std::string& path, absl::string_view what);

// A manifest's [sandbox] devices are bound read-write into the backend's
// root and granted by Landlock: each must be a character device that is
// not a terminal (which takes typed input: TIOCSTI) where it exists (a
// missing one is left out: a GPU plugin on a machine without the GPU).
// A regular file (/dev/shm/x), a folder, a block device or a terminal is
// FAILED_PRECONDITION: a way out of the sandbox, or into the user's
// session.
absl::Status CheckDeviceNodes(const std::vector<std::string>& devices);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_FILE_TRUST_H_
