// File: core/session_opened_check.h
//
// What the host accepts of a backend's answer to an open, besides its list
// of streams (stream_list_check.h): the frame layout, which sizes the
// session's shared memory in the host's own address space, and the
// stream's numbers, which reach the caller. The runner shares its address
// space with vendor code, so both may be lies: a 64x48 stream whose layout
// claims a gigabyte a frame would make the host commit gigabytes; a NaN or
// 1e308 would reach the caller's arithmetic. Pure logic; thread-safe (no
// state).

#ifndef CODECVISOR_CORE_SESSION_OPENED_CHECK_H_
#define CODECVISOR_CORE_SESSION_OPENED_CHECK_H_

#include <cstdint>

#include "absl/status/status.h"
#include "ipc/messages.h"

namespace codecvisor {

// A row of any pixel format the host takes natively holds at most this many
// bytes a pixel (four 32-bit float samples), plus this much alignment.
inline constexpr uint64_t kMaxBytesPerPixel = 16;
inline constexpr uint64_t kMaxRowPadding = 4096;
// A layout may hold more than its planes' visible rows: a backend that
// decodes in place lays out the decoder's pictures, whose rows are aligned
// and padded (avcodec_align_dimensions2) with a tail after each plane. It
// may hold up to twice each plane's rows plus kMaxPaddingRows, and
// kMaxLayoutSlack bytes more.
inline constexpr uint64_t kMaxPaddingRows = 128;
inline constexpr uint64_t kMaxLayoutSlack = 64 * 1024;
// The most frames a stream may claim (at 240 frames a second, over 200 days).
inline constexpr int64_t kMaxStreamFrames = int64_t{1} << 32;
// The largest time a stream may claim, either way (ipc/messages.h); and the
// lowest known rate, a frame in that time.
inline constexpr double kMaxStreamSeconds = ipc::kMaxStreamSeconds;
inline constexpr double kMinKnownFps = 1 / kMaxStreamSeconds;

// OK when `layout` describes frames of its width and height and nothing
// more: a size of 1 to ipc::kMaxFrameSide each way; one plane for RGB24
// (rows of 3 x width bytes or more), three for planar RGB (width or more),
// 1 to ipc::kMaxPlanes natively; each plane's rows at most the height (all
// of it for RGB), its stride at most kMaxBytesPerPixel x width +
// kMaxRowPadding, inside the frame's bytes; and the frame's bytes at most
// kMaxLayoutSlack plus, for each plane, its stride x (2 x its rows +
// kMaxPaddingRows). Otherwise kDataLoss naming the broken rule.
[[nodiscard]] absl::Status CheckLayout(const ipc::FrameLayout& layout);

// OK when the stream's numbers are ones a stream can have: times, rate and
// rotation finite (but a NaN rate, which AcceptStreamNumbers takes as
// unknown); times and durations within kMaxStreamSeconds either way; a
// rate 0 (unknown) or from kMinKnownFps; duration, rate and bit rate not negative; the end not
// before the beginning; a rotation within a turn either way; frame counts
// -1 (unknown) or 0 to kMaxStreamFrames. Otherwise kDataLoss naming the
// field and its value.
[[nodiscard]] absl::Status CheckStreamNumbers(const ipc::StreamMetadata& metadata);

// SECURITY: runs before the session's shared memory is sized from the
// layout. CheckLayout, and: without an output size asked for (`asked` 0 x
// 0), the layout's size is the stream's; a native layout in place of the
// RGB asked for is the stream's pixel format, one the host offered, of a
// stream not rotated, with no output size asked for. A violation is the
// backend's lie (kDataLoss, a channel error: the backend is replaced).
[[nodiscard]] absl::Status CheckSessionLayout(const ipc::SessionOpened& opened, const ipc::OpenSession& asked);

// CheckStreamNumbers, after which a NaN average_fps (a backend's av_q2d of
// an unknown 0/0) becomes 0, the host's unknown rate, and a time base that
// is not two positive 32-bit integers 0/1, unknown. A violation may be
// an honest backend passing on a crafted file's header as much as a lie:
// the open fails (kDataLoss) but the backend is not replaced.
[[nodiscard]] absl::Status AcceptStreamNumbers(ipc::StreamMetadata* metadata);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_SESSION_OPENED_CHECK_H_
