#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "codegen/llvm/codegen.h"
#include "runtime/data_dependent.h"
#include "runtime/executor.h"
#include "driver/driver.h"
#include "runner.h"

namespace py = pybind11;

namespace strider::python {

void bind_runtime(py::module_& m) {
  py::class_<Program, std::shared_ptr<Program>>(m, "Program")
      .def_readonly("graph", &Program::graph)
      .def_property_readonly("edges",
                             [](const Program& p) {
                               std::vector<std::tuple<int, int, std::string>> out;
                               for (const DepEdge& e : build_dependence_dag(p.graph, p.table).edges)
                                 out.emplace_back(e.src, e.dst, dep_name(e.kind));
                               return out;
                             })
      .def_property_readonly("table_text", [](const Program& p) { return print_storage_table(p.graph, p.table); })
      .def_property_readonly("dag_text", [](const Program& p) { return print_dag(build_dependence_dag(p.graph, p.table)); })
      .def_property_readonly("stages_text", [](const Program& p) { return print_stages(p.graph, p.stages); })
      .def_property_readonly("stages",
                             [](const Program& p) {
                               py::list out;
                               for (const Stage& s : p.stages.stages)
                                 out.append(py::dict(py::arg("domain") = s.domain, py::arg("ops") = s.op_ids,
                                                     py::arg("reduce_axes") = s.reduce_axes,
                                                     py::arg("registers") = s.registers,
                                                     py::arg("loops") = s.loops,
                                                     py::arg("schedule") = print_schedule(s.schedule),
                                                     py::arg("computed_in") = s.computed_in));
                               return out;
                             })
      .def_property_readonly("rejections", [](const Program& p) { return p.stages.rejections; })
      // what a background compile writes: read once it is done
      .def_property_readonly("fallbacks", [](const Program& p) { return settled(p).fallbacks; })
      .def_property_readonly("compiled", [](const Program& p) { return settled(p).compiled; },
                             "machine codes LLVM compiled for this program")
      .def_property_readonly("disk_hits", [](const Program& p) { return settled(p).disk_hits; },
                             "machine codes loaded from the disk cache instead")
      .def_property_readonly("code",
                             [](const Program& p) {
                               std::vector<std::string> out;
                               for (const auto& k : settled(p).kernels) out.push_back(k ? k->llvm_ir() : "");
                               return out;
                             })
      .def_property_readonly("schedules",
                             [](const Program& p) {
                               std::map<int, std::string> out;
                               for (size_t i = 0; i < p.stages.stages.size(); ++i)
                                 out[static_cast<int>(i)] = print_schedule(p.stages.stages[i].schedule);
                               return out;
                             })
      .def("execute",
           [](const Program& p, const py::list& buffers, bool latest_first) {
             // each entry: an address, a NumPy array (its data), or None (the executor allocates)
             std::vector<void*> ptrs;
             ptrs.reserve(buffers.size());
             for (const py::handle& b : buffers) {
               if (b.is_none()) ptrs.push_back(nullptr);
               else if (py::isinstance<py::array>(b)) ptrs.push_back(py::detail::array_proxy(b.ptr())->data);
               else ptrs.push_back(reinterpret_cast<void*>(b.cast<uintptr_t>()));
             }
             py::gil_scoped_release release;
             execute(p, ptrs, latest_first);
           },
           py::arg("buffers"), py::arg("latest_first") = false);

  py::enum_<Target>(m, "Target").value("cpu", Target::Cpu).value("cuda", Target::Cuda);
  m.def("lower", &lower, py::arg("graph"), py::arg("schedules") = std::map<int, std::string>{},
        py::arg("jit") = true, py::arg("target") = Target::Cpu,
        "runs the pass pipeline (lower.cc) on a traced graph; schedules: stage index -> primitives text");
  m.def("lower_in_background", &lower_in_background, py::arg("graph"), py::arg("schedules") = std::map<int, std::string>{},
        "lower for the host, returning before LLVM has compiled the stages (driver.h)");
  m.def("settle_background_compiles", &BackgroundCompile::wait_all, py::call_guard<py::gil_scoped_release>(),
        "returns once every background compile of the process is done (before a fork, at exit)");
  m.def("llvm_backend_available", &llvm_backend_available);
  py::register_exception<ScheduleError>(m, "ScheduleError", PyExc_ValueError);
  // an assert on a traced value fails with Python's own AssertionError and the user's message;
  // np.average of weights that sum to zero with ZeroDivisionError; a variable a branch left
  // unassigned with UnboundLocalError
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const AssertionFailed& e) {
      // (a bare assert's AssertionError holds no message, as Python's)
      py::handle kind(PyExc_AssertionError);
      py::object error = *e.what() ? kind(e.what()) : kind();
      const std::string note = e.where + ": the assert that failed (on a value known when the compiled function ran)";
      if (py::hasattr(error, "add_note")) error.attr("add_note")(note);
      else error.attr("__notes__") = py::list(py::make_tuple(note));  // (before Python 3.11: kept, not shown)
      PyErr_SetObject(PyExc_AssertionError, error.ptr());
    } catch (const ZeroDivision& e) {
      PyErr_SetString(PyExc_ZeroDivisionError, e.what());
    } catch (const UnboundLocal& e) {
      PyErr_SetString(PyExc_UnboundLocalError, e.what());
    }
  });
  m.def("run_passes", &run_passes, py::arg("ir_text"), py::arg("passes"),
        py::arg("schedules") = std::map<int, std::string>{}, py::arg("target") = Target::Cpu);
}

}  // namespace strider::python
