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

// An append of a block: rows of the output's shape after a 0-d position.
bool block_of(const Op& op, const View& block) {
  return op.code == OpCode::append && op.inputs[0].ndim() == 0 && block.ndim() == op.output.ndim() &&
         std::equal(block.shape.begin() + 1, block.shape.end(), op.output.shape.begin() + 1);
}

// Loops and branches nest: loop_begin, loop_while..., loop_end and branch_if, branch_else?,
// branch_end of one region id each, every loop_while inside its own loop.
void check_regions(const Graph& g) {
  std::vector<std::pair<int, OpCode>> open;  // region id, the op that opened it
  std::vector<int> seen;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    if (!is_control(op.code)) continue;
    const int id = static_cast<int>(i), r = op.axes[0];
    auto innermost = [&](OpCode opener) { return !open.empty() && open.back().first == r && open.back().second == opener; };
    switch (op.code) {
      case OpCode::loop_begin:
      case OpCode::branch_if:
        if (std::find(seen.begin(), seen.end(), r) != seen.end()) fail(id, "region " + std::to_string(r) + " opens twice");
        seen.push_back(r);
        open.push_back({r, op.code});
        break;
      case OpCode::loop_while: {
        bool inside = false;
        for (const auto& o : open) inside = inside || (o.first == r && o.second == OpCode::loop_begin);
        if (!inside) fail(id, "loop_while outside its loop " + std::to_string(r));
        break;
      }
      case OpCode::branch_else:
        if (!innermost(OpCode::branch_if)) fail(id, "branch_else outside its branch " + std::to_string(r));
        open.back().second = OpCode::branch_else;
        break;
      case OpCode::loop_end:
        if (!innermost(OpCode::loop_begin)) fail(id, "loop_end does not close the innermost region");
        open.pop_back();
        break;
      default:
        if (!innermost(OpCode::branch_if) && !innermost(OpCode::branch_else)) fail(id, "branch_end does not close the innermost region");
        open.pop_back();
    }
  }
  if (!open.empty()) fail(-1, "region " + std::to_string(open.back().first) + " is not closed");
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
    if (op_arity(op.code) >= 0 && static_cast<int>(op.inputs.size()) != op_arity(op.code))
      fail(id, std::string(op_name(op.code)) + " takes " + std::to_string(op_arity(op.code)) + " inputs");
    for (const View& v : op.inputs) check_view(g, v, id);
    check_view(g, op.output, id);
    if (g.storages[op.output.storage].kind == StorageKind::Const) fail(id, "writes a const storage");
    const DType out = g.dtype_of(op.output);
    const DType in = op.inputs.empty() ? out : g.dtype_of(op.inputs.back());
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
        // add_at and its kin combine in their values' dtype, NumPy's loop for the two (ops.def)
        if (op.output.ndim() < 1 || g.dtype_of(op.inputs[0]) != DType::Int64 || (in != out && !scatter_combines(op.code)) ||
            !(rows_of(op.inputs[1], op.inputs[0], op.output) || block_of(op, op.inputs[1])))
          fail(id, "put writes rows of a view at i64 indices, from values of the indices' shape and the rows', in its dtype");
        break;
      case OpKind::Sort: {
        const View& v = op.inputs[0];
        const int64_t k = op.axes.size() >= 2 ? op.axes[1] : -1;
        Shape expect = v.shape;
        if (!expect.empty() && k >= 0) expect.back() = std::min<int64_t>(expect.back(), k);
        const int64_t ties = op.axes.size() >= 3 ? op.axes[2] : 0;
        if (v.ndim() < 1 || op.output.shape != expect || op.axes.size() == 1 ||
            (ties != 0 && !(ties == 1 && op.axes.size() == 3) && !(ties == 2 && op.axes.size() > 3)) ||
            out != (op.code == OpCode::argsort ? DType::Int64 : in))
          fail(id, "a sort writes its input's shape, or its first k along the last axis (argsort: i64 positions, "
                   "sort: its dtype), with axes [reversed, k], then 1 where ties come in NumPy's default kind's "
                   "order, or 2 and the kth of a partition in NumPy's order");
        break;
      }
      case OpKind::Scan:
        if (!same_shape(op.inputs[0], op.output) || op.output.ndim() < 1 || in != out)
          fail(id, "a scan writes its input's shape and dtype");
        break;
      case OpKind::Search:
        if (op.inputs[0].ndim() != 1 || g.dtype_of(op.inputs[0]) != in || out != DType::Int64 ||
            !same_shape(op.inputs[1], op.output) || op.axes.size() != 2 || op.axes[1] < 0 || op.axes[1] > 1)
          fail(id, "searchsorted finds i64 places in a 1-d view for values of its dtype, with axes [side, search] "
                   "(search 0: narrowed from the last needle's, as NumPy before 2.5; 1: halving, as NumPy 2.5)");
        break;
      case OpKind::Check:
        if (op.code == OpCode::check_assert) {
          if (g.dtype_of(op.inputs[0]) != DType::Bool || op.inputs[0].ndim() != 0 || in != DType::Int32 ||
              op.inputs[1].ndim() != 1 || out != DType::Bool || op.output.ndim() != 0 || op.axes.size() > 1 ||
              (!op.axes.empty() && (op.axes[0] < kAssertionError || op.axes[0] > kUnboundLocalError)))
            fail(id, "check_assert passes a 0-d bool through, with its message as i32 code points and at most "
                     "the error it raises");
          break;
        }
        if (op.code == OpCode::check_equal) {
          if (g.dtype_of(op.inputs[0]) != DType::Int64 || op.inputs[0].ndim() != 0 ||
              g.dtype_of(op.inputs[1]) != DType::Int64 || op.inputs[1].ndim() != 0 || in != DType::Int32 ||
              op.inputs[2].ndim() != 1 || out != DType::Int64 || op.output.ndim() != 0 || op.axes.size() > 1 ||
              (!op.axes.empty() && op.axes[0] != kIndexError))
            fail(id, "check_equal passes a 0-d i64 through, checked against another, with its message as i32 code points "
                     "and at most kIndexError");
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
      case OpKind::Control:
        if (op.axes.size() != 1 || out != DType::Bool || op.output.ndim() != 0 ||
            g.storages[op.output.storage].kind != StorageKind::Temp)
          fail(id, "a control op names its region and writes a 0-d bool temporary");
        if (!carries(op.code) && (in != DType::Bool || op.inputs[0].ndim() != 0))
          fail(id, std::string(op_name(op.code)) + " reads a 0-d bool");
        break;
    }
    if (op.code == OpCode::copy && out != in) fail(id, "copy between different dtypes (insert a cast)");
    if (op_kind(op.code) == OpKind::Binary && g.dtype_of(op.inputs[0]) != in)
      fail(id, "binary op inputs must share the loop dtype");
    if (op.code == OpCode::where && g.dtype_of(op.inputs[0]) != DType::Bool)
      fail(id, "where needs a bool condition");
  }
  for (const View& v : g.outputs) check_view(g, v, -1);
  check_regions(g);
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
