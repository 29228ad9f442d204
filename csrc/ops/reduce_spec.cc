#include "ops/reduce_spec.h"

#include <stdexcept>
#include <string>

namespace strider {

ReduceSpec reduce_spec(OpCode code, DType in, DType out) {
  using C = ReduceSpec::Combine;
  ReduceSpec s;
  s.acc = in;
  switch (code) {
    case OpCode::sum:
    case OpCode::prod:
      s.combine = code == OpCode::sum ? C::Add : C::Multiply;
      // a float sum in float64 (NumPy's pairwise sum is about as close to it); a float product in
      // its own dtype, in order, as NumPy multiplies: bit for bit
      if (is_float(in))
        s.acc = out == DType::Float16 ? DType::Float16 : code == OpCode::sum || !is_float(out) ? DType::Float64 : out;
      break;
    case OpCode::any: s.combine = C::Or; s.acc = DType::Bool; break;
    case OpCode::all: s.combine = C::And; s.acc = DType::Bool; break;
    case OpCode::max: case OpCode::argmax: s.combine = C::Max; break;
    case OpCode::min: case OpCode::argmin: s.combine = C::Min; break;
    default: throw std::logic_error(std::string(op_name(code)) + " is not a reduction");
  }
  s.index = code == OpCode::argmax || code == OpCode::argmin;
  return s;
}

}  // namespace strider
