// Bindings of the dispatch path: the dispatcher (CompiledFunction's C++ base), the signature a
// trace reads, and the runner a trace plans.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <cstdlib>
#include <string>

#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "dispatcher.h"
#include "numpy_dtype.h"
#include "ops/numpy_loops.h"
#include "runtime/data_dependent.h"

namespace py = pybind11;

namespace strider::python {

namespace {

int64_t& counter(Dispatcher& d, const std::string& name) {
  Dispatcher::Counters& c = d.counters();
  if (name == "traces") return c.traces;
  if (name == "cache_hits") return c.cache_hits;
  if (name == "lowered") return c.lowered;
  if (name == "compiles") return c.compiles;
  if (name == "disk_hits") return c.disk_hits;
  if (name == "graph_breaks") return c.graph_breaks;
  if (name == "regrown") return c.regrown;
  if (name == "runtime_breaks") return c.runtime_breaks;
  if (name == "region_tries") return c.region_tries;
  throw py::key_error(name);
}

py::list dtypes(const std::pmr::vector<int>& typenums) {
  py::list out;
  for (int t : typenums)
    out.append(py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(PyArray_DescrFromType(t))));
  return out;
}

// NumPy's loop of the ufunc numpy.<name> for `op` on float32 and float64, where it has one
void install_numpy_loops(const py::module_& np, OpCode op, const char* name) {
  for (DType t : {DType::Float32, DType::Float64}) {
    if (!numpy_computes(op, t)) continue;
    py::object ufunc = np.attr(name);
    if (!py::isinstance(ufunc, np.attr("ufunc"))) continue;
    auto* u = reinterpret_cast<PyUFuncObject*>(ufunc.ptr());
    if (u->nin != 1 || u->nout != 1) continue;
    const int n = typenum(t);
    for (int i = 0; i < u->ntypes; ++i) {
      if (u->types[2 * i] != n || u->types[2 * i + 1] != n || !u->functions[i]) continue;
      set_numpy_loop(op, t, reinterpret_cast<UfuncLoop>(u->functions[i]), u->data ? u->data[i] : nullptr);
      break;
    }
  }
}

// NumPy's partition or argpartition of a row (data_dependent.h's NumpyPartitionFn), through its C
// API: the row and kth as arrays over the runtime's memory, the GIL taken on this thread.
int numpy_partition(DType dtype, void* values, int64_t n, const int64_t* kth, int64_t nkth, int64_t* order,
                    int64_t m, bool reverse, std::string* error) {
  const PyGILState_STATE gil = PyGILState_Ensure();
  npy_intp length = n, kths = nkth;
  PyObject* row = PyArray_SimpleNewFromData(1, &length, typenum(dtype), values);
  PyObject* at = PyArray_SimpleNewFromData(1, &kths, NPY_INT64, const_cast<int64_t*>(kth));
  bool ok = row && at;
  if (ok && order) {
    PyObject* got = PyArray_ArgPartition(reinterpret_cast<PyArrayObject*>(row), reinterpret_cast<PyArrayObject*>(at),
                                         0, NPY_INTROSELECT);
    ok = got != nullptr;
    if (ok) {
      const auto* all = static_cast<const int64_t*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(got)));
      for (int64_t i = 0; i < m; ++i) order[i] = all[reverse ? n - 1 - i : i];
    }
    Py_XDECREF(got);
  } else if (ok) {
    ok = PyArray_Partition(reinterpret_cast<PyArrayObject*>(row), reinterpret_cast<PyArrayObject*>(at), 0,
                           NPY_INTROSELECT) == 0;
  }
  Py_XDECREF(row);
  Py_XDECREF(at);
  if (!ok) {
    *error = py::error_already_set().what();  // (fetches and clears NumPy's error)
  }
  PyGILState_Release(gil);
  return ok ? 0 : 1;
}

}  // namespace

void bind_dispatch(py::module_& m) {
  if (PyArray_API == nullptr && _import_array() < 0) throw py::error_already_set();
  // NumPy's own sorts of its default kind, which order ties as only they do (data_dependent.h's
  // set_numpy_sort); a dtype without them sorts ties stably
  for (DType t : kDTypes) {
    PyArray_Descr* descr = PyArray_DescrFromType(typenum(t));
    if (!descr) throw py::error_already_set();
    const PyArray_ArrFuncs* f = PyDataType_GetArrFuncs(descr);
    set_numpy_sort(t, reinterpret_cast<NumpySortFn>(f->sort[NPY_QUICKSORT]),
                   reinterpret_cast<NumpyArgsortFn>(f->argsort[NPY_QUICKSORT]));
    Py_DECREF(descr);
  }
  set_numpy_partition(numpy_partition);
  // STRIDER_NUMPY_MATH=1: NumPy's bits for the transcendental functions, at a call per vector
  if (const char* math = std::getenv("STRIDER_NUMPY_MATH"); math && std::string(math) == "1") {
    const py::module_ np = py::module_::import("numpy");
#define STRIDER_OP(name, kind, attrs)
#define STRIDER_UNARY(name, attrs) install_numpy_loops(np, OpCode::name, #name);
#include "ir/ops.def"
  }
  py::enum_<ResultKind>(m, "ResultKind", "What one of a traced function's results is")
      .value("argument", ResultKind::Argument)
      .value("python", ResultKind::Python)
      .value("view", ResultKind::View);
  py::enum_<TempForm>(m, "TempForm", "How a returned temporary is allocated")
      .value("buffer", TempForm::Buffer)
      .value("transposed", TempForm::Transposed)
      .value("viewed", TempForm::Viewed);

  m.attr("numbers_array_elements") = kNumbersArray;
  py::class_<CallSignature>(m, "CallSignature", "A call's signature: its leaves and their aliasing layout")
      .def_property_readonly("key", [](const CallSignature& s) { return py::bytes(s.key.data(), s.key.size()); })
      .def_property_readonly("leaves", &CallSignature::leaf_tuple)
      .def_property_readonly("group_dtype", [](const CallSignature& s) { return dtypes(s.group_dtype); })
      .def_readonly("group_extent", &CallSignature::group_extent)
      .def_readonly("group_ordinal", &CallSignature::group_ordinal)
      .def_readonly("leaf_group", &CallSignature::leaf_group)
      .def_readonly("leaf_offset", &CallSignature::leaf_offset)
      .def_readonly("leaf_ordinal", &CallSignature::leaf_ordinal)
      .def_readonly("leaf_rows", &CallSignature::leaf_rows)
      .def_readonly("walked", &CallSignature::walked)
      .def("arguments", &CallSignature::arguments, py::arg("leaves"), py::arg("missing"),
           "the call's arguments with `leaves` in place of its leaves: one value per parameter, `missing` for one "
           "the caller left out");

  py::class_<Runner>(m, "Runner")
      .def(py::init([](py::object program, std::vector<std::pair<int, int>> groups,
                       std::vector<std::pair<int, int>> scalars, const py::list& temps, const py::list& outputs,
                       const py::handle& result) {
             std::vector<Runner::Temp> ts;
             for (const py::handle& t : temps) {
               auto [sid, shape, form, axes] = t.cast<std::tuple<int, std::vector<int64_t>, TempForm, std::vector<int64_t>>>();
               ts.push_back(Runner::Temp{sid, std::move(shape), form, std::move(axes)});
             }
             std::vector<Runner::Output> os;
             for (const py::handle& h : outputs) {
               py::tuple t = h.cast<py::tuple>();
               Runner::Output o;
               o.kind = t[0].cast<ResultKind>();
               if (o.kind == ResultKind::Python) o.value = t[1];
               else o.index = t[1].cast<int>();
               if (o.kind == ResultKind::View) {
                 o.scalar = t[2].cast<bool>();
                 o.weak = t[3];
                 o.writeable = t[4].cast<bool>();
               }
               os.push_back(std::move(o));
             }
             return Runner(std::move(program), std::move(groups), std::move(scalars), std::move(ts), std::move(os),
                           result);
           }),
           py::arg("program"), py::arg("groups"), py::arg("scalars"), py::arg("temps"), py::arg("outputs"),
           py::arg("result"),
           "program, [(storage, group)], [(storage, leaf)], [(storage, shape, TempForm, axes)], outputs: "
           "(ResultKind.argument, leaf) | (ResultKind.python, object) | (ResultKind.view, output index, scalar, weak "
           "type or None, writeable), the result's spec")
      .def("set_cuda", &Runner::set_cuda, py::arg("program"))
      .def("set_post", &Runner::set_post, py::arg("post"),
           "passes each result through post(result, args, kwargs), with the call's arguments");

  py::class_<DeviceRun>(m, "DeviceRun", "one call's run, for its caller's kind of array: run(stream, temporaries)")
      .def("__call__", &DeviceRun::operator(), py::arg("stream"), py::arg("made"));

  py::class_<Dispatcher> d(m, "Dispatcher", "The C++ base of CompiledFunction: it owns every call (dispatcher.h)");
  d.def(py::init([](const py::list& params, const std::string& target, bool cache, int max_signatures) {
          std::vector<Param> ps;
          for (const py::handle& p : params) {
            auto [name, kind, has_default, is_static] = p.cast<std::tuple<py::str, int, bool, bool>>();
            ps.push_back(Param{name, static_cast<ParamKind>(kind), has_default, is_static});
          }
          const DevicePolicy policy = target == "cuda" ? DevicePolicy::Take
                                      : target == "auto" ? DevicePolicy::Route
                                                         : DevicePolicy::Refuse;
          return std::make_unique<Dispatcher>(std::move(ps), policy, cache, max_signatures);
        }),
        py::arg("params"), py::arg("target"), py::arg("cache"), py::arg("max_signatures"),
        "params: (name, inspect kind, has a default, static) per parameter; target: 'cpu', 'cuda' or 'auto'")
      .def("__call__",
           [](py::object self, py::args args, const py::kwargs& kwargs) {
             return self.cast<Dispatcher&>().call(self, args.ptr(), kwargs.ptr());
           })
      .def(
          "_lookup",
          [](py::object self, const py::tuple& args, const py::dict& kwargs) {
            return self.cast<Dispatcher&>().entry(self, args.ptr(), kwargs.ptr());
          },
          py::arg("args"), py::arg("kwargs"), "(entry, leaves) of the call's signature (traced when new)")
      .def("_count", [](Dispatcher& self, const std::string& name, int64_t n) { counter(self, name) += n; })
      .def("_counted", [](Dispatcher& self, const std::string& name) { return counter(self, name); },
           "one counter as it stands (stats() settles the compiles first)")
      .def("_count_compiles", &Dispatcher::count_compiles, py::arg("program"),
           "counts the program's compiles and disk hits once its background compile is done")
      .def_property_readonly("_cache", &Dispatcher::entries, "the entries kept")
      .def(
          "_set_sources",
          [](Dispatcher& self, const py::list& sources) {
            std::vector<Source> out;
            for (const py::handle& h : sources) {
              auto [param, root, key, attrs] = h.cast<std::tuple<int, py::object, py::object, std::vector<py::object>>>();
              out.push_back(Source{param, root, key, std::move(attrs)});
            }
            self.set_sources(std::move(out));
          },
          py::arg("sources"),
          "(parameter or -1, root, key, attributes) per source every call reads (call_signature.h); drops the "
          "entries kept")
      .def("stats",
           [](Dispatcher& self) {
             const Dispatcher::Counters& c = self.settled_counters();
             py::dict out;
             out["traces"] = c.traces;
             out["cache_hits"] = c.cache_hits;
             out["lowered"] = c.lowered;
             out["compiles"] = c.compiles;
             out["disk_hits"] = c.disk_hits;
             out["specialized"] = c.specialized;
             out["graph_breaks"] = c.graph_breaks;
             out["regrown"] = c.regrown;
             out["runtime_breaks"] = c.runtime_breaks;
             out["region_tries"] = c.region_tries;
             return out;
           },
           "Counters: traces (signatures traced), cache_hits (calls served from the memory cache), lowered (programs "
           "built), compiles (machine codes LLVM, or NVRTC for target=\"cuda\", compiled: on the CPU, "
           "stages alike but for their storages share one; for CUDA, a group of stages the device holds already "
           "counts in neither), disk_hits (those loaded from the disk cache instead of compiled), specialized (numbers the caller passes made static because tracing "
           "needed their values), graph_breaks (signatures whose calls run in NumPy: their trace met what it cannot "
           "capture), regrown (calls whose loop outgrew the room traced for a list: traced again with more), "
           "runtime_breaks (calls run in NumPy because a length of 1 known only at run time is broadcast there), "
           "region_tries (traces of the bodies of loops and branches on traced conditions: each is traced again "
           "until what it carries settles).")
      .def("_specialize", &Dispatcher::specialize, py::arg("ordinals"),
           "makes the numbers at these leaf ordinals static; drops the entries kept")
      .def("_set_run_time_rows", &Dispatcher::set_run_time_rows, py::arg("ordinals"),
           "makes the rows of the host arrays at these leaf ordinals a run-time length; drops the entries kept")
      .def("_keep_by_identity", &Dispatcher::keep_by_identity,
           "keys objects of the user's classes by identity from now on; drops the entries kept");
  m.def(
      "set_exec_order", [](bool latest) { dispatch_hooks().latest_first = latest; }, py::arg("latest"),
      "latest=True: calls run their programs in the other extreme legal order of the DAG (checks its edges)");
  m.def("exec_order_latest", [] { return dispatch_hooks().latest_first; }, "whether set_exec_order(True) is in force");
  m.def("rows_bound", &rows_bound, py::arg("n"), "the bound a run-time count of n rows is traced with");
  m.def("install_call_slot", &install_call_slot, py::arg("cls"),
        "makes calls of `cls` (a subclass of Dispatcher that keeps its __call__) enter the dispatcher directly");
  m.def(
      "set_dispatch_hooks",
      [](py::object current_trace, py::object unsupported, py::object refuse_leaves, py::handle tracer_type,
         py::object library, py::object kind, py::handle freeze, py::handle missing, py::handle identity,
         py::handle plain, py::handle plain_type, py::object errstate, py::object errstate_raises) {
        DispatchHooks& h = dispatch_hooks();
        h.current_trace = std::move(current_trace);
        h.unsupported = std::move(unsupported);
        h.refuse_leaves = std::move(refuse_leaves);
        h.device_kinds.install(std::move(library), std::move(kind));
        set_tracer_type(tracer_type.ptr());
        set_freeze(freeze.ptr(), missing.ptr(), identity.ptr(), plain.ptr(), plain_type.ptr());
        h.errstate = std::move(errstate);
        h.errstate_raises = std::move(errstate_raises);
      },
      py::arg("current_trace"), py::arg("unsupported"), py::arg("refuse_leaves"), py::arg("tracer_type"),
      py::arg("library"), py::arg("kind"), py::arg("freeze"), py::arg("missing"), py::arg("identity"),
      py::arg("plain"), py::arg("plain_type"), py::arg("errstate"), py::arg("errstate_raises"), "what the dispatcher asks of Python (installed once by strider._api)");
}

}  // namespace strider::python
