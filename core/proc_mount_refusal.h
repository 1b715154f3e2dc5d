// File: core/proc_mount_refusal.h
//
// Why the kernel refused a new proc filesystem (EPERM) to a process in a
// user namespace, as advice for the person reading the error. Pure: it
// reads the text of /proc/self/mountinfo it is given.
//
// The kernel mounts a new proc in a user namespace only where the proc
// already mounted hides nothing and is no more restricted than the new one
// would be (mount_too_revealing() in fs/namespace.c): a container runtime's
// /proc, with files such as /proc/kcore masked by mounts over them and
// /proc/sys read-only, makes it refuse. Where /proc has nothing over it,
// the refusal is a policy's: a seccomp filter or a security module that
// forbids mount(2).

#ifndef CODECVISOR_CORE_PROC_MOUNT_REFUSAL_H_
#define CODECVISOR_CORE_PROC_MOUNT_REFUSAL_H_

#include <string>

#include "absl/strings/string_view.h"

namespace codecvisor {

// "; " and the likely cause with what to do about it, from `mountinfo`
// (the text of /proc/self/mountinfo).
std::string ProcMountRefusal(absl::string_view mountinfo);

// The same, from this process's /proc/self/mountinfo.
std::string ProcMountRefusalHere();

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_PROC_MOUNT_REFUSAL_H_
