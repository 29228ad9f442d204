#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace strider {

/// How a reduction folds its elements, as NumPy's: the one definition the reference executor,
/// the LLVM backend and the CUDA backend follow. max, min, argmax and argmin keep the first NaN,
/// else the first element strictly better than every one before it (st::replaces in
/// ops/scalar_ops.inc), so ties keep the first index.
struct ReduceSpec {
  enum class Combine : uint8_t { Add, Multiply, Or, And, Max, Min };
  Combine combine = Combine::Add;
  /// The accumulator's dtype: float sums in float64 (then rounded to the input's dtype), float
  /// products in their own, in order (NumPy's, bit for bit), integer ones wrapping in the
  /// input's, bool ones as or / and; any and all in bool;
  /// the extremes in the input's. Float sums and products into float16 accumulate as NumPy's
  /// float16 loop steps them: Float16, in float rounded to half after every step, in order.
  DType acc = DType::Float64;
  /// argmax, argmin: the result is the flat index (over the folded axes) of the element kept.
  bool index = false;

  /// sum, prod, any and all start from their identity; an empty max, min or arg fold raises.
  bool has_identity() const { return combine != Combine::Max && combine != Combine::Min; }
  /// The identity: 0 for Add and Or, 1 for Multiply and And.
  int identity() const { return combine == Combine::Multiply || combine == Combine::And ? 1 : 0; }
  bool is_max() const { return combine == Combine::Max; }
  /// Whether the fold must take each output's elements in order to be NumPy's: float16 steps
  /// round after each, and float products are NumPy's bit for bit only in order.
  bool in_order() const { return acc == DType::Float16 || (combine == Combine::Multiply && is_float(acc)); }
};

/// The fold of a Reduce op (sum, prod, max, min, argmax, argmin, any, all) over elements of `in`
/// into a result of dtype `out`.
ReduceSpec reduce_spec(OpCode code, DType in, DType out);

}  // namespace strider
