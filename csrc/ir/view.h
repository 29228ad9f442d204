#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strider {

using Shape = std::vector<int64_t>;

/// One item of a normalized basic-indexing key (Python resolves negative and out-of-range
/// bounds with slice.indices and expands the ellipsis before it gets here).
struct IndexItem {
  enum Kind : uint8_t { Int, Slice, NewAxis } kind = Int;
  int64_t start = 0;   // Int: the index; Slice: first element
  int64_t step = 1;    // Slice only
  int64_t length = 0;  // Slice only: number of elements selected
};

/// NumPy's array model on an IR storage: element offset and strides (in elements, any sign,
/// 0 for broadcast dims). Views never copy; every function here returns a new view of the same
/// storage.
///
/// A dimension may be known only at run time (the count of a boolean mask): `extents[d]` then
/// names a storage whose first i64 element holds it, and `shape[d]` is its static upper bound.
/// Analyses reason on the bound, which is sound (the real footprint is a subset); the executor
/// reads the extent. `extents` is empty when every dimension is static.
struct View {
  int storage = -1;
  Shape shape;
  Shape strides;
  int64_t offset = 0;
  std::vector<int> extents;

  bool is_dynamic() const { return !extents.empty(); }
  /// The storage holding dimension d's runtime extent, or -1 when d is static.
  int extent_of(int d) const { return extents.empty() ? -1 : extents[d]; }

  int ndim() const { return static_cast<int>(shape.size()); }
  int64_t numel() const;
  /// Smallest and largest storage offset the view touches; only meaningful when numel() > 0.
  int64_t min_offset() const;
  int64_t max_offset() const;
  /// True when the view covers numel() consecutive elements in C order.
  bool is_c_contiguous() const;

  /// The first `lead` axes (where rows start) and the axes after them from element `at` (one
  /// row), without run-time extents: their shapes are the static bounds.
  View head(int lead) const;
  View tail(int lead, int64_t at = 0) const;

  View subscript(const std::vector<IndexItem>& items) const;
  View transpose(const std::vector<int>& perm) const;
  /// NumPy's broadcasting of this view to `to` (run-time extents `to_extents`, empty when none);
  /// throws std::invalid_argument when incompatible. A run-time dimension broadcasts only to
  /// itself, and only a static 1 to a run-time dimension.
  View broadcast_to(const Shape& to, const std::vector<int>& to_extents = {}) const;
  /// A view with the new shape when NumPy's reshape would not copy; nullopt otherwise.
  std::optional<View> reshape(const Shape& to) const;

  bool operator==(const View& o) const {
    return storage == o.storage && shape == o.shape && strides == o.strides && offset == o.offset &&
           extents == o.extents;
  }
  bool operator!=(const View& o) const { return !(*this == o); }
};

/// C-order strides (in elements) of a dense array of `shape`.
Shape contiguous_strides(const Shape& shape);
int64_t shape_numel(const Shape& shape);

}  // namespace strider
