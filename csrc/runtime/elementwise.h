#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>

#include "ir/graph.h"
#include "ops/numpy_loops.h"
#include "ops/scalar_ops.h"

// The reference executor's dispatch of op codes onto the scalar semantics of ops/scalar_ops.inc.
// An op applied to a dtype it has no loop for (ops.def) throws std::logic_error.
namespace strider::detail {

[[noreturn]] inline void no_loop(OpCode op, const char* family) {
  throw std::logic_error(std::string(op_name(op)) + " has no " + family + " loop");
}

template <typename T>
[[noreturn]] void no_loop(OpCode op) {
  no_loop(op, st::is_bool_v<T> ? "bool" : st::is_float_v<T> ? "float" : "integer");
}

/// A unary op that keeps its input's dtype T (float16 computes in float and rounds).
template <typename T>
st::reg_t<T> unary_same(OpCode op, st::reg_t<T> x) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    const DType t = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
    if (numpy_decides(op, t)) {  // the JIT's code calls the same loop (ops/numpy_loops.h)
      T out;
      run_numpy_loop(op, t, &x, &out, 1);
      return out;
    }
  }
  switch (op) {
#define STRIDER_OP(name, kind, attrs)
#define STRIDER_UNARY(name, attrs) \
    case OpCode::name:             \
      if constexpr (((attrs) & kPredicate) == 0 && ((attrs) & loop_of<T>()) != 0) return st::as_dtype<T>(st::name(x)); \
      break;
#include "ir/ops.def"
    default: break;
  }
  no_loop<T>(op);
}

/// A unary op with a bool result.
template <typename T>
bool unary_predicate(OpCode op, st::reg_t<T> x) {
  switch (op) {
#define STRIDER_OP(name, kind, attrs)
#define STRIDER_UNARY(name, attrs) \
    case OpCode::name:             \
      if constexpr (((attrs) & kPredicate) != 0 && ((attrs) & loop_of<T>()) != 0) return st::name(x); \
      break;
#include "ir/ops.def"
    default: break;
  }
  no_loop<T>(op);
}

/// A binary op with a bool result.
template <typename T>
bool compare(OpCode op, st::reg_t<T> a, st::reg_t<T> b) {
  switch (op) {
#define STRIDER_OP(name, kind, attrs)
#define STRIDER_BINARY(name, attrs) \
    case OpCode::name:              \
      if constexpr (((attrs) & kComparison) != 0 && ((attrs) & loop_of<T>()) != 0) return st::name(a, b); \
      break;
#include "ir/ops.def"
    default: break;
  }
  no_loop<T>(op);
}

/// A binary op that keeps its inputs' dtype; throws std::domain_error where NumPy raises (where
/// st::<op>_fails, for a kMayFail op).
template <typename T>
st::reg_t<T> binary_same(OpCode op, st::reg_t<T> a, st::reg_t<T> b) {
  // <op>_fails is looked up unqualified: a dependent name, never looked up for an op without it
  using namespace st;
  if constexpr (st::is_half_v<T>) {  // ir/graph.h's scalar_function
    if (op == OpCode::maximum) return st::as_dtype<T>(st::maximum_first(a, b));
    if (op == OpCode::minimum) return st::as_dtype<T>(st::minimum_first(a, b));
  }
  switch (op) {
#define STRIDER_OP(name, kind, attrs)
#define STRIDER_BINARY(name, attrs)                                                         \
    case OpCode::name:                                                                      \
      if constexpr (((attrs) & kComparison) == 0 && ((attrs) & loop_of<T>()) != 0) {        \
        if constexpr (((attrs) & kMayFail) != 0)                                            \
          if (name##_fails(a, b)) throw std::domain_error(kMayFailMessage);                 \
        return st::as_dtype<T>(st::name(a, b));                                             \
      }                                                                                     \
      break;
#include "ir/ops.def"
    default: break;
  }
  no_loop<T>(op);
}

}  // namespace strider::detail
