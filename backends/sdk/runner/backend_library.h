// File: backends/sdk/runner/backend_library.h
//
// Loads a vendor backend library into the runner: dlopen (RTLD_LOCAL, so
// its symbols cannot interpose on ours), the entry symbol, and every check
// on the table it returns. Runs inside the sandboxed child, never in the host.

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_BACKEND_LIBRARY_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_BACKEND_LIBRARY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/sdk/codecvisor_backend.h"

namespace codecvisor::runner {

struct LoadedBackend {
  void* handle = nullptr;  // never dlclosed: the process exits instead
  const cv_backend_v1* table = nullptr;
};

// Loads `library`, resolves `entry` and validates the table: not NULL, ABI
// version equal to ours, struct_size at least CV_BACKEND_V1_MIN_SIZE (a
// table from an older header of the same version), every function present,
// and `name` equal to `expected_name`. Each failure is a Status whose message
// says what is wrong and what to do (kNotFound: library or symbol missing;
// kFailedPrecondition: ABI or name mismatch; kInvalidArgument: bad table).
// `library` is what dlopen opens (e.g. /proc/self/fd/5 for a library the
// host opened for us); `display` is its name in messages.
[[nodiscard]] absl::StatusOr<LoadedBackend> LoadBackendLibrary(absl::string_view library,
                                                               absl::string_view display,
                                                               absl::string_view entry,
                                                               absl::string_view expected_name);

// The checks LoadBackendLibrary makes of the table a plugin's entry point
// returned (`path` names the library in messages): its ABI version and
// struct_size, each required function present (a missing one named), and
// its name the manifest's `expected_name`. kFailedPrecondition when not.
[[nodiscard]] absl::Status CheckFunctionTable(const cv_backend_v1& table, absl::string_view path,
                                              absl::string_view expected_name);

// What to do about dlopen's error `why` for the plugin library `display`
// (dlerror's text, with `display` as the library's name), as a clause to
// append: the plugin itself missing or not a loadable library -> reinstall
// it; a library it links missing -> install that library where the loader
// looks; a symbol that none of its libraries defines -> link the plugin
// against the library that defines it.
std::string LoadFailureAdvice(absl::string_view why, absl::string_view display);

// The path through which the runner opens descriptor `fd` (/proc/self/fd/N).
std::string DescriptorPath(int fd);

// What dlopen opens for the plugin at `library` (its absolute path), which
// the host also opened for us as descriptor `library_fd` (-1 if not): the
// path itself when the sandbox may read the plugin's folder (it is, or is
// inside, one of `read_paths`), so that the loader resolves $ORIGIN there
// and finds libraries the plugin ships beside it; otherwise the
// descriptor, through /proc/self/fd, which needs no path at all.
std::string LibraryOpenPath(const std::string& library, int library_fd, const std::vector<std::string>& read_paths);

// Whether `table` asks for late frame buffers (cv_frame_buffer.acquire):
// only if its struct_size covers the field.
bool WantsLateFrameBuffers(const cv_backend_v1& table);

// Whether `table` decodes by time (decode_frame_at_seconds): only if its
// struct_size covers the field and it is not NULL.
bool DecodesAtSeconds(const cv_backend_v1& table);

// A cv_status (vendor) as an absl status code.
absl::StatusCode ToStatusCode(cv_status status);

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_BACKEND_LIBRARY_H_
