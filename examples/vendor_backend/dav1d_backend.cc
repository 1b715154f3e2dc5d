// File: examples/vendor_backend/dav1d_backend.cc
//
// The C ABI table of the dav1d plugin: argument checks, options of any
// struct_size, Status -> cv_status plus a message that starts with the
// caller's file label, and a barrier that keeps C++ exceptions (only
// std::bad_alloc can occur) out of the runner's C code.

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "session.h"

extern "C" {
#include <libavformat/version.h>
#include <libswscale/version.h>
}

struct cv_backend {
  int unused = 0;  // the plugin keeps no process-wide state
};

struct cv_session {
  std::string label;
  std::unique_ptr<dav1d_plugin::Session> impl;
};

namespace dav1d_plugin {
namespace {

cv_status Fail(cv_error* error, cv_status code, const std::string& message) {
  if (error != nullptr) std::snprintf(error->message, sizeof(error->message), "%s", message.c_str());
  return code;
}

// `status` as a return value; a failure's message names the file.
cv_status Report(cv_error* error, const std::string& label, const Status& status) {
  if (status.ok()) return CV_OK;
  return Fail(error, status.code(), "video '" + label + "': " + status.message());
}

template <typename Body>
cv_status NoThrow(cv_error* error, Body body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Fail(error, CV_ERROR_RESOURCE_EXHAUSTED, "dav1d backend: out of memory");
  } catch (...) {
    return Fail(error, CV_ERROR_INTERNAL, "dav1d backend: unexpected internal error");
  }
}

cv_status Create(const char* /*config*/, cv_backend** out, cv_error* error) {
  if (out == nullptr) return Fail(error, CV_ERROR_INVALID_ARGUMENT, "create: out is NULL");
  // [config] keys: none are read; unknown ones are ignored.
  return NoThrow(error, [&] {
    *out = new cv_backend();
    return CV_OK;
  });
}

void Destroy(cv_backend* backend) { delete backend; }

// Copies the runner's options into a full struct: an older, smaller struct
// leaves the defaults below; a newer, larger one's extra fields are ignored.
cv_open_options CopyOptions(const cv_open_options& given) {
  cv_open_options o{};
  o.stream_index = -1;
  o.seek_mode = CV_SEEK_EXACT;
  o.output_format = CV_OUTPUT_RGB24;
  size_t n = given.struct_size < sizeof(o) ? given.struct_size : sizeof(o);
  std::memcpy(&o, &given, n);
  if (n < offsetof(cv_open_options, file_label) + sizeof(o.file_label)) o.file_label = nullptr;
  if (n < offsetof(cv_open_options, device) + sizeof(o.device)) o.device = nullptr;
  o.struct_size = sizeof(o);
  return o;
}

cv_status OpenSession(cv_backend* backend, int fd, const cv_open_options* options, cv_session** out, cv_error* error) {
  if (out != nullptr) *out = nullptr;
  if (backend == nullptr || options == nullptr || out == nullptr) {
    return Fail(error, CV_ERROR_INVALID_ARGUMENT, "open_session: backend, options or out is NULL");
  }
  return NoThrow(error, [&] {
    const cv_open_options o = CopyOptions(*options);
    auto session = std::make_unique<cv_session>();
    session->label = o.file_label != nullptr ? o.file_label : "fd " + std::to_string(fd);
    // The enum fields are plain int32_t: any value may arrive.
    if (o.seek_mode != CV_SEEK_EXACT && o.seek_mode != CV_SEEK_APPROXIMATE) {
      return Report(error, session->label,
                    Status(CV_ERROR_INVALID_ARGUMENT, Sprintf("seek mode %d is neither exact (0) nor approximate (1)",
                                                              static_cast<int>(o.seek_mode))));
    }
    if (Status s = Session::Open(fd, o, &session->impl); !s.ok()) {
      return Report(error, session->label, s);
    }
    *out = session.release();
    return CV_OK;
  });
}

void CloseSession(cv_session* session) { delete session; }

// The session calls: both pointers checked, then `body(session, out)`
// under the exception barrier, its Status reported with the file label.
template <typename Out, typename Body>
cv_status OnSession(const char* call, cv_session* session, Out* out, cv_error* error, Body body) {
  if (session == nullptr || out == nullptr) {
    return Fail(error, CV_ERROR_INVALID_ARGUMENT, std::string(call) + ": the session or the output pointer is NULL");
  }
  return NoThrow(error, [&] { return Report(error, session->label, body(*session->impl, out)); });
}

cv_status GetMetadata(cv_session* session, cv_stream_metadata* out, cv_error* error) {
  return OnSession("get_metadata", session, out, error, [](Session& s, cv_stream_metadata* m) {
    *m = s.metadata();
    return Status();
  });
}

cv_status GetFrameLayout(cv_session* session, cv_frame_layout* out, cv_error* error) {
  return OnSession("get_frame_layout", session, out, error, [](Session& s, cv_frame_layout* l) {
    *l = s.layout();
    return Status();
  });
}

cv_status GetStreams(cv_session* session, cv_stream_info* out, uint32_t capacity, uint32_t* count, cv_error* error) {
  if (out == nullptr && capacity > 0) {
    return Fail(error, CV_ERROR_INVALID_ARGUMENT, "get_streams: the output array is NULL");
  }
  return OnSession("get_streams", session, count, error, [&](Session& s, uint32_t* n) {
    *n = s.ListStreams(out, capacity);
    return Status();
  });
}

cv_status GetHeaderTimes(cv_session* session, cv_header_times* out, cv_error* error) {
  return OnSession("get_header_times", session, out, error, [](Session& s, cv_header_times* t) {
    *t = s.header_times();
    return Status();
  });
}

cv_status GetFrameInfo(cv_session* session, int64_t index, cv_frame_info* out, cv_error* error) {
  return OnSession("get_frame_info", session, out, error,
                   [index](Session& s, cv_frame_info* info) { return s.GetFrameInfo(index, info); });
}

cv_status IndexAtSeconds(cv_session* session, double seconds, int64_t* index, cv_error* error) {
  return OnSession("index_at_seconds", session, index, error,
                   [seconds](Session& s, int64_t* i) { return s.IndexAtSeconds(seconds, i); });
}

cv_status DecodeFrame(cv_session* session, int64_t index, cv_frame_buffer* buffer, cv_frame_info* info,
                      cv_error* error) {
  return OnSession("decode_frame", session, buffer, error,
                   [&](Session& s, cv_frame_buffer* b) { return s.DecodeFrame(index, *b, info); });
}

#define DAV1D_PLUGIN_STR2(x) #x
#define DAV1D_PLUGIN_STR(x) DAV1D_PLUGIN_STR2(x)
constexpr char kVersion[] = "1.0.0 (libdav1d API " DAV1D_PLUGIN_STR(DAV1D_API_VERSION_MAJOR) "." DAV1D_PLUGIN_STR(
    DAV1D_API_VERSION_MINOR) ", " LIBAVFORMAT_IDENT ", " LIBSWSCALE_IDENT ")";

constexpr cv_backend_v1 kBackend = {
    .struct_size = sizeof(cv_backend_v1),
    .abi_version = CODECVISOR_BACKEND_ABI_VERSION,
    .name = "dav1d",
    .version = kVersion,
    .exact_cpu_output = 1,
    .psnr_threshold_db = 0,
    .create = &Create,
    .destroy = &Destroy,
    .open_session = &OpenSession,
    .close_session = &CloseSession,
    .get_metadata = &GetMetadata,
    .get_frame_layout = &GetFrameLayout,
    .get_frame_info = &GetFrameInfo,
    .index_at_seconds = &IndexAtSeconds,
    .decode_frame = &DecodeFrame,
    .late_frame_buffer = 0,
    .get_streams = &GetStreams,
    .get_header_times = &GetHeaderTimes,
};

}  // namespace
}  // namespace dav1d_plugin

extern "C" CODECVISOR_BACKEND_EXPORT const cv_backend_v1* codecvisor_backend_v1(void) {
  return &dav1d_plugin::kBackend;
}
