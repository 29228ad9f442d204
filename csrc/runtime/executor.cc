#include "runtime/executor.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "ops/reduce_spec.h"
#include "runtime/data_dependent.h"
#include "runtime/elementwise.h"

namespace strider {

namespace {

using st::convert;

// An element of dtype T at p as it computes, and a computed value stored as dtype U
template <typename T>
st::reg_t<T> read(const char* p) {
  return st::from_memory(*reinterpret_cast<const T*>(p));
}
template <typename U>
void write(char* p, st::reg_t<U> v) {
  *reinterpret_cast<U*>(p) = st::to_memory<U>(v);
}

// A view resolved against memory: first element's address and byte strides.
struct Operand {
  char* ptr = nullptr;
  Shape bstrides;
};

// Calls f(ptrs) for every element of `shape` in C order, ptrs[k] pointing at operand k's element.
template <size_t N, typename F>
void for_each(const Shape& shape, const Operand* ops, F&& f) {
  const int nd = static_cast<int>(shape.size());
  if (shape_numel(shape) == 0) return;
  char* ptrs[N];
  for (size_t k = 0; k < N; ++k) ptrs[k] = ops[k].ptr;
  if (nd == 0) {
    f(ptrs);
    return;
  }
  std::vector<int64_t> idx(nd, 0);
  const int64_t inner = shape[nd - 1];
  while (true) {
    char* p[N];
    for (size_t k = 0; k < N; ++k) p[k] = ptrs[k];
    for (int64_t i = 0; i < inner; ++i) {
      f(p);
      for (size_t k = 0; k < N; ++k) p[k] += ops[k].bstrides[nd - 1];
    }
    int d = nd - 2;
    for (; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) ptrs[k] += ops[k].bstrides[d];
      if (++idx[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) ptrs[k] -= ops[k].bstrides[d] * shape[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

class Executor {
 public:
  // `unstored`: temps no one stores (Program::unstored; empty: none): never allocated.
  // `partial`: null buffers are storages the ops to run never touch
  Executor(const Program& p, const std::vector<void*>& buffers, const std::vector<bool>& unstored,
           bool partial = false)
      : g_(p.graph) {
    if (buffers.size() != g_.storages.size()) throw std::invalid_argument("one buffer per storage expected");
    base_.resize(g_.storages.size());
    // the temporaries' memory, one allocation for all: an NMS function has a hundred of them
    std::vector<int64_t> at(g_.storages.size(), -1);
    int64_t words = 0;
    for (size_t s = 0; s < g_.storages.size(); ++s) {
      const Storage& st = g_.storages[s];
      if (st.kind == StorageKind::Const) {
        base_[s] = const_cast<char*>(reinterpret_cast<const char*>(st.data.data()));
      } else if (buffers[s] || partial) {
        base_[s] = static_cast<char*>(buffers[s]);
      } else if (st.kind == StorageKind::Arg) {
        throw std::invalid_argument("no memory given for argument storage %s" + std::to_string(s));
      } else if (!unstored.empty() && unstored[s]) {
        base_[s] = nullptr;
      } else {
        at[s] = words;  // each from a cache line of its own, a word to spare after it
        words += ((st.size * static_cast<int64_t>(itemsize(st.dtype)) + 7) / 8 + 1 + 7) / 8 * 8;
      }
    }
    if (!words) return;
    owned_.reset(new double[words + 8]);
    double* first = owned_.get() + (8 - reinterpret_cast<uintptr_t>(owned_.get()) / 8 % 8) % 8;
    for (size_t s = 0; s < g_.storages.size(); ++s)
      if (at[s] >= 0) base_[s] = reinterpret_cast<char*>(first + at[s]);
  }

  char* const* bases() const { return base_.data(); }

  void run(const Op& raw) {
    const Op& op = resolved(raw);
    switch (op_kind(op.code)) {
      case OpKind::Copy: return copy(op);
      case OpKind::Unary: return unary(op);
      case OpKind::Binary: return binary(op);
      case OpKind::Ternary: return where(op);
      case OpKind::Reduce: return reduce(op);
      case OpKind::Arange: return arange(op);
      default: return run_data_dependent(g_, op, base_.data());
    }
  }

 private:
  // The op with every run-time extent replaced by its value (clamped to the static bound).
  const Op& resolved(const Op& op) {
    bool dynamic = op.output.is_dynamic();
    for (const View& v : op.inputs) dynamic = dynamic || v.is_dynamic();
    if (!dynamic) return op;
    scratch_ = op;
    auto resolve = [&](View& v) {
      for (int d = 0; d < v.ndim(); ++d)
        if (v.extent_of(d) >= 0) {
          int64_t n = *reinterpret_cast<const int64_t*>(base_[v.extent_of(d)]);
          v.shape[d] = std::max<int64_t>(0, std::min(n, v.shape[d]));
        }
      v.extents.clear();
    };
    for (View& v : scratch_.inputs) resolve(v);
    resolve(scratch_.output);
    return scratch_;
  }

  Operand operand(const View& v) const {
    size_t es = itemsize(g_.dtype_of(v));
    Operand o;
    o.ptr = base_[v.storage] + v.offset * static_cast<int64_t>(es);
    for (int64_t s : v.strides) o.bstrides.push_back(s * static_cast<int64_t>(es));
    return o;
  }

  // NumPy's assignment reads the whole source before writing when the two overlap.
  void copy(const Op& op) {
    const View& src = op.inputs[0];
    const View& dst = op.output;
    size_t es = itemsize(g_.dtype_of(dst));
    Operand ops[2] = {operand(dst), operand(src)};
    std::unique_ptr<char[]> staging;
    if (src.storage == dst.storage && src.numel() > 0 && dst.numel() > 0 &&
        !(src.max_offset() < dst.min_offset() || dst.max_offset() < src.min_offset())) {
      staging.reset(new char[src.numel() * es]);
      Operand tmp{staging.get(), {}};
      Shape cs = contiguous_strides(src.shape);
      for (int64_t s : cs) tmp.bstrides.push_back(s * static_cast<int64_t>(es));
      Operand pack[2] = {tmp, ops[1]};
      for_each<2>(src.shape, pack, [es](char** p) { std::memcpy(p[0], p[1], es); });
      ops[1] = tmp;
    }
    for_each<2>(dst.shape, ops, [es](char** p) { std::memcpy(p[0], p[1], es); });
  }

  void unary(const Op& op) {
    Operand ops[2] = {operand(op.output), operand(op.inputs[0])};
    const OpCode code = op.code;
    dispatch_dtype(g_.dtype_of(op.inputs[0]), [&](auto in_tag) {
      using T = decltype(in_tag);
      dispatch_dtype(g_.dtype_of(op.output), [&](auto out_tag) {
        using U = decltype(out_tag);
        if (code == OpCode::cast) {
          for_each<2>(op.output.shape, ops, [](char** p) { write<U>(p[0], convert<U>(read<T>(p[1]))); });
        } else if (is_predicate(code)) {
          for_each<2>(op.output.shape, ops, [code](char** p) {
            write<U>(p[0], convert<U>(detail::unary_predicate<T>(code, read<T>(p[1]))));
          });
        } else {
          for_each<2>(op.output.shape, ops, [code](char** p) {
            write<U>(p[0], convert<U>(detail::unary_same<T>(code, read<T>(p[1]))));
          });
        }
      });
    });
  }

  void binary(const Op& op) {
    Operand ops[3] = {operand(op.output), operand(op.inputs[0]), operand(op.inputs[1])};
    const OpCode code = op.code;
    dispatch_dtype(g_.dtype_of(op.inputs[0]), [&](auto in_tag) {
      using T = decltype(in_tag);
      dispatch_dtype(g_.dtype_of(op.output), [&](auto out_tag) {
        using U = decltype(out_tag);
        if (is_comparison(code)) {
          for_each<3>(op.output.shape, ops, [code](char** p) {
            write<U>(p[0], convert<U>(detail::compare<T>(code, read<T>(p[1]), read<T>(p[2]))));
          });
        } else {
          for_each<3>(op.output.shape, ops, [code](char** p) {
            write<U>(p[0], convert<U>(detail::binary_same<T>(code, read<T>(p[1]), read<T>(p[2]))));
          });
        }
      });
    });
  }

  void where(const Op& op) {
    Operand ops[4] = {operand(op.output), operand(op.inputs[0]), operand(op.inputs[1]), operand(op.inputs[2])};
    size_t es = itemsize(g_.dtype_of(op.output));
    for_each<4>(op.output.shape, ops, [es](char** p) { std::memcpy(p[0], *reinterpret_cast<bool*>(p[1]) ? p[2] : p[3], es); });
  }

  void arange(const Op& op) {
    Operand out = operand(op.output);
    dispatch_dtype(g_.dtype_of(op.output), [&](auto tag) {
      using T = decltype(tag);
      const auto first = read<T>(operand(op.inputs[0]).ptr);
      const auto second = read<T>(operand(op.inputs[1]).ptr);
      const int64_t n = op.output.shape[0];
      for (int64_t i = 0; i < n; ++i) write<T>(out.ptr + i * out.bstrides[0], st::as_dtype<T>(st::arange(first, second, i)));
    });
  }

  void reduce(const Op& op) {
    const View& in = op.inputs[0];
    // split the input into kept axes (aligned with the output) and folded axes
    View kept, folded;
    kept.storage = folded.storage = in.storage;
    kept.offset = in.offset;
    for (int d = 0, k = 0; d < in.ndim(); ++d) {
      View& dst = (k < static_cast<int>(op.axes.size()) && op.axes[k] == d) ? (++k, folded) : kept;
      dst.shape.push_back(in.shape[d]);
      dst.strides.push_back(in.strides[d]);
    }
    Operand ops[2] = {operand(op.output), operand(kept)};
    Operand inner = operand(folded);
    const int64_t count = folded.numel();
    const ReduceSpec spec = reduce_spec(op.code, g_.dtype_of(in), g_.dtype_of(op.output));
    dispatch_dtype(g_.dtype_of(in), [&](auto in_tag) {
      using T = decltype(in_tag);
      dispatch_dtype(g_.dtype_of(op.output), [&](auto out_tag) {
        using U = decltype(out_tag);
        for_each<2>(kept.shape, ops, [&](char** p) {
          inner.ptr = p[1];
          fold<T, U>(spec, folded.shape, inner, count, p[0]);
        });
      });
    });
  }

  // Folds the elements of one output position as `spec` says.
  template <typename T, typename U>
  static void fold(const ReduceSpec& spec, const Shape& shape, const Operand& in, int64_t count, char* out) {
    using C = ReduceSpec::Combine;
    Operand ops[1] = {in};
    auto element = [](char** p) { return read<T>(p[0]); };
    switch (spec.combine) {
      case C::Add:
      case C::Multiply: {
        // in the input's dtype, in float64 for floats, or in float rounded to half each step
        const bool half_steps = spec.acc == DType::Float16;
        auto run = [&](auto acc_tag) {
          using A = decltype(acc_tag);
          A acc = static_cast<A>(spec.identity());
          for_each<1>(shape, ops, [&](char** p) {
            const A x = st::convert<A>(element(p));
            acc = spec.combine == C::Add ? st::add(acc, x) : st::multiply(acc, x);
            if constexpr (std::is_same_v<A, float>)
              if (half_steps) acc = st::round_half(acc);
          });
          write<U>(out, convert<U>(convert<T>(acc)));
        };
        if (spec.acc == DType::Float64) run(double{});
        else if (half_steps) run(float{});
        else run(st::reg_t<T>{});
        return;
      }
      case C::Or:
      case C::And: {
        const bool want = spec.combine == C::Or;
        bool acc = !want;
        for_each<1>(shape, ops, [&](char** p) {
          if (st::convert<bool>(element(p)) == want) acc = want;
        });
        write<U>(out, convert<U>(acc));
        return;
      }
      case C::Max:
      case C::Min: {
        if (count == 0)  // NumPy's ValueError (the reduction is empty only where a run-time length is 0)
          throw std::invalid_argument(spec.index ? std::string("attempt to get ") + (spec.is_max() ? "argmax" : "argmin") + " of an empty sequence"
                                                 : std::string("zero-size array to reduction operation ") + (spec.is_max() ? "maximum" : "minimum") + " which has no identity");
        st::reg_t<T> best{};
        int64_t best_at = -1, at = 0;
        for_each<1>(shape, ops, [&](char** p) {
          const auto x = element(p);
          if (best_at < 0 || (spec.is_max() ? st::replaces<true>(x, best) : st::replaces<false>(x, best))) {
            best = x;
            best_at = at;
          }
          ++at;
        });
        write<U>(out, spec.index ? convert<U>(best_at) : convert<U>(best));
        return;
      }
    }
  }

  const Graph& g_;
  Op scratch_;
  std::vector<char*> base_;
  std::unique_ptr<double[]> owned_;
};

}  // namespace

namespace {

// Storages whose bases run_kernels_only keeps on the stack.
constexpr size_t kStackBases = 64;

// Runs the stages' kernels straight on the buffers when every stage has one and no temporary
// needs memory here (a small call then allocates nothing); false, having run nothing, otherwise.
bool run_kernels_only(const Program& p, const std::vector<void*>& buffers) {
  const size_t n = p.graph.storages.size();
  if (n > kStackBases || p.unstored.size() != n) return false;
  for (size_t i = 0; i < p.stages.stages.size(); ++i)
    if (p.stages.stages[i].computed_in < 0 && !p.kernel(i)) return false;
  std::array<char*, kStackBases> base{};
  for (size_t s = 0; s < n; ++s) {
    const Storage& st = p.graph.storages[s];
    if (st.kind == StorageKind::Const) base[s] = const_cast<char*>(reinterpret_cast<const char*>(st.data.data()));
    else if (buffers[s]) base[s] = static_cast<char*>(buffers[s]);
    else if (!p.unstored[s]) return false;  // the Executor allocates it (or says what is missing)
  }
  for (size_t i = 0; i < p.stages.stages.size(); ++i)
    if (p.stages.stages[i].computed_in < 0) p.kernel(i)->run(base.data());
  return true;
}

}  // namespace

std::vector<int> region_jumps(const std::vector<const Op*>& control) {
  std::map<int, std::array<int, 3>> at;  // region -> its opening, else and closing units
  for (size_t u = 0; u < control.size(); ++u) {
    if (!control[u]) continue;
    std::array<int, 3>& r = at.try_emplace(control[u]->axes.at(0), std::array<int, 3>{-1, -1, -1}).first->second;
    const OpCode c = control[u]->code;
    const int slot = c == OpCode::loop_begin || c == OpCode::branch_if ? 0 : c == OpCode::branch_else ? 1
                     : c == OpCode::loop_end || c == OpCode::branch_end ? 2 : -1;
    if (slot >= 0) r[slot] = static_cast<int>(u);
  }
  std::vector<int> jumps(control.size(), -1);
  for (size_t u = 0; u < control.size(); ++u) {
    if (!control[u]) continue;
    const std::array<int, 3>& r = at.at(control[u]->axes[0]);
    if (r[0] < 0 || r[2] < 0) throw std::logic_error("a region without its opening or closing op");
    switch (control[u]->code) {
      case OpCode::loop_while: jumps[u] = r[2] + 1; break;
      case OpCode::loop_end: jumps[u] = r[0] + 1; break;
      case OpCode::branch_if: jumps[u] = r[1] >= 0 ? r[1] + 1 : r[2]; break;
      case OpCode::branch_else: jumps[u] = r[2]; break;
      default: break;
    }
  }
  return jumps;
}

namespace {

// Runs units 0..n-1 in order, where `run(u)` runs unit u and `jumps` (region_jumps; empty: no
// region) moves the run at the units whose control op `control(u)` names; `holds(op)` reads a
// loop_while's or branch_if's bool.
template <typename Control, typename Run, typename Holds>
void run_units(size_t n, const std::vector<int>& jumps, Control&& control, Run&& run, Holds&& holds) {
  for (size_t u = 0; u < n;) {
    const Op* c = jumps.empty() ? nullptr : control(u);
    if (!c) {
      run(u++);
      continue;
    }
    const bool conditional = c->code == OpCode::loop_while || c->code == OpCode::branch_if;
    u = jumps[u] >= 0 && (!conditional || !holds(*c)) ? static_cast<size_t>(jumps[u]) : u + 1;
  }
}

bool holds(char* const* base, const Op& c, const Graph& g) {
  const View& v = c.inputs[0];
  return *reinterpret_cast<const bool*>(base[v.storage] + v.offset * static_cast<int64_t>(itemsize(g.dtype_of(v))));
}

}  // namespace

void execute(const Program& p, const std::vector<void*>& buffers, bool latest_first) {
  const bool staged = !latest_first && !p.stages.stages.empty();
  // while a background compile runs, stages without their kernel yet store what it would keep
  // in registers
  const bool settled = p.settled();
  const bool unstored_holds = settled && p.unstored_holds;
  if (staged && unstored_holds && buffers.size() == p.graph.storages.size() && run_kernels_only(p, buffers)) return;
  static const std::vector<bool> kAllStored;
  Executor ex(p, buffers, staged && unstored_holds ? p.unstored : kAllStored);
  const auto truth = [&](const Op& c) { return holds(ex.bases(), c, p.graph); };
  if (!staged) {
    std::vector<const Op*> control(p.graph.ops.size(), nullptr);
    bool regions = false;
    for (size_t i = 0; i < control.size(); ++i)
      if (is_control(p.graph.ops[i].code)) regions = true, control[i] = &p.graph.ops[i];
    if (regions) {  // a loop's order is its program order: latest_first has nothing to reorder
      run_units(control.size(), region_jumps(control), [&](size_t i) { return control[i]; },
                [&](size_t i) { ex.run(p.graph.ops[i]); }, truth);
      return;
    }
    std::vector<int> order = p.dag.topological_order(latest_first);
    if (order.size() != p.graph.ops.size()) throw std::logic_error("the dependence graph has a cycle");
    for (int i : order) ex.run(p.graph.ops[i]);
    return;
  }
  run_units(p.stages.stages.size(), p.jumps, [&](size_t i) { return p.stages.stages[i].control(); }, [&](size_t i) {
    const Stage& s = p.stages.stages[i];
    if (s.computed_in >= 0) return;  // run by the stage that computes it
    const CompiledStage* kernel = p.kernel(i);
    if (!kernel && !settled) kernel = p.background.job->await(i);
    if (kernel) {
      kernel->run(ex.bases());
      return;
    }
    const auto start = settled ? std::chrono::steady_clock::time_point() : std::chrono::steady_clock::now();
    for (const Stage& m : s.computed_at)
      for (int id : m.op_ids) ex.run(p.graph.ops[id]);
    for (int id : s.op_ids) ex.run(p.graph.ops[id]);
    if (!settled) p.background.job->interpreted(i, std::chrono::steady_clock::now() - start);
  }, truth);
}

void execute_ops(const Program& p, const std::vector<int>& op_ids, const std::vector<void*>& buffers) {
  Executor ex(p, buffers, {}, true);
  for (int id : op_ids) ex.run(p.graph.ops[id]);
}

}  // namespace strider
