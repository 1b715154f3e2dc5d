// File: backends/cpu/cpu_backend.h
//
// The built-in FFmpeg (libav*) backend behind the stable C ABI of
// backends/sdk/codecvisor_backend.h. libcodecvisor_cpu.so exports
// codecvisor_backend_v1 for the runner to dlopen; the runner, the benchmark
// and the fuzzer may also link :cpu_backend and call it in process.
//
// The table is static and immutable. Per the ABI, sessions are independent
// (calls on different sessions may run concurrently) and each session's calls
// never overlap. The backend keeps no mutable global state: a failure in one
// session, whatever the file, leaves the others and later ones unaffected.
//
// SECURITY: every byte of the video is untrusted. It is read only through the
// descriptor the runner passes (no path, no nested opens; see demuxer.h);
// sizes taken from it are bounded (frame_converter.h, frame_index.h); errors
// are returned, never asserted. Exceptions (std::bad_alloc) do not cross the
// C ABI: they become CV_ERROR_RESOURCE_EXHAUSTED / CV_ERROR_INTERNAL.

#ifndef CODECVISOR_BACKENDS_CPU_CPU_BACKEND_H_
#define CODECVISOR_BACKENDS_CPU_CPU_BACKEND_H_

#include "backends/sdk/codecvisor_backend.h"

extern "C" {

// The entry symbol (CODECVISOR_BACKEND_ENTRY). Returns the cpu backend's
// table: name "cpu", exact_cpu_output 1. Never NULL.
__attribute__((visibility("default"))) const cv_backend_v1* codecvisor_backend_v1(void);

}  // extern "C"

#include <cstdint>

namespace codecvisor::cpu {

class PicturePool;

// Demuxer seeks `session` (from this backend's open_session) has made: tests
// check that sequential decoding makes none.
int64_t SeeksForTest(const cv_session* session);
// The session's picture pool (picture_pool.h), or nullptr, and how many
// frames it lent in place.
const PicturePool* PicturesForTest(const cv_session* session);
int64_t FramesLentInPlaceForTest(const cv_session* session);

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_CPU_BACKEND_H_
