// File: backends/cpu/cpu_backend.cc
//
// The C ABI table: argument checks, options of any struct_size, Status ->
// cv_status + message (prefixed with the caller's file label), and the
// exception barrier.

#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/cpu/ffmpeg_log.h"
#include "backends/cpu/session.h"

extern "C" {
#include <libavcodec/version.h>
#include <libavformat/version.h>
#include <libswscale/version.h>
}

// The vendor-side objects the C header declares opaquely.
struct cv_backend {
  int unused = 0;  // the cpu backend has no process-wide state
};

struct cv_session {
  std::string label;
  std::unique_ptr<codecvisor::cpu::CpuSession> impl;
};

namespace codecvisor::cpu {
namespace {

cv_status ToCvStatus(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return CV_OK;
    case absl::StatusCode::kInvalidArgument:
      return CV_ERROR_INVALID_ARGUMENT;
    case absl::StatusCode::kOutOfRange:
      return CV_ERROR_OUT_OF_RANGE;
    case absl::StatusCode::kNotFound:
      return CV_ERROR_NOT_FOUND;
    case absl::StatusCode::kDataLoss:
      return CV_ERROR_CORRUPT_DATA;
    case absl::StatusCode::kUnimplemented:
      return CV_ERROR_UNSUPPORTED;
    case absl::StatusCode::kResourceExhausted:
      return CV_ERROR_RESOURCE_EXHAUSTED;
    case absl::StatusCode::kAborted:  // CpuSession: a frame native output cannot hold
      return CV_ERROR_NATIVE_CHANGED;
    default:
      return CV_ERROR_INTERNAL;
  }
}

void WriteMessage(cv_error* error, const std::string& message) {
  if (error != nullptr)
    std::snprintf(error->message, sizeof(error->message), "%s", message.c_str());
}

cv_status Fail(cv_error* error, cv_status status, const std::string& message) {
  WriteMessage(error, message);
  return status;
}

// Turns `status` into the return value; on failure the message names the file.
cv_status Report(cv_error* error, const std::string& label, const absl::Status& status) {
  if (status.ok()) return CV_OK;
  return Fail(error, ToCvStatus(status.code()),
              absl::StrCat("video '", label, "': ", status.message()));
}

// An error met while an allocation failed (ffmpeg_log.h) is the memory's,
// not the file's: a header that could not be read for want of memory is no
// damaged file, which a batch job would skip.
cv_status BlameMemory(cv_status status, uint64_t failures_before, cv_error* error) {
  // Only the file's blame is moved (a frame that could not be decoded, a
  // header that could not be read); arguments, ranges and a changed native
  // format keep their codes.
  if (status != CV_ERROR_CORRUPT_DATA || AllocationFailures() == failures_before) return status;
  const std::string message = error != nullptr ? error->message : "";
  return Fail(error, CV_ERROR_RESOURCE_EXHAUSTED,
              absl::StrCat(message,
                           " (the backend ran out of memory meanwhile, which is no fault of the file's: "
                           "[sandbox] memory_mb in its manifest)"));
}

// Runs `fn` (returning cv_status) with no exception escaping into C.
template <typename Fn>
cv_status Guarded(cv_error* error, Fn fn) {
  const uint64_t failures_before = AllocationFailures();
  try {
    return BlameMemory(fn(), failures_before, error);
  } catch (const std::bad_alloc&) {
    return Fail(error, CV_ERROR_RESOURCE_EXHAUSTED, "cpu backend: out of memory");
  } catch (const std::exception& e) {
    return Fail(error, CV_ERROR_INTERNAL, absl::StrCat("cpu backend: internal error: ", e.what()));
  } catch (...) {
    return Fail(error, CV_ERROR_INTERNAL, "cpu backend: internal error");
  }
}

// The int an enum field of `options` holds, read without an enum load.
int32_t RawEnum(const cv_open_options& options, size_t offset) {
  static_assert(sizeof(cv_seek_mode) == sizeof(int32_t) &&
                sizeof(cv_output_format) == sizeof(int32_t));
  int32_t value;
  std::memcpy(&value, reinterpret_cast<const char*>(&options) + offset, sizeof(value));
  return value;
}

cv_status Create(const char* /*config*/, cv_backend** out, cv_error* error) {
  // The cpu backend reads no [config] keys; unknown ones are ignored.
  return Guarded(error, [&] {
    if (out == nullptr) return Fail(error, CV_ERROR_INVALID_ARGUMENT, "create: out is NULL");
    ApplyFfmpegLogLevel();
    *out = new cv_backend();
    return CV_OK;
  });
}

void Destroy(cv_backend* backend) { delete backend; }

cv_status OpenSession(cv_backend* backend, int fd, const cv_open_options* options, cv_session** out,
                      cv_error* error) {
  return Guarded(error, [&] {
    if (out != nullptr) *out = nullptr;
    if (backend == nullptr || options == nullptr || out == nullptr) {
      return Fail(error, CV_ERROR_INVALID_ARGUMENT,
                  "open_session: backend, options or out is NULL");
    }
    // Fields a smaller (older) struct lacks keep these defaults; a larger
    // (newer) struct's extra fields are ignored.
    cv_open_options opts{};
    opts.stream_index = -1;
    opts.seek_mode = CV_SEEK_EXACT;
    opts.output_format = CV_OUTPUT_RGB24;
    std::memcpy(&opts, options, std::min<size_t>(options->struct_size, sizeof(opts)));
    opts.struct_size = sizeof(opts);
    // The runner is C: an enum field may hold any int, and loading an
    // out-of-range value as a C++ enum is undefined, so check the raw ints.
    const int32_t seek_mode = RawEnum(opts, offsetof(cv_open_options, seek_mode));
    const int32_t output_format = RawEnum(opts, offsetof(cv_open_options, output_format));
    const bool has_label =
        options->struct_size >= offsetof(cv_open_options, file_label) + sizeof(const char*) &&
        opts.file_label != nullptr;
    auto session = std::make_unique<cv_session>();
    session->label = has_label ? opts.file_label : absl::StrCat("fd ", fd);
    if (seek_mode != CV_SEEK_EXACT && seek_mode != CV_SEEK_APPROXIMATE) {
      return Report(error, session->label,
                    absl::InvalidArgumentError(absl::StrCat(
                        "seek mode ", seek_mode, " is neither exact (0) nor approximate (1)")));
    }
    if (output_format < CV_OUTPUT_RGB24 || output_format > CV_OUTPUT_NATIVE) {
      return Report(error, session->label,
                    absl::InvalidArgumentError(
                        absl::StrCat("output format ", output_format,
                                     " is not rgb24 (0), rgb24 planar (1) or native (2)")));
    }
    absl::StatusOr<std::unique_ptr<CpuSession>> impl = CpuSession::Open(fd, opts);
    if (!impl.ok()) return Report(error, session->label, impl.status());
    session->impl = *std::move(impl);
    *out = session.release();
    return CV_OK;
  });
}

void CloseSession(cv_session* session) { delete session; }

cv_status GetMetadata(cv_session* session, cv_stream_metadata* out, cv_error* error) {
  if (session == nullptr || out == nullptr) {
    return Fail(error, CV_ERROR_INVALID_ARGUMENT, "get_metadata: session or out is NULL");
  }
  *out = session->impl->metadata();
  return CV_OK;
}

cv_status GetFrameLayout(cv_session* session, cv_frame_layout* out, cv_error* error) {
  if (session == nullptr || out == nullptr) {
    return Fail(error, CV_ERROR_INVALID_ARGUMENT, "get_frame_layout: session or out is NULL");
  }
  *out = session->impl->layout();
  return CV_OK;
}

cv_status GetStreams(cv_session* session, cv_stream_info* out, uint32_t capacity, uint32_t* count,
                     cv_error* error) {
  if (session == nullptr || count == nullptr || (out == nullptr && capacity > 0)) {
    return Fail(error, CV_ERROR_INVALID_ARGUMENT, "get_streams: session, out or count is NULL");
  }
  const std::vector<cv_stream_info>& streams = session->impl->streams();
  const size_t n = std::min<size_t>(streams.size(), capacity);
  std::copy_n(streams.begin(), n, out);
  *count = static_cast<uint32_t>(n);
  return CV_OK;
}

cv_status GetHeaderTimes(cv_session* session, cv_header_times* out, cv_error* error) {
  if (session == nullptr || out == nullptr) {
    return Fail(error, CV_ERROR_INVALID_ARGUMENT, "get_header_times: session or out is NULL");
  }
  *out = session->impl->header_times();
  return CV_OK;
}

cv_status GetPixelAspectRatio(cv_session* session, cv_aspect_ratio* out, cv_error* error) {
  if (session == nullptr || out == nullptr) {
    return Fail(error, CV_ERROR_INVALID_ARGUMENT, "get_pixel_aspect_ratio: session or out is NULL");
  }
  *out = session->impl->pixel_aspect_ratio();
  return CV_OK;
}

cv_status GetFrameInfo(cv_session* session, int64_t index, cv_frame_info* out, cv_error* error) {
  if (session == nullptr || out == nullptr) {
    return Fail(error, CV_ERROR_INVALID_ARGUMENT, "get_frame_info: session or out is NULL");
  }
  return Guarded(error, [&] {
    return Report(error, session->label, session->impl->GetFrameInfo(index, out));
  });
}

cv_status IndexAtSeconds(cv_session* session, double seconds, int64_t* index, cv_error* error) {
  if (session == nullptr || index == nullptr) {
    return Fail(error, CV_ERROR_INVALID_ARGUMENT, "index_at_seconds: session or index is NULL");
  }
  return Guarded(error, [&] {
    absl::StatusOr<int64_t> found = session->impl->IndexAtSeconds(seconds);
    if (!found.ok()) return Report(error, session->label, found.status());
    *index = *found;
    return CV_OK;
  });
}

cv_status DecodeFrame(cv_session* session, int64_t index, cv_frame_buffer* buffer,
                      cv_frame_info* info, cv_error* error) {
  if (session == nullptr || buffer == nullptr) {
    return Fail(error, CV_ERROR_INVALID_ARGUMENT, "decode_frame: session or buffer is NULL");
  }
  return Guarded(error, [&] {
    return Report(error, session->label, session->impl->DecodeFrame(index, buffer, info));
  });
}

cv_status DecodeFrameAtSeconds(cv_session* session, double seconds, cv_frame_buffer* buffer, cv_frame_info* info,
                               cv_error* error) {
  if (session == nullptr || buffer == nullptr) {
    return Fail(error, CV_ERROR_INVALID_ARGUMENT, "decode_frame_at_seconds: session or buffer is NULL");
  }
  return Guarded(
      error, [&] { return Report(error, session->label, session->impl->DecodeFrameAtSeconds(seconds, buffer, info)); });
}

constexpr char kVersion[] =
    "1.0.0 (FFmpeg " LIBAVFORMAT_IDENT ", " LIBAVCODEC_IDENT ", " LIBSWSCALE_IDENT ")";

constexpr cv_backend_v1 kTable = {
    .struct_size = sizeof(cv_backend_v1),
    .abi_version = CODECVISOR_BACKEND_ABI_VERSION,
    .name = "cpu",
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
    .late_frame_buffer = 1,
    .get_streams = &GetStreams,
    .decode_frame_at_seconds = &DecodeFrameAtSeconds,
    .get_header_times = &GetHeaderTimes,
    .get_pixel_aspect_ratio = &GetPixelAspectRatio,
};

}  // namespace
}  // namespace codecvisor::cpu

namespace codecvisor::cpu {

int64_t SeeksForTest(const cv_session* session) { return session->impl->seeks_for_test(); }

const PicturePool* PicturesForTest(const cv_session* session) { return session->impl->pictures_for_test(); }

int64_t FramesLentInPlaceForTest(const cv_session* session) { return session->impl->frames_lent_in_place(); }

}  // namespace codecvisor::cpu

extern "C" const cv_backend_v1* codecvisor_backend_v1(void) { return &codecvisor::cpu::kTable; }
