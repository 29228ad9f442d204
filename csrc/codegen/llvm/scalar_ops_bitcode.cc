// ops/scalar_ops.inc as LLVM bitcode for the LLVM backend: compiled by clang at build time (not by
// the host compiler; CMakeLists.txt), embedded, and linked into every stage module that calls it
// (Emitter::link_scalar_ops in emit_elementwise.cc), where the optimizer inlines it and the loop vectorizer widens it. So the JIT
// computes each op with the very text the reference executor and the CUDA prelude compile.
//
// One C-named function per elementwise op and loop dtype (dtype_name spells the suffix):
//   st_<op>_<t>(x) / st_<op>_<t>(a, b)   the op; a bool result for predicates and comparisons
//   st_<op>_fails_<t>(a, b)              for kMayFail ops: whether NumPy raises
//   st_convert_<from>_<to>(x)            casts
//   st_arange_<t>(first, second, i)      arange's fill
//   st_replaces_max_<t>(x, kept), _min_  the extremes' fold rule
// A dtype the op has no loop for (ops.def) gets a body that traps: the emitter never calls it.

#include <stdint.h>

#include <type_traits>

#include "ops/scalar_ops.h"

using namespace strider;  // ops.def's attributes
using strider::detail::loop_of;

namespace {

// f(args...) where the op has a loop for T; the discarded call is never instantiated
template <uint32_t attrs, class R, class T, class F, class... A>
R on_loop(F f, A... args) {
  if constexpr ((attrs & loop_of<T>()) != 0) return f(args...);
  else __builtin_trap();
}

// an op's result type on T: bool for predicates and comparisons
template <uint32_t attrs, class T>
using result_t = std::conditional_t<(attrs & (kPredicate | kComparison)) != 0, bool, T>;

}  // namespace

#define ST_UNARY_FOR(name, attrs, T, t)                                                    \
  extern "C" result_t<attrs, T> st_##name##_##t(T x) {                                     \
    return on_loop<attrs, result_t<attrs, T>, T>([](auto v) { return st::name(v); }, x);   \
  }
#define ST_BINARY_FOR(name, attrs, T, t)                                                            \
  extern "C" result_t<attrs, T> st_##name##_##t(T a, T b) {                                         \
    return on_loop<attrs, result_t<attrs, T>, T>([](auto u, auto v) { return st::name(u, v); }, a, b); \
  }                                                                                                 \
  extern "C" bool st_##name##_fails_##t(T a, T b) {                                               \
    return on_loop<(attrs) & kMayFail ? (attrs) : 0u, bool, T>(                          \
        [](auto u, auto v) { using namespace st; return name##_fails(u, v); }, a, b);             \
  }
#define ST_FOR_DTYPES(each, name, attrs) \
  each(name, attrs, bool, bool) each(name, attrs, int32_t, i32) each(name, attrs, int64_t, i64) \
  each(name, attrs, float, f32) each(name, attrs, double, f64)

#define STRIDER_OP(name, kind, attrs)
#define STRIDER_UNARY(name, attrs) ST_FOR_DTYPES(ST_UNARY_FOR, name, (attrs))
#define STRIDER_BINARY(name, attrs) ST_FOR_DTYPES(ST_BINARY_FOR, name, (attrs))
#include "ir/ops.def"

#define ST_CONVERT(from, f, to, t) \
  extern "C" to st_convert_##f##_##t(from x) { return st::convert<to>(x); }
#define ST_PER_DTYPE(T, t)                                                                              \
  ST_CONVERT(T, t, bool, bool) ST_CONVERT(T, t, int32_t, i32) ST_CONVERT(T, t, int64_t, i64)            \
  ST_CONVERT(T, t, float, f32) ST_CONVERT(T, t, double, f64)                                           \
  extern "C" T st_arange_##t(T first, T second, int64_t i) { return st::arange(first, second, i); }     \
  extern "C" bool st_replaces_max_##t(T x, T kept) { return st::replaces<true>(x, kept); }              \
  extern "C" bool st_replaces_min_##t(T x, T kept) { return st::replaces<false>(x, kept); }
ST_PER_DTYPE(bool, bool)
ST_PER_DTYPE(int32_t, i32)
ST_PER_DTYPE(int64_t, i64)
ST_PER_DTYPE(float, f32)
ST_PER_DTYPE(double, f64)
