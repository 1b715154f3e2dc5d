// File: core/file_trust.h
//
// Whether another local user could have written, or could still change, a
// file the host is about to trust: a backend's manifest (which names the
// code to run and the paths and devices it may use), its library, and the
// runner (which applies half the sandbox to itself).
// A manifest planted in a shared folder on CODECVISOR_BACKEND_PATH, or a
// library another user can rewrite, would otherwise run that user's code
// with the caller's rights over the caller's files.
//
// The rule, as OpenSSH's StrictModes applies it to authorized_keys: the
// path is walked as the kernel resolves it, and every folder searched and
// every entry met (each symbolic link, and what it leads to, walked the
// same way) belongs to root or to this process's user, and no one else may
// write it. A folder that others may write is accepted only with the
// sticky bit (/tmp): there, no one may remove or replace another's entry.
// Group write is accepted only for this process's user-private group
// (named after the user, no other member: the umask 002 systems' default).
// What cannot be checked (a folder that cannot be searched, a path too
// long) is refused.
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

// Who owns an entry and who may write it (from lstat).
struct Ownership {
  uid_t uid = 0;
  gid_t gid = 0;
  mode_t mode = 0;
  bool folder = false;
  bool link = false;
};

// The process the check is for.
struct Self {
  uid_t uid = 0;
  gid_t gid = 0;               // its primary group
  bool private_group = false;  // `gid` is the user's private group
  // In a user namespace that maps only some users (`unshare -Ur`, a
  // rootless container), the owner every unmapped user (root outside
  // included) shows as: the kernel's overflowuid, 65534. -1 where every
  // user is mapped (no namespace, or the whole range).
  uid_t unmapped_uid = static_cast<uid_t>(-1);
};

// Self::unmapped_uid for this process, from /proc/self/uid_map and
// /proc/sys/kernel/overflowuid (read at most once a second, and at once
// in a forked child).
uid_t UnmappedOwnerUid();

// Pure: why another user could change `entry` (named `name` in the
// sentence), or "" when no one but root and `self` can.
std::string WhyOthersCouldChange(const std::string& name, const Ownership& entry, const Self& self);

// The check on a real, absolute path: PERMISSION_DENIED naming `what`
// ("manifest", "library") and the first entry that fails or cannot be
// checked, NOT_FOUND when an entry does not exist; OK otherwise.
absl::Status CheckOnlyOwnerCanChange(const std::string& path, absl::string_view what);

// Whether `status` is CheckOnlyOwnerCanChange's refusal of an entry owned
// by the user namespace's unmapped uid: the install is not at fault, the
// namespace is, and reinstalling cannot help.
bool IsUnmappedOwnerRefusal(const absl::Status& status);

// A manifest's [sandbox] devices are bound read-write into the backend's
// root and granted by Landlock: each must be a character device that
// core/device_policy.h allows (not a terminal, which takes typed input,
// nor a screen, input, sound, camera or memory device) where it exists (a
// missing one is left out: a GPU plugin on a machine without the GPU).
// A regular file (/dev/shm/x), a folder, a block device or a refused
// device is FAILED_PRECONDITION: a way out of the sandbox, or into the
// user's session.
absl::Status CheckDeviceNodes(const std::vector<std::string>& devices);

// The manifest's devices the backend will not be able to open read-write,
// each with why: a root host's backend runs as `sandbox_uid`/`sandbox_gid`
// outside (nobody) with no supplementary groups, so a node only its owner
// or group may use (/dev/kvm 0600, a GPU's render node 0660 root:render)
// refuses it; a non-root host's runs as the user, with the user's access.
// Missing nodes are not named (the plugin may run where they exist).
std::vector<std::string> DeviceAccessWarnings(const std::vector<std::string>& devices, bool host_is_root,
                                              uid_t sandbox_uid = 65534, gid_t sandbox_gid = 65534);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_FILE_TRUST_H_
