// File: codecvisor/codecvisor.h
//
// codecvisor's C++ API in one include: video decoding through sandboxed,
// supervised backend processes. Start with Host (host.h).

#ifndef CODECVISOR_CODECVISOR_H_
#define CODECVISOR_CODECVISOR_H_

#include "codecvisor/frame.h"
#include "codecvisor/host.h"
#include "codecvisor/rgb_converter.h"
#include "codecvisor/status.h"
#include "codecvisor/types.h"
#include "codecvisor/video_decoder.h"

namespace codecvisor {

// The library's version, e.g. "0.1.0": the one linked, not the headers'.
const char* Version();

inline constexpr int kVersionMajor = 0;
inline constexpr int kVersionMinor = 1;
inline constexpr int kVersionPatch = 0;

}  // namespace codecvisor

#endif  // CODECVISOR_CODECVISOR_H_
