// Ctrl-C during a request. A request waits on the backend with the GIL
// released, so Python cannot run its SIGINT handler until the request
// ends: a KeyboardInterrupt would wait for every frame asked for. An
// InterruptWatch, made by a request on the main thread (the only one
// Python runs signal handlers on) while SIGINT's Python handler is the
// default one (which raises KeyboardInterrupt), puts a C handler in front
// of the process's SIGINT handler: it calls the one it replaced (Python's,
// which marks the signal pending) and then notes the signal. The request's
// sink asks Raised() before each frame, which reads that note and nothing
// else (no GIL, no Python code while the decoder's lock is held); a true
// answer fails the sink, which cancels the request in the backend (core: a
// sink's error stops its decoding); the request also polls the note while it
// waits for the backend (ForEachFrame's `interrupted`), so a hung decode
// does not hold the interrupt until its timeout and replay. Once the decoder's lock is released,
// Rethrow() runs Python's pending handlers, which raise KeyboardInterrupt.
// With any other SIGINT handler (the user's own, which may not raise, or
// SIG_IGN / SIG_DFL), on any other thread, or nested, the watch does
// nothing: the request runs to its end and Python handles the signal then.

#ifndef CODECVISOR_PYTHON_CODECVISOR_INTERRUPT_WATCH_H_
#define CODECVISOR_PYTHON_CODECVISOR_INTERRUPT_WATCH_H_

#include <atomic>

namespace codecvisor::python {

class InterruptWatch {
 public:
  // With the GIL held.
  InterruptWatch();
  // With the GIL held: puts the replaced handler back (unless something
  // has replaced ours meanwhile).
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  // Any thread, no GIL: whether SIGINT arrived since the watch began.
  bool Raised() const;
  // The flag Raised() reads, for VideoDecoder::ForEachFrame's
  // `interrupted` (which then also stops a wait on a hung backend); one
  // that is never set when the watch is not active.
  const std::atomic<bool>& Flag() const;
  // With the GIL held, the decoder's lock released: after a SIGINT, runs
  // Python's pending signal handlers and raises what they raised.
  void Rethrow() const;

 private:
  bool active_ = false;
};

}  // namespace codecvisor::python

#endif  // CODECVISOR_PYTHON_CODECVISOR_INTERRUPT_WATCH_H_
