#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

// float16's storage, as ops/scalar_ops.inc (which includes nothing) defines it for itself
#ifndef ST_HALF_DEFINED
#define ST_HALF_DEFINED
namespace st {
struct half { unsigned short bits; };
}  // namespace st
#endif

namespace strider {

/// Element types the IR carries (ir/dtypes.def): NumPy's bool, int8 to int64, uint8 to uint64,
/// float16, float32 and float64.
enum class DType : uint8_t {
#define STRIDER_DTYPE(e, c, name, numpy, kind) e,
#include "ir/dtypes.def"
};
/// Every DType, in dtypes.def's order.
inline constexpr DType kDTypes[] = {
#define STRIDER_DTYPE(e, c, name, numpy, kind) DType::e,
#include "ir/dtypes.def"
};

size_t itemsize(DType t);
/// Short name used in the text form: bool, i8 ... i64, u8 ... u64, f16, f32, f64.
const char* dtype_name(DType t);
/// NumPy's name: bool, int8, ..., float64.
const char* numpy_name(DType t);
/// Accepts the short names and NumPy's names (float32, int64, ...); throws on anything else.
DType parse_dtype(const std::string& s);
/// NumPy's kind: 'b', 'i', 'u' or 'f'.
char dtype_kind(DType t);
bool is_float(DType t);

/// Calls f(T{}) with the C type of t (st::half for float16).
template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
#define STRIDER_DTYPE(e, c, name, numpy, kind) \
  case DType::e: return f(c{});
#include "ir/dtypes.def"
  }
  return f(double{});
}

}  // namespace strider
