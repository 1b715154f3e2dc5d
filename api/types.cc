#include "codecvisor/types.h"

#include "api/convert.h"
#include "codecvisor/codecvisor.h"
#include "core/video_decoder.h"

namespace codecvisor {

// A value outside the enum (a cast integer) is "unknown", as StatusCodeName
// says of one, not the name of another value.
const char* SeekModeName(SeekMode mode) {
  switch (mode) {
    case SeekMode::kExact:
      return "exact";
    case SeekMode::kApproximate:
      return "approximate";
  }
  return "unknown";
}

const char* OutputFormatName(OutputFormat format) {
  switch (format) {
    case OutputFormat::kRgb24:
    case OutputFormat::kRgb24Planar:
    case OutputFormat::kNative:
      return ipc::OutputFormatName(api::ToIpc(format));
  }
  return "unknown";
}

const char* StreamTypeName(StreamType type) {
  switch (type) {
    case StreamType::kUnknown:
      return "unknown";
    case StreamType::kVideo:
      return "video";
    case StreamType::kAudio:
      return "audio";
    case StreamType::kSubtitle:
      return "subtitle";
    case StreamType::kData:
      return "data";
    case StreamType::kAttachment:
      return "attachment";
  }
  return "unknown";
}

std::string FrameSelection::ToString() const { return internal::DescribeSelection(api::ToIpc(*this)); }

// codecvisor.h's constants and the library come from one version (version.bzl).
static_assert(kVersionMajor == CODECVISOR_VERSION_MAJOR && kVersionMinor == CODECVISOR_VERSION_MINOR &&
                  kVersionPatch == CODECVISOR_VERSION_PATCH,
              "codecvisor.h's version differs from api/version.bzl");

const char* Version() { return CODECVISOR_VERSION_STRING; }

}  // namespace codecvisor
