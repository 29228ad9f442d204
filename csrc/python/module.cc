#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace strider::python {
void bind_cuda(py::module_& m);
void bind_dispatch(py::module_& m);
void bind_ir(py::module_& m);
void bind_runtime(py::module_& m);
}  // namespace strider::python

PYBIND11_MODULE(_C, m) {
  m.doc() = "strider's C++ core: IR, analyses, passes and the reference executor; CUDA C emission and NVRTC";
  strider::python::bind_ir(m);
  strider::python::bind_runtime(m);
  strider::python::bind_dispatch(m);
  strider::python::bind_cuda(m);
  // the emulated CUDA device's libraries, where the build that made this module built them with the tests
#if defined(STRIDER_FAKE_CUDA) && defined(STRIDER_FAKE_NVRTC)
  py::dict emulated;
  emulated["driver"] = STRIDER_FAKE_CUDA;
  emulated["nvrtc"] = STRIDER_FAKE_NVRTC;
  m.attr("emulated_cuda") = emulated;
#else
  m.attr("emulated_cuda") = py::none();
#endif
}
