#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace strider {

/// Element types the IR carries; NumPy's bool, int32, int64, float32, float64.
enum class DType : uint8_t { Bool, Int32, Int64, Float32, Float64 };

size_t itemsize(DType t);
/// Short name used in the text form: bool, i32, i64, f32, f64.
const char* dtype_name(DType t);
/// Accepts the short names and NumPy's names (float32, int64, ...); throws on anything else.
DType parse_dtype(const std::string& s);
bool is_float(DType t);

/// Calls f(T{}) with the C++ type of t.
template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Bool: return f(bool{});
    case DType::Int32: return f(int32_t{});
    case DType::Int64: return f(int64_t{});
    case DType::Float32: return f(float{});
    case DType::Float64: break;
  }
  return f(double{});
}

}  // namespace strider
