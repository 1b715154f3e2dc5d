#include "core/blame.h"

#include <signal.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace codecvisor {

bool IsFaultSignal(const DeathRecord& death) {
  // A sandbox violation ends with exit code 128 + SIGSYS (the runner is the
  // init of its pid namespace), recorded by the runner.
  if (death.violation_syscall >= 0) return true;
  return death.exit.signaled && (IsCrashSignal(death.exit.code) || death.exit.code == SIGSYS);
}

RequestBlame Judge(const DeathRecord& death, ipc::CrashHints written, uint64_t session) {
  const ipc::CrashHints hints = Corroborated(written, death.exit);
  // A session idle on a generation long gone (its record dropped) only
  // learns of the death now: nothing it asked for was there.
  if (death.forgotten) return RequestBlame{};
  if (death.killed_by_supervisor) return {death.blamed_session == session, false};
  // A fault the runner caught names the culprit's channel exactly.
  if (IsFaultSignal(death) && death.culprit_recorded) return {hints.fault_signal != 0, false};
  // A SIGKILL that codecvisor did not send (an operator, the OOM killer)
  // says nothing about any request: blaming whoever happened to be decoding
  // would turn two unrelated kills into a "poison" verdict for an innocent
  // request (the soak benchmark did exactly that). A request that really
  // gets its backend OOM-killed every time is stopped by the restart
  // budget: the backend is quarantined.
  if (death.exit.signaled && death.exit.code == SIGKILL) return RequestBlame{};
  // exit()/_exit() from vendor code, caught by the sandbox on the calling
  // thread, names the channel of the call that made it.
  if (!death.exit.signaled && death.exit_recorded) return {hints.exit_code >= 0, false};
  // The runner ended itself for a close nobody waits for: the requests in
  // flight are bystanders, replayed as after any restart.
  if (death.close_hung) return RequestBlame{};
  // Any other death (a fault on a plugin's own thread, an exit the sandbox
  // did not see) names nobody: whoever was inside vendor code is a suspect.
  // A suspect alone in there is to blame; several are not, since all but
  // one are bystanders. Either way it replays alone, so that its next
  // death, if it has one, is its own.
  if (hints.in_call == 0) return RequestBlame{};
  return {death.suspects <= 1, true};
}

absl::Status Replays::AfterDeath(const RequestBlame& blame, const DeathRecord& death, const Words& words,
                                 Clock::time_point now) {
  // Blamed, or a suspect (guilty too if it turns out poison).
  if (blame.blamed || blame.replay_alone) {
    guilty_generations_.push_back(death.generation);
    only_hangs_ = only_hangs_ && death.KilledForNoAnswer();
  }
  if (blame.blamed) {
    blamed_.push_back(death.Describe());
    if (advice_.empty()) advice_ = CrashAdvice(death, BacktraceEnabled());
  }
  alone_ = blame.replay_alone;
  if (static_cast<int>(blamed_.size()) >= kPoisonDeaths) {
    return absl::AbortedError(absl::StrCat(words.subject, " killed the backend twice (",
                                           absl::StrJoin(blamed_, "; then "), ")", words.poison_tail, advice_));
  }
  if (deaths_++ == 0) first_ = now;
  if (now - first_ < bound_) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "the backend died ", deaths_, " times in ",
      std::chrono::duration_cast<std::chrono::milliseconds>(now - first_).count(), " ms while ", words.doing,
      " (last: ", death.Describe(), "); giving up", CrashAdvice(death, BacktraceEnabled())));
}

}  // namespace codecvisor
