// File: api/convert.h
//
// Conversions between the public API's value types (codecvisor/*.h) and the
// internal ones they stand for (absl::Status, ipc:: messages, core options).
// The only place that knows both; used by the public classes' definitions.

#ifndef CODECVISOR_API_CONVERT_H_
#define CODECVISOR_API_CONVERT_H_

#include "api/absl_interop.h"
#include "codecvisor/host.h"
#include "codecvisor/status.h"
#include "codecvisor/types.h"
#include "core/host.h"
#include "core/video_decoder.h"
#include "ipc/messages.h"

namespace codecvisor::api {

using ::codecvisor::FromAbsl;
using ::codecvisor::ToAbsl;

SeekMode FromIpc(ipc::SeekMode mode);
ipc::SeekMode ToIpc(SeekMode mode);
OutputFormat FromIpc(ipc::OutputFormat format);
ipc::OutputFormat ToIpc(OutputFormat format);

StreamType FromIpc(ipc::StreamType type);
StreamMetadata FromIpc(const ipc::StreamMetadata& metadata);
ipc::FrameRequest ToIpc(const FrameSelection& selection);

// kInvalidArgument for a seek_mode or output_format that is none of its
// enum's values (a cast integer), which ToInternal would take as the default.
Status CheckEnums(const DecoderOptions& options);
internal::DecoderOptions ToInternal(const DecoderOptions& options);
BackendInfo FromInternal(const internal::BackendStatus& status);

}  // namespace codecvisor::api

#endif  // CODECVISOR_API_CONVERT_H_
