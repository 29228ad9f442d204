#pragma once

#include <vector>

#include "ir/view.h"

namespace strider::oracle {

/// The oracle for views: the storage offset of every element, in C order of the view's index
/// box (for a stage's views: the order its loops visit them).
inline std::vector<int64_t> offsets(const View& v) {
  std::vector<int64_t> out, idx(v.ndim(), 0);
  if (v.numel() == 0) return out;
  while (true) {
    int64_t off = v.offset;
    for (int d = 0; d < v.ndim(); ++d) off += idx[d] * v.strides[d];
    out.push_back(off);
    int d = v.ndim() - 1;
    for (; d >= 0 && ++idx[d] == v.shape[d]; --d) idx[d] = 0;
    if (d < 0) return out;
  }
}

}  // namespace strider::oracle
