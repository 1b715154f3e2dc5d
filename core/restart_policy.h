// File: core/restart_policy.h
//
// When to restart a crashed backend, and when to stop: an OTP-style
// intensity limit (at most `max_restarts` in `window`) with exponential
// backoff between restarts. Crashes that a poison request (or open) was
// found guilty of are taken off the budget once it is judged: they tell of
// that input, not of a backend that crashes whatever it is given, so a run
// of bad files does not stop every decoder in the process. A backend that
// crashes again after `max_poison_in_a_row` verdicts with no success
// between is stopped all the same (it may crash on everything). The budget
// is whole again only once `heal_after_successes` requests in a row were
// served without a crash, so a backend that crashes on every other request
// (its replays succeeding) is quarantined like one that crashes on every
// request. A quarantine lasts a while (a minute, longer for each one that
// follows before the budget heals), so a burst of deaths from outside does
// not stop a long job for good. Pure logic on the times it is given, so it is tested without
// processes or clocks. Not thread-safe: the Supervisor owns one per backend
// under its lock.

#ifndef CODECVISOR_CORE_RESTART_POLICY_H_
#define CODECVISOR_CORE_RESTART_POLICY_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <span>

namespace codecvisor {

// Defaults are documented in core/README.md; a manifest's [restart] table
// overrides them. For scale: VS Code stops after 3 crashes in 5 minutes;
// Firefox's decoder allows 2 crashes per track.
struct RestartLimits {
  int max_restarts = 5;                                  // restarts allowed per window...
  std::chrono::milliseconds window{60'000};              // ...of this length
  std::chrono::milliseconds backoff_initial{10};         // the second restart waits this long
  std::chrono::milliseconds backoff_max{2'000};          // and each later one twice the last, up to this
  // Poison verdicts within the window, with no success between, whose
  // crashes leave the budget; a crash after that many quarantines. 0: a
  // poison request's crashes count like any other.
  int max_poison_in_a_row = 8;
  // Requests served in a row since the last crash still in the budget (a
  // replay that succeeds is one) that make the budget whole again: 3 takes
  // a backend that crashes on every request, or every other one, for
  // crash-looping, and one that serves a few between crashes for flaky.
  int heal_after_successes = 3;
  // How long a quarantine lasts: then the budget is whole and the next
  // request starts the backend again. Each quarantine that comes before
  // the budget healed lasts twice the last, up to quarantine_max. 0: until
  // an explicit reset. A long job whose machine killed its backends in a
  // burst (an OOM storm) decodes again a minute later; a plugin that
  // crashes on everything costs a few crashes every quarter of an hour.
  std::chrono::milliseconds quarantine{60'000};
  std::chrono::milliseconds quarantine_max{900'000};
};

class RestartPolicy {
 public:
  using Clock = std::chrono::steady_clock;

  struct Decision {
    bool quarantine = false;                 // too many crashes: stop restarting
    bool after_poison = false;               // (the quarantine) a crash after max_poison_in_a_row verdicts
    std::chrono::milliseconds delay{0};      // otherwise restart after this long
  };

  explicit RestartPolicy(RestartLimits limits = {}) : limits_(limits) {}

  // Records a crash at `now` (of the child of `generation`; 0: a restart
  // that failed) and decides. The first crash in a quiet period restarts at
  // once; each further one within the window backs off; the
  // (max_restarts + 1)-th within the window quarantines, and so does any
  // crash after max_poison_in_a_row (> 0) poison verdicts within the
  // window with no success between.
  Decision OnCrash(Clock::time_point now, uint64_t generation = 0);
  // A request (or open) was judged poison at `now`, guilty of the deaths of
  // `generations`: their crashes leave the budget (unless
  // max_poison_in_a_row is 0), and the verdict counts toward that limit.
  // With `toward_quarantine` false (the deaths were kills for a deadline
  // the caller made shorter than the default: its choice, not a sign of a
  // broken backend) the crashes leave the budget and the verdict does not
  // count toward the limit; with the limit 0 they count like any crash.
  void OnPoison(std::span<const uint64_t> generations, Clock::time_point now, bool toward_quarantine = true);
  // A request succeeded: it ends a run of poison verdicts, and the
  // heal_after_successes-th success in a row since the last crash makes the
  // budget whole again.
  void OnSuccess();
  // A quarantine begins (after OnCrash decided it): how long it lasts
  // (RestartLimits::quarantine, doubled for each one before it since the
  // budget last healed, up to quarantine_max); 0: until Reset.
  std::chrono::milliseconds OnQuarantine();
  // A quarantine's time is over: the budget is whole, and the next one
  // before it heals lasts longer.
  void LiftQuarantine();
  // Lifts a quarantine (an operator's explicit reset): the budget is
  // whole, and the next quarantine lasts RestartLimits::quarantine.
  void Reset();

  int crashes_in_window() const { return static_cast<int>(crashes_.size()); }
  // Poison verdicts since the last success, within the window as of the
  // last crash or verdict.
  int poison_in_a_row() const { return static_cast<int>(poison_.size()); }
  // Requests served since the latest crash still in the budget (0 with
  // none): a crash a poison verdict took off the budget does not end the
  // run of successes since the one before it.
  int successes_since_crash() const;
  const RestartLimits& limits() const { return limits_; }

 private:
  struct Crash {
    Clock::time_point when;
    uint64_t generation;
    uint64_t successes_before;  // successes_ when it happened
  };
  void Expire(Clock::time_point now);
  // Makes the budget whole once enough requests were served since the
  // latest crash in it.
  void HealIfServedEnough();

  RestartLimits limits_;
  std::deque<Crash> crashes_;               // within the window, oldest first
  std::deque<Clock::time_point> poison_;    // verdicts since the last success, within the window
  uint64_t successes_ = 0;                  // requests served, ever
  int quarantines_ = 0;                     // since the budget last healed
  uint64_t successes_at_lift_ = 0;          // successes_ when the last quarantine was lifted
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_RESTART_POLICY_H_
