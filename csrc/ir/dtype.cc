#include "ir/dtype.h"

#include <stdexcept>

namespace strider {

size_t itemsize(DType t) {
  return dispatch_dtype(t, [](auto v) { return sizeof(v); });
}

const char* dtype_name(DType t) {
  switch (t) {
#define STRIDER_DTYPE(e, c, name, numpy, kind) \
  case DType::e: return name;
#include "ir/dtypes.def"
  }
  return "?";
}

const char* numpy_name(DType t) {
  switch (t) {
#define STRIDER_DTYPE(e, c, name, numpy, kind) \
  case DType::e: return numpy;
#include "ir/dtypes.def"
  }
  return "?";
}

char dtype_kind(DType t) {
  switch (t) {
#define STRIDER_DTYPE(e, c, name, numpy, kind) \
  case DType::e: return kind;
#include "ir/dtypes.def"
  }
  return '?';
}

DType parse_dtype(const std::string& s) {
  for (DType t : kDTypes)
    if (s == dtype_name(t) || s == numpy_name(t)) return t;
  throw std::invalid_argument("unsupported dtype '" + s + "'");
}

bool is_float(DType t) { return dtype_kind(t) == 'f'; }

}  // namespace strider
