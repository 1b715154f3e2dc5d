// File: tools/common/test_video.h
//
// Makes test videos with the ffmpeg CLI (found in PATH): the one way the
// benchmarks, the conformance suite and the backends' tests encode the
// clips they decode. Runs ffmpeg through subprocess.h, so a stuck encoder
// is an error, not a hang. Thread-safe (no shared state); blocks the
// calling thread.

#ifndef CODECVISOR_TOOLS_COMMON_TEST_VIDEO_H_
#define CODECVISOR_TOOLS_COMMON_TEST_VIDEO_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace codecvisor::tools {

// Runs `ffmpeg -nostdin -y -v error ARGS PATH`: ARGS name the input (e.g.
// TestPatternInput()) and the encoder settings, and PATH's extension picks
// the container. OK once ffmpeg exits with status 0; otherwise an error
// naming the command and the end of ffmpeg's stderr (an encoder this
// ffmpeg lacks, say). An existing PATH is overwritten.
[[nodiscard]] absl::Status MakeTestVideo(const std::vector<std::string>& args, const std::string& path);

// The same with ARGS as one string, split at spaces: the form the test
// catalogues write them in. There is no shell and no quoting, so no
// argument can contain a space.
[[nodiscard]] absl::Status MakeTestVideo(absl::string_view args, const std::string& path);

// `-f lavfi -i testsrc2=size=WIDTHxHEIGHT:rate=RATE`: ffmpeg's moving test
// pattern (every frame differs from the one before) as the input.
std::vector<std::string> TestPatternInput(int width, int height, int rate);

}  // namespace codecvisor::tools

#endif  // CODECVISOR_TOOLS_COMMON_TEST_VIDEO_H_
