// File: core/user_namespace_ids.h
//
// Which ids this process's user namespace maps: whether a root host can
// give its backends nobody's ids (core/process.cc), and whether doctor
// should expect it to.

#ifndef CODECVISOR_CORE_USER_NAMESPACE_IDS_H_
#define CODECVISOR_CORE_USER_NAMESPACE_IDS_H_

#include <cstdint>

namespace codecvisor {

// Whether this process's user namespace maps `id` in /proc/self/`file`
// (uid_map, gid_map); true where it cannot be read (the initial namespace
// maps every id). Async-signal-safe but for the path it builds.
bool UserNamespaceMapsId(const char* file, uint32_t id);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_USER_NAMESPACE_IDS_H_
