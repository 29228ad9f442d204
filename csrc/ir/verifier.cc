#include <stdexcept>
#include <string>

#include "ir/graph.h"

namespace strider {

namespace {

[[noreturn]] void fail(int op, const std::string& what) {
  throw std::logic_error((op >= 0 ? "op" + std::to_string(op) + ": " : std::string("return: ")) + what);
}

void check_view(const Graph& g, const View& v, int op) {
  if (v.storage < 0 || v.storage >= static_cast<int>(g.storages.size()))
    fail(op, "view of unknown storage %s" + std::to_string(v.storage));
  if (v.shape.size() != v.strides.size()) fail(op, "view " + print_view(v) + " has mismatched strides");
  for (int64_t d : v.shape)
    if (d < 0) fail(op, "view " + print_view(v) + " has a negative dimension");
  for (int e : v.extents)
    if (e >= 0 && (e >= static_cast<int>(g.storages.size()) || g.storages[e].dtype != DType::Int64 ||
                   g.storages[e].size < 1))
      fail(op, "view " + print_view(v) + " takes an extent from something that is not an i64 storage");
  if (v.numel() > 0 && (v.min_offset() < 0 || v.max_offset() >= g.storages[v.storage].size))
    fail(op, "view " + print_view(v) + " reaches outside its storage");
}

}  // namespace

void verify_graph(const Graph& g) {
  for (size_t i = 0; i < g.storages.size(); ++i) {
    const Storage& s = g.storages[i];
    if (s.size < 0) fail(-1, "storage %s" + std::to_string(i) + " has a negative size");
    if (s.kind == StorageKind::Const && s.data.size() != s.size * itemsize(s.dtype))
      fail(-1, "const storage %s" + std::to_string(i) + " carries the wrong number of bytes");
  }
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    const int id = static_cast<int>(i);
    if (static_cast<int>(op.inputs.size()) != op_arity(op.code))
      fail(id, std::string(op_name(op.code)) + " takes " + std::to_string(op_arity(op.code)) + " inputs");
    for (const View& v : op.inputs) check_view(g, v, id);
    check_view(g, op.output, id);
    if (g.storages[op.output.storage].kind == StorageKind::Const) fail(id, "writes a const storage");
    const DType out = g.dtype_of(op.output);
    const DType in = g.dtype_of(op.inputs.back());
    switch (op_kind(op.code)) {
      case OpKind::Copy:
      case OpKind::Unary:
      case OpKind::Binary:
      case OpKind::Ternary:
        for (const View& v : op.inputs)
          if (v.shape != op.output.shape || (v.is_dynamic() && v.extents != op.output.extents))
            fail(id, "input " + print_view(v) + " is not broadcast to the output shape");
        break;
      case OpKind::Reduce: {
        Shape expect;
        int prev = -1;
        for (int a : op.axes) {
          if (a <= prev || a >= op.inputs[0].ndim()) fail(id, "reduction axes must be ascending and in range");
          prev = a;
        }
        for (int d = 0, k = 0; d < op.inputs[0].ndim(); ++d) {
          if (k < static_cast<int>(op.axes.size()) && op.axes[k] == d) ++k;
          else expect.push_back(op.inputs[0].shape[d]);
        }
        if (op.output.shape != expect) fail(id, "reduction output shape does not match its axes");
        break;
      }
      case OpKind::Arange:
        if (op.inputs[0].ndim() != 0 || op.inputs[1].ndim() != 0 || op.output.ndim() != 1)
          fail(id, "arange takes 0-d start and step and writes a 1-d view");
        break;
    }
    if (op.code == OpCode::copy && out != in) fail(id, "copy between different dtypes (insert a cast)");
    if (op_kind(op.code) == OpKind::Binary && g.dtype_of(op.inputs[0]) != in)
      fail(id, "binary op inputs must share the loop dtype");
    if (op.code == OpCode::where && g.dtype_of(op.inputs[0]) != DType::Bool)
      fail(id, "where needs a bool condition");
  }
  for (const View& v : g.outputs) check_view(g, v, -1);
}

void verify_text_roundtrip(const Graph& g) {
  const std::string text = print_graph(g);
  std::string why;
  try {
    if (parse_graph(text) == g) return;
    why = "parses back to another graph";
  } catch (const std::invalid_argument& e) {
    why = std::string("does not parse back: ") + e.what();
  }
  throw std::logic_error("the text form of graph " + g.name + " " + why + "\n" + text);
}

}  // namespace strider
