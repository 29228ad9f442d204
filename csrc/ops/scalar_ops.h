#pragma once

// The scalar semantics of every elementwise op (scalar_ops.inc) for host code: the reference
// executor, and the bitcode the LLVM JIT links (codegen/llvm/scalar_ops_bitcode.cc). CUDA stages
// compile the same text (codegen/cuda, embedded at build time).

#include <math.h>  // C's math library in the global namespace, isnan and signbit overloaded

#include <cstdint>

#include "ir/graph.h"

#define ST_FN inline
#include "ops/scalar_ops.inc"
#undef ST_FN

namespace strider::detail {

/// ops.def's loop attribute for the C type T.
template <typename T>
constexpr uint32_t loop_of() {
  return st::is_bool_v<T> ? kBool : st::is_float_v<T> ? kFloat : kInt;
}

}  // namespace strider::detail
