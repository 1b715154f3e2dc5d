// File: backends/testing/forger.h
//
// A hostile plugin's forgery of the runner's frame records: from inside
// decode_frame it finds the channel region (walking back from its frame
// buffer to the magic), reads the last frame record the runner sent, and
// appends records of its own to the response ring, naming frames the host
// never asked for. A real attacker needs only the published protocol
// (ipc/protocol.capnp) for this; the test backend borrows ipc/'s encoder
// for brevity.

#ifndef CODECVISOR_BACKENDS_TESTING_FORGER_H_
#define CODECVISOR_BACKENDS_TESTING_FORGER_H_

#include <cstdint>

namespace codecvisor::testing {

enum class Forgery {
  // The next frame of the request, but under stream index 1000.
  kWrongIndex,
  // The next frame with its true index, and one more than was asked for.
  kExtraFrame,
  // Batches with no frame that do not end the answer, one every 200 ms
  // for two minutes: progress that never comes.
  kEmptyBatches,
};

// `inside` points into the region's arena (the lent frame buffer). Needs a
// frame record already sent on this channel (strike on the second frame of
// a request or later). Returns false if there was nothing to forge from.
bool ForgeFrameRecords(uint8_t* inside, Forgery forgery);

}  // namespace codecvisor::testing

#endif  // CODECVISOR_BACKENDS_TESTING_FORGER_H_
