// _codecvisor.Host: backends and decoders opened from paths or bytes.
#ifndef CODECVISOR_PYTHON_CODECVISOR_HOST_BINDINGS_H_
#define CODECVISOR_PYTHON_CODECVISOR_HOST_BINDINGS_H_

#include "pybind11/pybind11.h"

namespace codecvisor::python {

void DefineHost(pybind11::module_& m);

}  // namespace codecvisor::python

#endif  // CODECVISOR_PYTHON_CODECVISOR_HOST_BINDINGS_H_
