// File: api/inherited.h
//
// What a forked child does with the objects it inherited from its parent
// (a Host, a decoder, a frame holding the parent's slot): nothing. Their
// destructors would stop the parent's backends, write into its channels or
// give back its slots, so the child leaves them as they are. They are kept
// reachable from here rather than dropped, so that a leak checker in the
// child (LeakSanitizer at a sanitized program's exit) does not report them.

#ifndef CODECVISOR_API_INHERITED_H_
#define CODECVISOR_API_INHERITED_H_

#include <memory>

namespace codecvisor::api {

// Keeps `object` alive and reachable until the process ends.
void KeepInherited(const void* object);

template <typename T>
void LeaveInherited(std::unique_ptr<T>& impl) {
  KeepInherited(impl.release());
}

}  // namespace codecvisor::api

#endif  // CODECVISOR_API_INHERITED_H_
