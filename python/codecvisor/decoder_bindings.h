// _codecvisor.Decoder: a VideoDecoder whose requests return batches (numpy
// arrays the caller owns), waiting on the backend with the GIL released.

#ifndef CODECVISOR_PYTHON_CODECVISOR_DECODER_BINDINGS_H_
#define CODECVISOR_PYTHON_CODECVISOR_DECODER_BINDINGS_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "codecvisor/codecvisor.h"
#include "pybind11/pybind11.h"
#include "python/codecvisor/batch.h"
#include "python/codecvisor/converter_pool.h"
#include "python/codecvisor/dicts.h"
#include "python/codecvisor/interrupt_watch.h"
#include "python/codecvisor/owned.h"
#include "python/codecvisor/status_bridge.h"

namespace codecvisor::python {

// Python threads may share one decoder, where a VideoDecoder serves one
// thread at a time: every call takes the decoder's lock, so requests on one
// decoder run one after another and close() waits for the request in
// flight. The lock is taken with the GIL released (a request holds it for
// as long as the backend takes, and other Python threads run meanwhile) and
// released before the GIL is taken back.
class PyDecoder {
 public:
  // `format`: what batches hold, kRgb24 or kRgb24Planar.
  PyDecoder(std::unique_ptr<VideoDecoder> decoder, OutputFormat format)
      : decoder_(std::move(decoder)), format_(format) {}

  OutputFormat format() const { return format_; }

  pybind11::dict metadata() {
    StreamMetadata m = WithDecoder([](VideoDecoder& d) { return d.metadata(); });
    return MetadataDict(m);
  }
  pybind11::str backend_name() {
    return Text(WithDecoder([](VideoDecoder& d) { return d.backend_name(); }));
  }
  uint64_t retries() {
    return WithDecoder([](VideoDecoder& d) { return d.retries(); });
  }
  // Waits for another thread's request in flight; Ctrl-C (on the main
  // thread) ends the wait with KeyboardInterrupt, the decoder left open.
  void close() {
    InterruptWatch interrupt;
    (void)LockedUnlessInterrupted(interrupt, [this] {
      decoder_.Reset();
      return Status();
    });
    interrupt.Rethrow();
  }

  // For the tests only (python/tests/test_concurrency.py, which must know
  // when another thread's call holds the decoder, and when a call waits for
  // it, to send Ctrl-C then): whether a call holds the decoder's lock (its
  // InterruptWatch made, the call under way), and how many calls found it
  // held and wait for it (their InterruptWatch made, Ctrl-C now ends their
  // wait). Neither takes the lock.
  bool TestCallInFlight() const { return test_holding_.load() > 0; }
  int TestCallsWaiting() const { return test_waiting_.load(); }

  pybind11::tuple Decode(const FrameSelection& selection, size_t expected) {
    Batch batch(expected, format_);
    return Fill(selection, batch);
  }

  // Ctrl-C stops the request at the next frame (interrupt_watch.h).
  pybind11::tuple Fill(const FrameSelection& selection, Batch& batch) {
    InterruptWatch interrupt;
    const Status status = WithDecoderUnlessInterrupted(interrupt, [&](VideoDecoder& decoder) {
      std::unique_ptr<RgbConverter> rgb = converters_.Take(decoder);
      batch.UseConverter(rgb.get());
      Status s = decoder.ForEachFrame(
          selection,
          [&](Frame f) {
            if (interrupt.Raised()) return Status(StatusCode::kCancelled, "interrupted");
            return batch.Add(f);
          },
          interrupt.Flag());
      batch.UseConverter(nullptr);
      converters_.Give(std::move(rgb));
      return s;
    });
    interrupt.Rethrow();
    if (!batch.out_of_memory().empty()) {
      PyErr_SetString(PyExc_MemoryError, batch.out_of_memory().c_str());
      throw pybind11::error_already_set();
    }
    Check(status);
    Check(batch.Complete());
    return batch.ToNumpy();
  }

 private:
  // fn() (a value) with the GIL released and the lock held, as
  // LockedUnlessInterrupted: a property read while another thread's request
  // holds the decoder ends with KeyboardInterrupt on Ctrl-C, as a request
  // does.
  template <typename Fn>
  std::invoke_result_t<Fn> Locked(Fn fn) {
    InterruptWatch interrupt;
    std::optional<std::invoke_result_t<Fn>> value;
    const Status status = LockedUnlessInterrupted(interrupt, [&] {
      value.emplace(fn());
      return Status();
    });
    interrupt.Rethrow();
    if (!value.has_value()) Check(status);
    return *std::move(value);
  }
  // fn(decoder), Locked. ValueError once closed (by another thread, while
  // this one waited for the lock).
  template <typename Fn>
  std::invoke_result_t<Fn, VideoDecoder&> WithDecoder(Fn fn) {
    return Locked([&] { return fn(OpenDecoder()); });
  }
  // WithDecoder for a request: while it waits for the lock (another
  // thread's request on this decoder), Ctrl-C ends the wait (kCancelled;
  // the caller's interrupt.Rethrow() then raises).
  template <typename Fn>
  Status WithDecoderUnlessInterrupted(const InterruptWatch& interrupt, Fn fn) {
    return LockedUnlessInterrupted(interrupt, [&] { return fn(OpenDecoder()); });
  }
  // fn() (a Status) with the GIL released and the lock held, unless Ctrl-C
  // comes while the lock is awaited (kCancelled). The lock is released
  // before the GIL is taken back (where Python may end the thread as the
  // interpreter exits: WithoutGil). A forked child's decoder is its
  // parent's: that is refused before the lock, which a parent thread may
  // have held at the fork.
  template <typename Fn>
  Status LockedUnlessInterrupted(const InterruptWatch& interrupt, Fn fn) {
    decoder_.CheckOwner("this decoder");
    return WithoutGil([&] {
      std::unique_lock<std::timed_mutex> lock(mu_, std::defer_lock);
      if (!lock.try_lock()) {
        Counted waiting(test_waiting_);
        while (!lock.try_lock_for(kInterruptPoll)) {
          if (interrupt.Raised()) return Status(StatusCode::kCancelled, "interrupted waiting for the decoder");
        }
      }
      Counted holding(test_holding_);  // ends before the lock is released
      return fn();
    });
  }
  // The decoder, with the lock held; ValueError once closed.
  VideoDecoder& OpenDecoder() {
    VideoDecoder* decoder = decoder_.get_if_open("this decoder");
    if (decoder == nullptr) throw pybind11::value_error("the decoder is closed");
    return *decoder;
  }

  // How often a request waiting for another's lock looks for Ctrl-C.
  static constexpr std::chrono::milliseconds kInterruptPoll{20};

  // One more in `count` for the scope's life.
  struct Counted {
    explicit Counted(std::atomic<int>& c) : count(c) { count.fetch_add(1); }
    ~Counted() { count.fetch_sub(1); }
    Counted(const Counted&) = delete;
    Counted& operator=(const Counted&) = delete;
    std::atomic<int>& count;
  };

  std::timed_mutex mu_;  // held for each call on decoder_
  // For the tests only (TestCallInFlight, TestCallsWaiting): calls holding
  // mu_ (0 or 1), and calls that found it held and wait for it.
  std::atomic<int> test_holding_{0};
  std::atomic<int> test_waiting_{0};
  Owned<VideoDecoder> decoder_;
  const OutputFormat format_;
  ConverterPool converters_;
};

void DefineDecoder(pybind11::module_& m);

}  // namespace codecvisor::python

#endif  // CODECVISOR_PYTHON_CODECVISOR_DECODER_BINDINGS_H_
