// File: base/address_space.h
//
// Whether a process under an address-space limit (RLIMIT_AS: a backend's
// memory_mb) could map more now. An allocation or a thread's stack refused
// a moment ago leaves less room than it asked for, so a failure the
// library reports as something else (pthread_create's EAGAIN, FFmpeg's
// "damaged data") can be told to be the memory's.

#ifndef CODECVISOR_BASE_ADDRESS_SPACE_H_
#define CODECVISOR_BASE_ADDRESS_SPACE_H_

#include <cstddef>

namespace codecvisor {

// Whether `bytes` of address space could be reserved now: a PROT_NONE,
// MAP_NORESERVE mapping made and unmapped at once, which touches no memory.
// Thread-safe.
bool CanReserveAddressSpace(size_t bytes);

}  // namespace codecvisor

#endif  // CODECVISOR_BASE_ADDRESS_SPACE_H_
