// The C++ API's metadata and backend records as Python dicts.

#ifndef CODECVISOR_PYTHON_CODECVISOR_DICTS_H_
#define CODECVISOR_PYTHON_CODECVISOR_DICTS_H_

#include "codecvisor/codecvisor.h"
#include "pybind11/pybind11.h"

namespace codecvisor::python {

pybind11::dict MetadataDict(const StreamMetadata& m);
pybind11::dict BackendDict(const BackendInfo& b);

}  // namespace codecvisor::python

#endif  // CODECVISOR_PYTHON_CODECVISOR_DICTS_H_
