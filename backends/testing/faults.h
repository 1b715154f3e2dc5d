// File: backends/testing/faults.h
//
// The faults the `faulty` test backend injects: what a buggy or compromised
// vendor library could do from inside the runner. Some only break the
// process (segfault, abort, exit, hang, allocate without bound, take
// every thread the process may have); others
// attack the host through the channel's shared memory, which a vendor
// library can reach because it shares the runner's address space: it finds
// the region by walking back from the frame buffer it was lent to the
// region's magic, and writes garbage, impossible lengths, or bad frame
// references there, or forges well-formed frame records (forger.h).

#ifndef CODECVISOR_BACKENDS_TESTING_FAULTS_H_
#define CODECVISOR_BACKENDS_TESTING_FAULTS_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "backends/sdk/codecvisor_backend.h"

namespace codecvisor::testing {

// Runs `fault` now, from inside decode_frame, with `buffer` the slot lent
// for the frame. Faults that kill or hang never return; the channel
// attacks return after corrupting the region (the runner then sends its
// normal reply into the wreckage).
void InjectFault(const std::string& fault, cv_frame_buffer* buffer);

// Starts `count` threads that spin until the process ends, whatever its
// sessions do (fault spin_open: a plugin whose threads run on after its
// decoder closed), or until `*until` is set (never null then).
void StartSpinningThreads(int count, const std::atomic<bool>* until = nullptr);

}  // namespace codecvisor::testing

#endif  // CODECVISOR_BACKENDS_TESTING_FAULTS_H_
