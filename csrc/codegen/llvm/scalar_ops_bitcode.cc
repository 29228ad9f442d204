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
// float16's take and return float (its register type), each result rounded to half. A dtype the
// op has no loop for (ops.def) gets a body that traps: the emitter never calls it.

// clang compiles float16 rounding to the target's conversion instructions (F16C), which vectorize
#define ST_NATIVE_HALF

#include <stdint.h>

#include <type_traits>

#include "ops/scalar_ops.h"

using namespace strider;  // ops.def's attributes
using strider::detail::loop_of;

namespace {

using st::reg_t;

// f(args...) where the op has a loop for T; the discarded call is never instantiated
template <uint32_t attrs, class R, class T, class F, class... A>
R on_loop(F f, A... args) {
  if constexpr ((attrs & loop_of<T>()) != 0) return f(args...);
  else __builtin_trap();
}

// an op's result type on T: bool for predicates and comparisons, else T's register type
template <uint32_t attrs, class T>
using result_t = std::conditional_t<(attrs & (kPredicate | kComparison)) != 0, bool, reg_t<T>>;

// an op's result as T holds it (float16 rounds); bool results as they are
template <class T, class R>
R as_dtype(R r) {
  if constexpr (std::is_same_v<R, bool>) return r;
  else return st::as_dtype<T>(r);
}

}  // namespace

#define ST_UNARY_FOR(name, attrs, T, t)                                                                     \
  extern "C" result_t<attrs, T> st_##name##_##t(reg_t<T> x) {                                               \
    return as_dtype<T>(on_loop<attrs, result_t<attrs, T>, T>([](auto v) { return st::name(v); }, x));     \
  }
#define ST_BINARY_FOR(name, attrs, T, t)                                                                    \
  extern "C" result_t<attrs, T> st_##name##_##t(reg_t<T> a, reg_t<T> b) {                                   \
    return as_dtype<T>(on_loop<attrs, result_t<attrs, T>, T>([](auto u, auto v) { return st::name(u, v); }, a, b)); \
  }                                                                                                         \
  extern "C" bool st_##name##_fails_##t(reg_t<T> a, reg_t<T> b) {                                           \
    return on_loop<(attrs) & kMayFail ? (attrs) : 0u, bool, T>(                                             \
        [](auto u, auto v) { using namespace st; return name##_fails(u, v); }, a, b);                       \
  }
// each(a, b, T, t) for every dtype of ir/dtypes.def: its C type and dtype_name
#define ST_EACH_DTYPE(each, a, b)                                                                           \
  each(a, b, bool, bool) each(a, b, int8_t, i8) each(a, b, int16_t, i16) each(a, b, int32_t, i32)           \
  each(a, b, int64_t, i64) each(a, b, uint8_t, u8) each(a, b, uint16_t, u16) each(a, b, uint32_t, u32)      \
  each(a, b, uint64_t, u64) each(a, b, st::half, f16) each(a, b, float, f32) each(a, b, double, f64)
static_assert(sizeof(kDTypes) / sizeof(kDTypes[0]) == 12, "a new dtype joins ST_EACH_DTYPE");

#define STRIDER_OP(name, kind, attrs)
#define STRIDER_UNARY(name, attrs) ST_EACH_DTYPE(ST_UNARY_FOR, name, (attrs))
#define STRIDER_BINARY(name, attrs) ST_EACH_DTYPE(ST_BINARY_FOR, name, (attrs))
#include "ir/ops.def"

#define ST_CONVERT(From, f, To, t) \
  extern "C" reg_t<To> st_convert_##f##_##t(reg_t<From> x) { return st::convert<To>(x); }
#define ST_PER_DTYPE(T, t)                                                                       \
  ST_EACH_DTYPE(ST_CONVERT, T, t)                                                                                  \
  extern "C" reg_t<T> st_arange_##t(reg_t<T> first, reg_t<T> second, int64_t i) {                                 \
    return st::as_dtype<T>(st::arange(first, second, i));                                                          \
  }                                                                                                                \
  extern "C" bool st_replaces_max_##t(reg_t<T> x, reg_t<T> kept) { return st::replaces<true>(x, kept); }         \
  extern "C" bool st_replaces_min_##t(reg_t<T> x, reg_t<T> kept) { return st::replaces<false>(x, kept); }
// float16's maximum and minimum (ir/graph.h's scalar_function)
extern "C" float st_maximum_first_f16(float a, float b) { return st::as_dtype<st::half>(st::maximum_first(a, b)); }
extern "C" float st_minimum_first_f16(float a, float b) { return st::as_dtype<st::half>(st::minimum_first(a, b)); }
ST_PER_DTYPE(bool, bool)
ST_PER_DTYPE(int8_t, i8)
ST_PER_DTYPE(int16_t, i16)
ST_PER_DTYPE(int32_t, i32)
ST_PER_DTYPE(int64_t, i64)
ST_PER_DTYPE(uint8_t, u8)
ST_PER_DTYPE(uint16_t, u16)
ST_PER_DTYPE(uint32_t, u32)
ST_PER_DTYPE(uint64_t, u64)
ST_PER_DTYPE(st::half, f16)
ST_PER_DTYPE(float, f32)
ST_PER_DTYPE(double, f64)
