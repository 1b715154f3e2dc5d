// ConverterPool: the RgbConverters of one decoder, reused from request to
// request (each keeps a swscale context made for the stream). A request takes
// one for its whole run and gives it back; requests from several Python
// threads at once each get their own.

#ifndef CODECVISOR_PYTHON_CODECVISOR_CONVERTER_POOL_H_
#define CODECVISOR_PYTHON_CODECVISOR_CONVERTER_POOL_H_

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "codecvisor/codecvisor.h"

namespace codecvisor::python {

class ConverterPool {
 public:
  // A free converter for `decoder`'s stream, or a new one.
  std::unique_ptr<RgbConverter> Take(const VideoDecoder& decoder) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        std::unique_ptr<RgbConverter> rgb = std::move(free_.back());
        free_.pop_back();
        return rgb;
      }
    }
    return std::make_unique<RgbConverter>(decoder.metadata());
  }

  // Keeps `rgb` for a later request (up to kKept; more are freed).
  void Give(std::unique_ptr<RgbConverter> rgb) {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() < kKept) free_.push_back(std::move(rgb));
  }

 private:
  static constexpr size_t kKept = 2;
  std::mutex mu_;
  std::vector<std::unique_ptr<RgbConverter>> free_;
};

}  // namespace codecvisor::python

#endif  // CODECVISOR_PYTHON_CODECVISOR_CONVERTER_POOL_H_
