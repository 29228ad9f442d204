#pragma once

// What the backends' tests share: memory for a graph's storages, inputs with the interesting values
// first, comparison with the reference executor's results (bit for bit, or within ulps), and
// one-op graphs in the IR's text form.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/executor.h"
#include "schedule/loop_nest.h"

namespace strider::testing {


// Memory for every storage of a graph (consts point at their data).
struct Memory {
  std::vector<std::vector<uint64_t>> blocks;
  std::vector<void*> ptrs;

  explicit Memory(const Graph& g) {
    for (const Storage& s : g.storages) {
      blocks.emplace_back((s.size * itemsize(s.dtype) + 7) / 8 + 1, 0);
      ptrs.push_back(s.kind == StorageKind::Const ? const_cast<uint8_t*>(s.data.data())
                                                  : static_cast<void*>(blocks.back().data()));
    }
  }
  char* at(int s) { return static_cast<char*>(ptrs[s]); }
  std::vector<char*> bases() {
    std::vector<char*> b;
    for (void* p : ptrs) b.push_back(static_cast<char*>(p));
    return b;
  }
};

// Deterministic inputs with the interesting values first: signed zeros, infinities, NaN,
// integer extremes, values around rounding boundaries.
inline void fill(DType t, char* out, int64_t n, uint32_t seed, bool small_ints = false) {
  std::mt19937 rng(seed);
  const double fspecial[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.5, 2.5, 3.7, -3.7, 1e-3, 1e10, -1e10,
                             1e30, INFINITY, -INFINITY, NAN, 0.25, 100.0, 0.9, -0.9, 1.5, 7.0, -7.0, 1e-40};
  const int64_t ispecial[] = {0, 1, -1, 2, -2, 7, -7, 3, 31, 32, 33, 63, 64, 100, -100,
                              std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                              std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
  for (int64_t i = 0; i < n; ++i) {
    double f;
    int64_t k;
    const int64_t nf = sizeof(fspecial) / sizeof(double), ni = sizeof(ispecial) / sizeof(int64_t);
    f = i < nf ? fspecial[(i + seed) % nf] : std::uniform_real_distribution<double>(-10, 10)(rng);
    if (i >= nf && i % 3 == 0) f = std::uniform_real_distribution<double>(0, 1)(rng);
    k = i < ni ? ispecial[(i + seed) % ni] : std::uniform_int_distribution<int64_t>(-50, 50)(rng);
    if (small_ints) k = std::uniform_int_distribution<int64_t>(0, 12)(rng);
    switch (t) {
      case DType::Bool: out[i] = static_cast<char>((i * 7 + seed) % 3 == 0); break;
      case DType::Int32: reinterpret_cast<int32_t*>(out)[i] = static_cast<int32_t>(i < ni ? static_cast<int32_t>(k) : k); break;
      case DType::Int64: reinterpret_cast<int64_t*>(out)[i] = k; break;
      case DType::Float32: reinterpret_cast<float*>(out)[i] = static_cast<float>(f); break;
      case DType::Float64: reinterpret_cast<double*>(out)[i] = f; break;
    }
  }
}

// Within `ulps` units of the larger of |a|, |b| and `magnitude` (the size of the terms a sum
// cancelled, where there was cancellation).
struct Tolerance {
  double ulps = 0;
  double magnitude = 0;
};

template <typename F>
bool close(F a, F b, Tolerance tol) {
  const double ulps = tol.ulps;
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  if (ulps == 0 || std::isinf(a) || std::isinf(b)) return false;
  const F scale = std::max({std::fabs(a), std::fabs(b), static_cast<F>(tol.magnitude)});
  const F tiny = std::is_same_v<F, float> ? F(1e-30) : F(1e-300);
  return std::fabs(a - b) <= ulps * std::numeric_limits<F>::epsilon() * std::max(scale, tiny);
}

// Compares storage s of two runs element by element; returns the first mismatch as text.
inline std::string compare(const Graph& g, int s, const char* a, const char* b, Tolerance tol) {
  const double ulps = tol.ulps;
  const Storage& st = g.storages[s];
  for (int64_t i = 0; i < st.size; ++i) {
    bool same = true;
    std::ostringstream why;
    // floats: within the tolerance, or bit for bit (any NaN matches a NaN)
    auto floats = [&](auto x, auto y) {
      constexpr size_t n = sizeof(x);
      std::memcpy(&x, a + n * i, n);
      std::memcpy(&y, b + n * i, n);
      same = ulps > 0 ? close(x, y, tol) : (std::isnan(x) ? std::isnan(y) : std::memcmp(&x, &y, n) == 0);
      why << x << " vs " << y;
    };
    switch (st.dtype) {
      case DType::Float32: floats(0.0f, 0.0f); break;
      case DType::Float64: floats(0.0, 0.0); break;
      default: {
        const size_t es = itemsize(st.dtype);
        int64_t x = 0, y = 0;
        std::memcpy(&x, a + es * i, es);
        std::memcpy(&y, b + es * i, es);
        same = x == y;
        why << x << " vs " << y;
      }
    }
    if (!same) return "%s" + std::to_string(s) + "[" + std::to_string(i) + "]: reference " + why.str();
  }
  return "";
}

// A stage made of the listed graph ops with their views as they are (they already have the domain's shape).
inline Stage stage_of(const Graph& g, Shape domain, std::vector<int> ops, std::vector<int> registers = {}, int width = 8,
               bool parallel = false, int unroll = 1) {
  Stage s;
  s.domain = std::move(domain);
  for (int i : ops) {
    s.op_ids.push_back(i);
    s.ops.push_back(g.ops[i]);
  }
  if (op_kind(s.ops.back().code) == OpKind::Reduce) s.reduce_axes = s.ops.back().axes;
  s.registers = std::move(registers);
  s.schedule.vector_width = width;
  s.schedule.parallel = parallel;
  s.schedule.unroll = unroll;
  return s;
}

// The graph text with every "T[" storage typed t.
inline Graph typed(std::string text, DType t) {
  for (size_t at = text.find(" T["); at != std::string::npos; at = text.find(" T[", at))
    text.replace(at + 1, 1, dtype_name(t));
  return parse_graph(text);
}

// The reference: the graph's ops one at a time in the DAG's order (no fusion, no JIT).
inline void run_reference(const Graph& g, const std::vector<void*>& buffers) {
  Program p;
  p.graph = g;
  p.table = build_storage_table(g);
  p.dag = build_dependence_dag(g, p.table);
  execute(p, buffers);
}

// libm's results may differ from the reference's by a few ulps
inline bool transcendental(OpCode op) { return (op_attrs(op) & kLibm) != 0; }

inline std::vector<OpCode> ops_of_kind(OpKind kind) {
  std::vector<OpCode> out;
#define STRIDER_OP(name, k, attrs) \
  if (OpKind::k == kind) out.push_back(OpCode::name);
#include "ir/ops.def"
  return out;
}

inline std::string unary_graph(OpCode op, DType t, DType u, int64_t n) {
  std::ostringstream s;
  s << "graph @t {\n  %s0 = storage " << dtype_name(t) << "[" << n << "] arg 0\n  %s1 = storage " << dtype_name(u)
    << "[" << n << "] arg 1\n  op0 = " << op_name(op) << "(%s0[" << n << "]{1}+0) -> %s1[" << n << "]{1}+0\n  return\n}";
  return s.str();
}

inline std::string binary_graph(OpCode op, DType t, DType u, int64_t n) {
  std::ostringstream s;
  s << "graph @t {\n  %s0 = storage " << dtype_name(t) << "[" << n << "] arg 0\n  %s1 = storage " << dtype_name(t)
    << "[" << n << "] arg 1\n  %s2 = storage " << dtype_name(u) << "[" << n << "] arg 2\n  op0 = " << op_name(op)
    << "(%s0[" << n << "]{1}+0, %s1[" << n << "]{1}+0) -> %s2[" << n << "]{1}+0\n  return\n}";
  return s.str();
}

inline std::string reduce_graph(OpCode op, DType t, DType u, const Shape& shape, const std::vector<int>& axes) {
  std::ostringstream s;
  const int64_t n = shape_numel(shape);
  Shape strides = contiguous_strides(shape), kept;
  for (int d = 0, k = 0; d < static_cast<int>(shape.size()); ++d) {
    if (k < static_cast<int>(axes.size()) && axes[k] == d) ++k;
    else kept.push_back(shape[d]);
  }
  Shape kstrides = contiguous_strides(kept);
  auto dims = [](const Shape& v) {
    std::ostringstream o;
    for (size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << v[i];
    return o.str();
  };
  s << "graph @t {\n  %s0 = storage " << dtype_name(t) << "[" << n << "] arg 0\n  %s1 = storage " << dtype_name(u)
    << "[" << std::max<int64_t>(1, shape_numel(kept)) << "] arg 1\n  op0 = " << op_name(op) << "(%s0[" << dims(shape)
    << "]{" << dims(strides) << "}+0) axes=[" << dims(Shape(axes.begin(), axes.end())) << "] -> %s1[" << dims(kept)
    << "]{" << dims(kstrides) << "}+0\n  return\n}";
  return s.str();
}

}  // namespace strider::testing
