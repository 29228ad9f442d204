#include <algorithm>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "analysis/overlap.h"
#include "ir/graph.h"
#include "driver/driver.h"

namespace py = pybind11;

namespace strider::python {

void bind_ir(py::module_& m) {
  py::class_<View>(m, "View")
      .def(py::init([](int storage, Shape shape, Shape strides, int64_t offset, std::vector<int> extents) {
             if (shape.size() != strides.size()) throw std::invalid_argument("one stride per dimension");
             if (!extents.empty() && extents.size() != shape.size()) throw std::invalid_argument("one extent per dimension");
             if (std::all_of(extents.begin(), extents.end(), [](int e) { return e < 0; })) extents.clear();
             return View{storage, std::move(shape), std::move(strides), offset, std::move(extents)};
           }),
           py::arg("storage"), py::arg("shape"), py::arg("strides"), py::arg("offset"),
           py::arg("extents") = std::vector<int>{})
      .def_readonly("storage", &View::storage)
      .def_readonly("shape", &View::shape)
      .def_readonly("strides", &View::strides)
      .def_readonly("offset", &View::offset)
      .def_property_readonly("extents", [](const View& v) {
        return v.is_dynamic() ? v.extents : std::vector<int>(v.shape.size(), -1);
      }, "per dimension: the storage holding its run-time extent, or -1")
      .def_property_readonly("numel", &View::numel)
      .def_property_readonly("min_offset", &View::min_offset)
      .def_property_readonly("max_offset", &View::max_offset)
      .def_property_readonly("is_c_contiguous", &View::is_c_contiguous)
      .def("subscript",
           [](const View& v, const std::vector<std::tuple<char, int64_t, int64_t, int64_t>>& items) {
             std::vector<IndexItem> out;
             for (const auto& [kind, start, step, length] : items) {
               IndexItem it;
               it.kind = kind == 'i' ? IndexItem::Int : kind == 's' ? IndexItem::Slice : IndexItem::NewAxis;
               it.start = start;
               it.step = step;
               it.length = length;
               out.push_back(it);
             }
             return v.subscript(out);
           },
           "items: ('i', index, 0, 0) | ('s', start, step, length) | ('n', 0, 0, 0)")
      .def("transpose", &View::transpose)
      .def("broadcast_to", &View::broadcast_to, py::arg("to"), py::arg("to_extents") = std::vector<int>{})
      .def("reshape", &View::reshape, "the reshaped view, or None where NumPy would copy")
      .def("overlaps", [](const View& a, const View& b) { return footprints_overlap(a, b).overlap; })
      .def("__eq__", &View::operator==)
      .def("__repr__", &print_view);

  py::class_<Graph>(m, "Graph")
      .def(py::init([](std::string name) {
        Graph g;
        g.name = std::move(name);
        return g;
      }))
      .def_readwrite("name", &Graph::name)
      .def_readwrite("outputs", &Graph::outputs)
      .def("add_storage",
           [](Graph& g, const std::string& dtype, int64_t size, const std::string& kind, int arg) {
             Storage s;
             s.dtype = parse_dtype(dtype);
             s.size = size;
             s.kind = kind == "arg" ? StorageKind::Arg : StorageKind::Temp;
             s.arg = arg;
             return g.add_storage(std::move(s));
           },
           py::arg("dtype"), py::arg("size"), py::arg("kind") = "temp", py::arg("arg") = -1)
      .def("set_storage",
           [](Graph& g, int sid, const std::string& dtype, int64_t size) {
             Storage& s = g.storages.at(sid);
             if (s.kind != StorageKind::Temp) throw py::value_error("set_storage: not a temp storage");
             s.dtype = parse_dtype(dtype);
             s.size = size;
           },
           py::arg("storage"), py::arg("dtype"), py::arg("size"),
           "gives a temp storage no view reads yet its dtype and size (a list's, known at its first append)")
      .def("add_const",
           [](Graph& g, const std::string& dtype, const py::bytes& data) {
             Storage s;
             s.dtype = parse_dtype(dtype);
             s.kind = StorageKind::Const;
             std::string raw = data;
             s.data.assign(raw.begin(), raw.end());
             s.size = static_cast<int64_t>(raw.size() / itemsize(s.dtype));
             return g.add_storage(std::move(s));
           })
      .def("add_op",
           [](Graph& g, const std::string& name, std::vector<View> inputs, View output, std::vector<int> axes,
              std::string file, int line) {
             Op op;
             op.code = parse_op(name);
             op.inputs = std::move(inputs);
             op.output = std::move(output);
             op.axes = std::move(axes);
             op.file = std::move(file);
             op.line = line;
             g.ops.push_back(std::move(op));
             return static_cast<int>(g.ops.size()) - 1;
           },
           py::arg("name"), py::arg("inputs"), py::arg("output"), py::arg("axes") = std::vector<int>{},
           py::arg("file") = "", py::arg("line") = 0)
      .def("set_op_inputs",
           [](Graph& g, int i, std::vector<View> inputs) { g.ops.at(i).inputs = std::move(inputs); },
           py::arg("op"), py::arg("inputs"), "replaces an op's inputs (a loop's carried views, known after its body)")
      .def("op_outputs", [](const Graph& g, int from) {
             std::vector<int> out;
             for (size_t i = from; i < g.ops.size(); ++i) out.push_back(g.ops[i].output.storage);
             return out;
           }, py::arg("from"), "the storage each op from `from` on writes")
      .def("truncate",
           [](Graph& g, size_t ops, size_t storages) {
             if (ops > g.ops.size() || storages > g.storages.size()) throw py::value_error("truncate: past the end");
             g.ops.resize(ops);
             g.storages.resize(storages);
           },
           py::arg("ops"), py::arg("storages"), "drops the ops and storages added since (a loop traced again)")
      .def("storage_dtype", [](const Graph& g, int s) { return std::string(dtype_name(g.storages.at(s).dtype)); })
      .def("storage_size", [](const Graph& g, int s) { return g.storages.at(s).size; })
      .def("storage_kind",
           [](const Graph& g, int s) {
             switch (g.storages.at(s).kind) {
               case StorageKind::Arg: return "arg";
               case StorageKind::Const: return "const";
               case StorageKind::Temp: break;
             }
             return "temp";
           })
      .def("storage_arg", [](const Graph& g, int s) { return g.storages.at(s).arg; })
      .def_property_readonly("num_storages", [](const Graph& g) { return g.storages.size(); })
      .def_property_readonly("num_ops", [](const Graph& g) { return g.ops.size(); })
      .def("op_line", [](const Graph& g, int i) { return py::make_tuple(g.ops.at(i).file, g.ops.at(i).line); })
      .def("op_name", [](const Graph& g, int i) { return std::string(op_name(g.ops.at(i).code)); })
      .def("op_may_raise", [](const Graph& g, int i) {
             const OpCode code = g.ops.at(i).code;
             // a branch's ops only pick a region (a loop's may find its room too small)
             if (code == OpCode::branch_if || code == OpCode::branch_else || code == OpCode::branch_end) return false;
             return is_data_dependent(code) || (op_attrs(code) & kMayFail) != 0;
           }, "whether an op may raise when it runs (a check, an index out of range, a loop's), "
              "conservatively: every data-dependent op but a branch's")
      .def("verify", &verify_graph)
      .def("__eq__", &Graph::operator==)
      .def("__str__", &print_graph);

  m.def("parse_graph", &parse_graph, "parses the IR text form");
  m.def(
      "dtype_names",
      []() {
        py::dict out;
        for (DType t : kDTypes) out[numpy_name(t)] = dtype_name(t);
        return out;
      },
      "the dtypes the IR carries (ir/dtypes.def): NumPy's name -> the text form's");
  m.def(
      "op_table",
      []() {
        py::dict out;
        for (int k = 0; k < kNumOps; ++k) {
          const OpCode op = static_cast<OpCode>(k);
          const uint32_t a = op_attrs(op);
          py::list loops;
          for (auto [bit, family] : {std::pair{kBool, "bool"}, std::pair{kInt, "int"}, std::pair{kFloat, "float"}})
            if (a & bit) loops.append(family);
          py::dict info;
          info["arity"] = op_arity(op);
          info["loops"] = loops;
          info["predicate"] = is_predicate(op);
          info["comparison"] = is_comparison(op);
          info["libm"] = (a & kLibm) != 0;
          info["may_fail"] = (a & kMayFail) != 0;
          out[op_name(op)] = info;
        }
        return out;
      },
      "ops.def as data: per op its arity, loop families (bool, int, float) and attributes");
  m.def("pass_names", &pass_names, "the pipeline's step names, as run_passes, the logs and the dumps know them");
}

}  // namespace strider::python
