// File: core/blame.h
//
// What a backend death makes of one request: pure functions of the death
// the supervisor recorded and the crash hints on the request's channel
// (core/README.md, "Blame"), and the bookkeeping of one request's replays.
// No process, no clock of their own: times are passed in, so the rules are
// tested with tables (blame_test.cc).
//
// Thread-safety: the functions are pure; a Replays belongs to one request.

#ifndef CODECVISOR_CORE_BLAME_H_
#define CODECVISOR_CORE_BLAME_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/death_record.h"
#include "ipc/channel.h"

namespace codecvisor {

// What one backend death makes of one request.
struct RequestBlame {
  bool blamed = false;        // counts toward the poison verdict
  bool replay_alone = false;  // a suspect: its next attempt passes the gate alone
};

// Whether the death was a fault: a fault signal (SEGV, BUS, FPE, ILL, ABRT,
// SYS, TRAP), or a sandbox violation the runner recorded (it ends with exit
// code 128 + SIGSYS, the runner being the init of its pid namespace).
bool IsFaultSignal(const DeathRecord& death);

// What `death` and `hints` (the request's channel, read after the death)
// say of the request of session `session`:
// - killed by the supervisor: blamed if this session triggered the kill;
// - a fault recorded on a thread inside a vendor call: blamed if it was
//   this channel's;
// - a SIGKILL codecvisor did not send: nobody;
// - an exit() the sandbox caught inside a vendor call: blamed if it was
//   this channel's;
// - anything else: a request inside vendor code is a suspect, replays
//   alone, and is blamed only if it was the only suspect.
RequestBlame Judge(const DeathRecord& death, ipc::CrashHints hints, uint64_t session);

// What one request (or open) has learnt from the backend deaths during it.
// Two deaths that blame it make it poison. A suspect of the last death
// replays alone. And however the deaths fall, it is given up four times its
// own timeout after the first: deaths that blame nobody (an outside
// SIGKILL, say) are replayed, and the restart budget that ends a crash loop
// is made whole by other sessions' successes, so without this bound such
// a request could replay forever (every attempt may take a whole timeout).
class Replays {
 public:
  using Clock = std::chrono::steady_clock;

  // Blamed deaths that make a request poison.
  static constexpr int kPoisonDeaths = 2;

  // How the verdicts name the request: "<subject> killed the backend
  // twice (<deaths>)<poison_tail>", and "... while <doing> ...; giving up".
  struct Words {
    std::string subject, doing, poison_tail;
  };

  explicit Replays(std::chrono::milliseconds timeout) : bound_(4 * timeout) {}
  // After each death, seen at `now`: kAborted for poison, kUnavailable past
  // the bound, or OK to replay.
  [[nodiscard]] absl::Status AfterDeath(const RequestBlame& blame, const DeathRecord& death, const Words& words,
                                        Clock::time_point now);
  // Whether the next attempt passes the backend's gate alone.
  bool alone() const { return alone_; }
  // The generations whose deaths a poison verdict holds it guilty of, for
  // the restart budget (RestartPolicy::OnPoison): those that blamed it, and
  // those it was one of several suspects of (once it has killed the backend
  // twice on its own, the bystanders' replays having succeeded, the first
  // death was its too).
  const std::vector<uint64_t>& guilty_generations() const { return guilty_generations_; }
  // Whether every death it is guilty of (guilty_generations) was a kill for
  // no answer in time.
  bool blamed_only_for_hangs() const { return only_hangs_; }

 private:
  const std::chrono::milliseconds bound_;
  std::vector<std::string> blamed_;  // how each death that blamed it ended
  std::vector<uint64_t> guilty_generations_;
  std::string advice_;                // CrashAdvice for the first of them
  bool alone_ = false;
  bool only_hangs_ = true;
  int deaths_ = 0;
  Clock::time_point first_;
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_BLAME_H_
