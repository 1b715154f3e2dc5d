// _codecvisor.Decoder: a VideoDecoder whose requests return batches (numpy
// arrays the caller owns), waiting on the backend with the GIL released.

#ifndef CODECVISOR_PYTHON_CODECVISOR_DECODER_BINDINGS_H_
#define CODECVISOR_PYTHON_CODECVISOR_DECODER_BINDINGS_H_

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "codecvisor/codecvisor.h"
#include "pybind11/pybind11.h"
#include "python/codecvisor/batch.h"
#include "python/codecvisor/converter_pool.h"
#include "python/codecvisor/dicts.h"
#include "python/codecvisor/owned.h"
#include "python/codecvisor/status_bridge.h"

namespace codecvisor::python {

class PyDecoder {
 public:
  // `format`: what batches hold, kRgb24 or kRgb24Planar.
  PyDecoder(std::unique_ptr<VideoDecoder> decoder, OutputFormat format)
      : decoder_(std::move(decoder)), format_(format) {}

  OutputFormat format() const { return format_; }

  pybind11::dict metadata() { return MetadataDict(decoder_.get("this decoder").metadata()); }
  std::string backend_name() { return decoder_.get("this decoder").backend_name(); }
  uint64_t retries() { return decoder_.get("this decoder").retries(); }
  void close() { decoder_.Reset(); }

  pybind11::tuple Decode(const FrameSelection& selection, size_t expected) {
    Batch batch(expected, format_);
    return Fill(selection, batch);
  }

  pybind11::tuple Fill(const FrameSelection& selection, Batch& batch) {
    VideoDecoder& decoder = decoder_.get("this decoder");
    Status status;
    {
      pybind11::gil_scoped_release release;
      std::unique_ptr<RgbConverter> rgb = converters_.Take(decoder);
      batch.UseConverter(rgb.get());
      status = decoder.ForEachFrame(selection, [&batch](Frame f) { return batch.Add(f); });
      batch.UseConverter(nullptr);
      converters_.Give(std::move(rgb));
    }
    Check(status);
    Check(batch.Complete());
    return batch.ToNumpy();
  }

 private:
  Owned<VideoDecoder> decoder_;
  const OutputFormat format_;
  ConverterPool converters_;
};

void DefineDecoder(pybind11::module_& m);

}  // namespace codecvisor::python

#endif  // CODECVISOR_PYTHON_CODECVISOR_DECODER_BINDINGS_H_
