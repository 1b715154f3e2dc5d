// File: backends/sdk/runner/abi_convert.h
//
// Conversions between the vendor C ABI's structs and the protocol's values.
// The vendor's fixed-size strings are read up to their first NUL or their
// size, whichever comes first, so an unterminated name cannot overrun.

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_ABI_CONVERT_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_ABI_CONVERT_H_

#include <string>

#include "absl/status/status.h"
#include "backends/sdk/codecvisor_backend.h"
#include "ipc/messages.h"

namespace codecvisor::runner {

ipc::StreamMetadata FromAbi(const cv_stream_metadata& m);
ipc::FrameLayout FromAbi(const cv_frame_layout& l);
// The result points into `open` and `native_formats` (the list, comma-joined,
// stored there), which must outlive its use.
cv_open_options ToAbi(const ipc::OpenSession& open, std::string& native_formats);
// A failed vendor call as a Status carrying the vendor's own message.
absl::Status VendorError(cv_status status, const cv_error& error);
// A Status as the protocol's Error.
ipc::Error ToWireError(const absl::Status& status);

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_ABI_CONVERT_H_
