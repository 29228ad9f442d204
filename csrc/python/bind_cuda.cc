#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "device_array.h"
#include "runtime/cuda_executor.h"

#include "codegen/cuda/cuda_codegen.h"
#include "runtime/cuda_loader.h"
#include "support/flags.h"
#include "driver/driver.h"

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

// Device memory strider allocated for a result (freed with its last view).
struct DeviceBuffer {
  int ordinal;
  uint64_t ptr;
  DeviceBuffer(int o, size_t bytes) : ordinal(o), ptr(cuda_alloc(o, bytes)) {}
  ~DeviceBuffer() { cuda_free(ordinal, ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

py::dtype dtype_of(int typenum) {
  return py::reinterpret_steal<py::dtype>(reinterpret_cast<PyObject*>(PyArray_DescrFromType(typenum)));
}

// A contiguous NumPy array's bytes, checked against the device range's size.
char* bytes_of(const py::array& a, size_t bytes) {
  if (!(a.flags() & py::array::c_style) || static_cast<size_t>(a.nbytes()) != bytes)
    throw std::invalid_argument("a C-contiguous array of " + std::to_string(bytes) + " bytes expected");
  return static_cast<char*>(const_cast<void*>(a.data()));
}

}  // namespace

DeviceArray device_array_empty(int ordinal, std::vector<int64_t> shape, int typenum) {
  DeviceArray a;
  a.typenum = typenum;
  a.itemsize = static_cast<int>(dtype_of(typenum).itemsize());
  a.strides = byte_strides(contiguous_strides(shape), a.itemsize);
  auto buf = std::make_shared<DeviceBuffer>(ordinal, static_cast<size_t>(shape_numel(shape) * a.itemsize));
  a.ptr = buf->ptr;
  a.shape = std::move(shape);
  a.ordinal = ordinal;
  a.owner = py::cast(std::move(buf));
  return a;
}

void bind_cuda(py::module_& m) {
  if (PyArray_API == nullptr && _import_array() < 0) throw py::error_already_set();
  py::class_<DeviceArray> da(m, "DeviceArray",
                             "An array in GPU memory: a call's argument (from __cuda_array_interface__ or DLPack) or a "
                             "result for callers of no library strider knows; its __cuda_array_interface__ lets CuPy, "
                             "PyTorch and Numba take it without a copy");
  da.def(py::init([](uint64_t ptr, std::vector<int64_t> shape, std::vector<int64_t> strides, const py::dtype& dtype,
                     bool writeable, int ordinal, py::object owner) {
           if (shape.size() != strides.size()) throw std::invalid_argument("shape and strides differ in length");
           DeviceArray a;
           a.ptr = ptr;
           a.shape = std::move(shape);
           a.strides = std::move(strides);
           a.typenum = dtype.num();
           a.itemsize = static_cast<int>(dtype.itemsize());
           a.writeable = writeable;
           a.ordinal = ordinal;
           a.owner = std::move(owner);
           return a;
         }),
         py::arg("ptr"), py::arg("shape"), py::arg("strides"), py::arg("dtype"), py::arg("writeable"),
         py::arg("ordinal"), py::arg("owner"))
      .def("as_leaf",
           [](const py::object& self) {
             DeviceArray a = self.cast<DeviceArray>();
             a.owner = self;
             return a;
           },
           "the same array as a call's leaf, owned by this one")
      .def_static("from_dlpack", &device_array_from_dlpack, py::arg("value"), py::arg("stream"),
                  py::arg("writeable") = true, "value's __dlpack__(stream=stream) capsule as an array, no copy")
      .def("__dlpack__", &device_array_to_dlpack, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(), py::arg("copy") = py::none())
      .def("__dlpack_device__", [](const DeviceArray& a) { return py::make_tuple(2, a.ordinal); })  // kDLCUDA
      .def_static("empty", &device_array_empty,
                  py::arg("ordinal"), py::arg("shape"), py::arg("typenum"),
                  "a C-contiguous array of NumPy type number `typenum` in new device memory it owns")
      .def_readonly("ptr", &DeviceArray::ptr)
      .def_property_readonly("shape", [](const DeviceArray& a) { return py::tuple(py::cast(a.shape)); })
      .def_property_readonly("strides", [](const DeviceArray& a) { return py::tuple(py::cast(a.strides)); })
      .def_property_readonly("dtype", [](const DeviceArray& a) { return dtype_of(a.typenum); })
      .def_readonly("writeable", &DeviceArray::writeable)
      .def_readonly("ordinal", &DeviceArray::ordinal)
      .def_readonly("owner", &DeviceArray::owner)
      .def_property_readonly("__cuda_array_interface__", [](const DeviceArray& a) {
        py::dict d;
        d["shape"] = py::tuple(py::cast(a.shape));
        d["typestr"] = dtype_of(a.typenum).attr("str");
        d["data"] = py::make_tuple(a.ptr, !a.writeable);
        d["strides"] = py::tuple(py::cast(a.strides));
        d["version"] = 3;
        d["stream"] = 1;  // strider's kernels for callers of no array library run on the legacy stream
        return d;
      });
  da.attr("__hash__") = py::none();  // a leaf, never a static value (the dispatcher hashes those)
  py::class_<DeviceBuffer, std::shared_ptr<DeviceBuffer>>(m, "DeviceBuffer")
      .def(py::init<int, size_t>(), py::arg("ordinal"), py::arg("bytes"))
      .def_readonly("ptr", &DeviceBuffer::ptr)
      .def_readonly("ordinal", &DeviceBuffer::ordinal);
  py::class_<CudaProgram, std::shared_ptr<CudaProgram>>(m, "CudaProgram")
      .def(py::init([](std::shared_ptr<Program> program, int ordinal) {
             py::gil_scoped_release release;  // NVRTC may compile for a while
             return cuda_program(std::move(program), ordinal);
           }),
           py::arg("program"), py::arg("ordinal"))
      .def_property_readonly("arch", &CudaProgram::arch)
      .def_property_readonly("fallbacks", &CudaProgram::fallbacks)
      .def_property_readonly("compiled", &CudaProgram::compiled)
      .def_property_readonly("disk_hits", &CudaProgram::disk_hits);
  m.def("cuda_pointer_ordinal", &cuda_pointer_ordinal, py::arg("ptr"), "the CUDA device holding ptr");
  m.def("cuda_download",
        [](int ordinal, uint64_t src, py::array dst) { cuda_download(ordinal, bytes_of(dst, dst.nbytes()), src, dst.nbytes()); },
        py::arg("ordinal"), py::arg("src"), py::arg("dst"), "copies device memory at src into the contiguous array dst");
  m.def("cuda_upload",
        [](int ordinal, uint64_t dst, const py::array& src) { cuda_upload(ordinal, dst, bytes_of(src, src.nbytes()), src.nbytes()); },
        py::arg("ordinal"), py::arg("dst"), py::arg("src"), "copies the contiguous array src to device memory at dst");
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
  m.def("cuda_device_arch", &cuda_device_arch, py::arg("ordinal") = 0,
        "'sm_90': the device's architecture; empty without one");
}

}  // namespace strider::python
