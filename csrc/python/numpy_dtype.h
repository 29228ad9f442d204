#pragma once

// strider's dtypes as NumPy's type numbers, both ways (include numpy/arrayobject.h first).

#include <optional>

#include "ir/dtype.h"

namespace strider::python {

/// The DType of NumPy's type number t, or none (complex, datetime, object, longdouble, ...).
inline std::optional<DType> dtype_of_typenum(int t) {
  switch (t) {
    case NPY_BOOL: return DType::Bool;
    case NPY_INT8: return DType::Int8;
    case NPY_UINT8: return DType::UInt8;
    case NPY_INT16: return DType::Int16;
    case NPY_UINT16: return DType::UInt16;
    case NPY_INT32: return DType::Int32;
    case NPY_UINT32: return DType::UInt32;
    case NPY_FLOAT16: return DType::Float16;
    case NPY_FLOAT32: return DType::Float32;
    case NPY_FLOAT64: return DType::Float64;
    default: break;
  }
  // int64 and uint64 have two type numbers each (long and long long on LP64)
  if (t == NPY_LONG || t == NPY_LONGLONG) return sizeof(long) == 8 || t == NPY_LONGLONG ? DType::Int64 : DType::Int32;
  if (t == NPY_ULONG || t == NPY_ULONGLONG) return sizeof(long) == 8 || t == NPY_ULONGLONG ? DType::UInt64 : DType::UInt32;
  return std::nullopt;
}

/// NumPy's type number of t.
inline int typenum(DType t) {
  switch (t) {
    case DType::Bool: return NPY_BOOL;
    case DType::Int8: return NPY_INT8;
    case DType::UInt8: return NPY_UINT8;
    case DType::Int16: return NPY_INT16;
    case DType::UInt16: return NPY_UINT16;
    case DType::Int32: return NPY_INT32;
    case DType::UInt32: return NPY_UINT32;
    case DType::Int64: return NPY_INT64;
    case DType::UInt64: return NPY_UINT64;
    case DType::Float16: return NPY_FLOAT16;
    case DType::Float32: return NPY_FLOAT32;
    case DType::Float64: break;
  }
  return NPY_FLOAT64;
}

}  // namespace strider::python
