#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "codegen/cuda/cuda_codegen.h"
#include "runtime/cuda_loader.h"
#include "runtime/flags.h"
#include "transforms/passes.h"

namespace py = pybind11;

namespace strider::python {

namespace {

// Per stage of a lowered program: f(stage, index) as a Python object, or the reason (str) the CUDA
// backend refuses the stage.
template <typename F>
py::list per_stage(const Program& p, F&& f) {
  py::list out;
  for (size_t i = 0; i < p.stages.stages.size(); ++i) {
    try {
      out.append(f(p.stages.stages[i], i));
    } catch (const std::invalid_argument& e) {
      out.append(py::str(e.what()));
    }
  }
  return out;
}

const Nvrtc& nvrtc() {
  const Nvrtc* n = Nvrtc::get();
  if (!n) throw std::runtime_error(nvrtc_unavailable_reason());
  return *n;
}

}  // namespace

void bind_cuda(py::module_& m) {
  py::class_<CudaLaunch>(m, "CudaLaunch")
      .def_readonly("kernel", &CudaLaunch::kernel)
      .def_readonly("blocks", &CudaLaunch::blocks)
      .def_readonly("threads", &CudaLaunch::threads);
  py::class_<CudaStage>(m, "CudaStage")
      .def_readonly("name", &CudaStage::name)
      .def_readonly("source", &CudaStage::source)
      .def_readonly("params", &CudaStage::params)
      .def_readonly("launches", &CudaStage::launches)
      .def_readonly("error_flag", &CudaStage::error_flag)
      .def_readonly("scratch_bytes", &CudaStage::scratch_bytes);

  m.def("cuda_source",
        [](const Program& p) {
          return per_stage(p, [&](const Stage& s, size_t i) {
            CudaStage st = emit_cuda_stage(p.graph, s);
            debug_dump_text(p.graph.name + ".stage" + std::to_string(i) + ".cu", st.source);
            return py::cast(std::move(st));
          });
        },
        py::arg("program"), "per stage: its CudaStage (CUDA C and launches), or why the CUDA backend refuses it (str)");
  m.def("cuda_compile",
        [](const Program& p, const std::string& arch) {
          return per_stage(p, [&](const Stage& s, size_t) {
            CudaCompiled c;
            {
              py::gil_scoped_release release;
              c = compile_cuda_stage(p.graph, s, arch);
            }
            return py::make_tuple(c.stage.name, py::bytes(c.cubin), c.from_disk);
          });
        },
        py::arg("program"), py::arg("arch"),
        "per stage: (kernel name, cubin, loaded from the disk cache), or why the CUDA backend refuses it (str)");
  m.def("nvrtc_compile",
        [](const std::string& source, const std::string& arch, const std::string& file) {
          std::string cubin;
          {
            py::gil_scoped_release release;
            cubin = nvrtc().compile_cubin(source, file, arch, cuda_compile_options());
          }
          return py::bytes(cubin);
        },
        py::arg("source"), py::arg("arch"), py::arg("file") = "stage.cu",
        "compiles CUDA C to a cubin for arch ('sm_90') with the backend's options; RuntimeError with NVRTC's log");
  m.def("nvrtc_version", [] { return nvrtc().version(); });
  m.def("nvrtc_unavailable_reason", &nvrtc_unavailable_reason, "empty when NVRTC loads");
  m.def("cuda_unavailable_reason", py::overload_cast<>(&cuda_unavailable_reason),
        "why kernels cannot run on a GPU here, in one sentence; empty when they can");
  m.def("cuda_device_arch", &cuda_device_arch, "'sm_90': device 0's architecture; empty without one");
}

}  // namespace strider::python
