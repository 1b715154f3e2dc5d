#include "backends/sdk/runner/backend_library.h"

#include <dlfcn.h>

#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace codecvisor::runner {

bool WantsLateFrameBuffers(const cv_backend_v1& table) {
  return table.struct_size >= offsetof(cv_backend_v1, late_frame_buffer) + sizeof(table.late_frame_buffer) &&
         table.late_frame_buffer != 0;
}

bool DecodesAtSeconds(const cv_backend_v1& table) {
  return table.struct_size >=
             offsetof(cv_backend_v1, decode_frame_at_seconds) + sizeof(table.decode_frame_at_seconds) &&
         table.decode_frame_at_seconds != nullptr;
}

absl::StatusCode ToStatusCode(cv_status status) {
  switch (status) {
    case CV_OK:
      return absl::StatusCode::kOk;
    case CV_ERROR_INVALID_ARGUMENT:
      return absl::StatusCode::kInvalidArgument;
    case CV_ERROR_OUT_OF_RANGE:
      return absl::StatusCode::kOutOfRange;
    case CV_ERROR_NOT_FOUND:
      return absl::StatusCode::kNotFound;
    case CV_ERROR_CORRUPT_DATA:
      return absl::StatusCode::kDataLoss;
    case CV_ERROR_UNSUPPORTED:
      return absl::StatusCode::kUnimplemented;
    case CV_ERROR_RESOURCE_EXHAUSTED:
      return absl::StatusCode::kResourceExhausted;
    case CV_ERROR_INTERNAL:
      return absl::StatusCode::kInternal;
    case CV_ERROR_NATIVE_CHANGED:
      return absl::StatusCode::kAborted;  // only ever this, in the runner
  }
  return absl::StatusCode::kUnknown;
}

std::string LibraryOpenPath(const std::string& library, int library_fd, const std::vector<std::string>& read_paths) {
  if (library_fd < 0) return library;
  const size_t slash = library.rfind('/');
  const absl::string_view folder = absl::string_view(library).substr(0, slash == std::string::npos ? 0 : slash);
  for (const std::string& granted : read_paths) {
    if (folder == granted || (absl::StartsWith(folder, granted) && (granted.back() == '/' ||
                                                                    folder[granted.size()] == '/'))) {
      return library;
    }
  }
  return DescriptorPath(library_fd);
}

std::string DescriptorPath(int fd) { return absl::StrCat("/proc/self/fd/", fd); }

std::string LoadFailureAdvice(absl::string_view why, absl::string_view display) {
  // "LIB: undefined symbol: SYM": LIB (the plugin, or a library it links)
  // references SYM and nothing loaded defines it.
  constexpr absl::string_view kUndefined = ": undefined symbol: ";
  if (size_t at = why.find(kUndefined); at != absl::string_view::npos) {
    const absl::string_view needer = why.substr(0, at);
    const absl::string_view symbol = why.substr(at + kUndefined.size());
    return absl::StrCat("; ", needer == display ? "the plugin" : needer, " uses ", symbol,
                        ", which no library it is linked against defines: link the plugin against the library that "
                        "defines it (its -l flag; -Wl,--no-undefined makes the link fail when one is missing)");
  }
  // "DEP: cannot open shared object file: ...": a DT_NEEDED library of the
  // plugin's that the loader cannot find (the plugin itself was opened by
  // path, so its own name here means it is missing).
  constexpr absl::string_view kCannotOpen = ": cannot open shared object file";
  if (size_t at = why.find(kCannotOpen); at != absl::string_view::npos) {
    const absl::string_view missing = why.substr(0, at);
    if (missing != display) {
      return absl::StrCat("; the plugin is linked against ", missing,
                          ", which the loader cannot find in the sandbox: install it in the system's library path "
                          "(or a folder registered with ldconfig in /etc/ld.so.conf.d), or ship it beside the "
                          "plugin, link the plugin with an rpath of $ORIGIN, and let the sandbox read the plugin's "
                          "folder (read_paths = [\".\"] in the manifest's [sandbox] table); LD_LIBRARY_PATH does "
                          "not reach a backend, and a folder an absolute rpath names needs to be in read_paths");
    }
  }
  return "; reinstall the plugin";
}

absl::Status CheckFunctionTable(const cv_backend_v1& table, absl::string_view path, absl::string_view expected_name) {
  if (table.abi_version != CODECVISOR_BACKEND_ABI_VERSION) {
    return absl::FailedPreconditionError(
        absl::StrCat("library ", path, ": ABI version ", table.abi_version, ", this codecvisor speaks ",
                     CODECVISOR_BACKEND_ABI_VERSION, "; rebuild the plugin against this SDK"));
  }
  if (table.struct_size < CV_BACKEND_V1_MIN_SIZE) {
    return absl::FailedPreconditionError(absl::StrCat("library ", path, ": function table of ",
                                                      table.struct_size, " bytes, expected at least ",
                                                      CV_BACKEND_V1_MIN_SIZE));
  }
  const std::pair<const char*, const void*> required[] = {
      {"create", reinterpret_cast<const void*>(table.create)},
      {"destroy", reinterpret_cast<const void*>(table.destroy)},
      {"open_session", reinterpret_cast<const void*>(table.open_session)},
      {"close_session", reinterpret_cast<const void*>(table.close_session)},
      {"get_metadata", reinterpret_cast<const void*>(table.get_metadata)},
      {"get_frame_layout", reinterpret_cast<const void*>(table.get_frame_layout)},
      {"get_frame_info", reinterpret_cast<const void*>(table.get_frame_info)},
      {"index_at_seconds", reinterpret_cast<const void*>(table.index_at_seconds)},
      {"decode_frame", reinterpret_cast<const void*>(table.decode_frame)},
  };
  for (const auto& [name, f] : required) {
    if (f == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("library ", path, ": the function table's ", name, " is NULL, and every backend must have it"));
    }
  }
  if (table.name == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("library ", path,
                                                      ": the function table's name is NULL; it must "
                                                      "be the backend's name, '",
                                                      expected_name, "' as its manifest says"));
  }
  if (expected_name != table.name) {
    return absl::FailedPreconditionError(
        absl::StrCat("library ", path, " is backend '", table.name, "', but its manifest says '", expected_name, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<LoadedBackend> LoadBackendLibrary(absl::string_view library, absl::string_view display,
                                                 absl::string_view entry, absl::string_view expected_name) {
  const std::string open_path(library);
  const std::string path(display);
  dlerror();
  // RTLD_NOW: an undefined symbol fails here, with dlerror() naming it, not
  // in the middle of a decode.
  void* handle = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::string why = dlerror() ?: "dlopen failed";
    // dlerror names what it opened; name what the manifest said instead.
    if (open_path != path) {
      for (size_t at; (at = why.find(open_path)) != std::string::npos;) why.replace(at, open_path.size(), path);
    }
    const std::string advice = LoadFailureAdvice(why, path);
    // "PATH: ..." would follow "library PATH: " twice.
    if (absl::StartsWith(why, path + ": ")) why.erase(0, path.size() + 2);
    return absl::NotFoundError(absl::StrCat("library ", path, ": ", why, advice));
  }
  const std::string symbol(entry);
  dlerror();
  void* sym = dlsym(handle, symbol.c_str());
  if (sym == nullptr) {
    return absl::NotFoundError(absl::StrCat("library ", path, ": undefined symbol ", symbol,
                                            "; the manifest's entry must name the function the "
                                            "plugin exports: declared extern \"C\" and visible "
                                            "(CODECVISOR_BACKEND_EXPORT), not hidden by -fvisibility=hidden or a "
                                            "version script"));
  }
  auto fn = reinterpret_cast<cv_backend_entry_fn>(sym);
  const cv_backend_v1* table = fn();
  if (table == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("library ", path, ": ", symbol, "() returned NULL"));
  }
  if (absl::Status s = CheckFunctionTable(*table, path, expected_name); !s.ok()) return s;
  return LoadedBackend{handle, table};
}

}  // namespace codecvisor::runner
