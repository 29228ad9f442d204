#include <algorithm>
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

bool same_shape(const View& a, const View& b) {
  return a.shape == b.shape && (a.extents == b.extents || (!a.is_dynamic() && !b.is_dynamic()));
}

// Whether `whole` has the shape of `index` followed by the shape of a row of `rows` (its axes
// after the first).
bool rows_of(const View& whole, const View& index, const View& rows) {
  Shape expect = index.shape;
  expect.insert(expect.end(), rows.shape.begin() + 1, rows.shape.end());
  return whole.shape == expect;
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
      case OpKind::Compact:
        if (op.output.ndim() != 1 || out != DType::Int64) fail(id, "nonzero writes a 1-d i64 view");
        break;
      case OpKind::Compress:
        if (op.inputs[0].ndim() != 1 || g.dtype_of(op.inputs[0]) != DType::Bool || op.inputs[1].ndim() < 1 ||
            op.inputs[0].shape[0] != op.inputs[1].shape[0] || in != out || op.output.ndim() != op.inputs[1].ndim() ||
            !std::equal(op.output.shape.begin() + 1, op.output.shape.end(), op.inputs[1].shape.begin() + 1))
          fail(id, "compress selects rows of its second input by a 1-d bool mask, into rows of its dtype");
        break;
      case OpKind::Gather:
        if (op.inputs[0].ndim() < 1 || in != DType::Int64 || g.dtype_of(op.inputs[0]) != out ||
            !rows_of(op.output, op.inputs[1], op.inputs[0]))
          fail(id, "take reads rows of a view at i64 indices, into the indices' shape and the rows', in its dtype");
        break;
      case OpKind::Scatter:
        if (op.output.ndim() < 1 || g.dtype_of(op.inputs[0]) != DType::Int64 || in != out ||
            !rows_of(op.inputs[1], op.inputs[0], op.output))
          fail(id, "put writes rows of a view at i64 indices, from values of the indices' shape and the rows', in its dtype");
        break;
      case OpKind::Sort: {
        const View& v = op.inputs[0];
        const int64_t k = op.axes.size() == 2 ? op.axes[1] : -1;
        Shape expect = v.shape;
        if (!expect.empty() && k >= 0) expect.back() = std::min<int64_t>(expect.back(), k);
        if (v.ndim() < 1 || op.output.shape != expect || (!op.axes.empty() && op.axes.size() != 2) ||
            out != (op.code == OpCode::argsort ? DType::Int64 : in))
          fail(id, "a sort writes its input's shape, or its first k along the last axis (argsort: i64 positions, "
                   "sort: its dtype)");
        break;
      }
      case OpKind::Scan:
        if (!same_shape(op.inputs[0], op.output) || op.output.ndim() < 1 || in != out)
          fail(id, "a scan writes its input's shape and dtype");
        break;
      case OpKind::Search:
        if (op.inputs[0].ndim() != 1 || g.dtype_of(op.inputs[0]) != in || out != DType::Int64 ||
            !same_shape(op.inputs[1], op.output) || op.axes.size() != 1)
          fail(id, "searchsorted finds i64 places in a 1-d view for values of its dtype, on one side");
        break;
      case OpKind::Check:
        if (op.code == OpCode::check_assert) {
          if (g.dtype_of(op.inputs[0]) != DType::Bool || op.inputs[0].ndim() != 0 || in != DType::Int32 ||
              op.inputs[1].ndim() != 1 || out != DType::Bool || op.output.ndim() != 0)
            fail(id, "check_assert passes a 0-d bool through, with its message as i32 code points");
          break;
        }
        if (op.code == OpCode::check_equal) {
          if (g.dtype_of(op.inputs[0]) != DType::Int64 || op.inputs[0].ndim() != 0 ||
              g.dtype_of(op.inputs[1]) != DType::Int64 || op.inputs[1].ndim() != 0 || in != DType::Int32 ||
              op.inputs[2].ndim() != 1 || out != DType::Int64 || op.output.ndim() != 0)
            fail(id, "check_equal passes a 0-d i64 through, checked against another, with its message as i32 code points");
          break;
        }
        if (op.code == OpCode::check_nonempty) {
          if (in != DType::Int64 || op.inputs[0].ndim() != 0 || out != DType::Int64 || op.output.ndim() != 0 ||
              op.axes.size() != 1 || op.axes[0] < 0 || op.axes[0] > 3)
            fail(id, "check_nonempty passes a 0-d i64 length through, for one of four reductions");
          break;
        }
        if (in != DType::Int64 || op.inputs[1].ndim() != 0 || g.dtype_of(op.inputs[0]) != DType::Int64 ||
            out != DType::Int64 || !same_shape(op.inputs[0], op.output) || op.axes.size() != 1)
          fail(id, "check_index passes i64 indices through, checked against a 0-d i64 size, for one axis");
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
