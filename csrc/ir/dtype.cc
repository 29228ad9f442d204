#include "ir/dtype.h"

#include <stdexcept>

namespace strider {

size_t itemsize(DType t) {
  return dispatch_dtype(t, [](auto v) { return sizeof(v); });
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::Int32: return "i32";
    case DType::Int64: return "i64";
    case DType::Float32: return "f32";
    case DType::Float64: break;
  }
  return "f64";
}

DType parse_dtype(const std::string& s) {
  if (s == "bool") return DType::Bool;
  if (s == "i32" || s == "int32") return DType::Int32;
  if (s == "i64" || s == "int64") return DType::Int64;
  if (s == "f32" || s == "float32") return DType::Float32;
  if (s == "f64" || s == "float64") return DType::Float64;
  throw std::invalid_argument("unsupported dtype '" + s + "'");
}

bool is_float(DType t) { return t == DType::Float32 || t == DType::Float64; }

}  // namespace strider
