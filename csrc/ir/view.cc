#include "ir/view.h"

#include <stdexcept>
#include <string>

namespace strider {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

int64_t View::numel() const { return shape_numel(shape); }

int64_t View::min_offset() const {
  int64_t lo = offset;
  for (int i = 0; i < ndim(); ++i)
    if (strides[i] < 0) lo += strides[i] * (shape[i] - 1);
  return lo;
}

int64_t View::max_offset() const {
  int64_t hi = offset;
  for (int i = 0; i < ndim(); ++i)
    if (strides[i] > 0) hi += strides[i] * (shape[i] - 1);
  return hi;
}

View View::head(int lead) const {
  View h;
  h.storage = storage;
  h.offset = offset;
  h.shape.assign(shape.begin(), shape.begin() + lead);
  h.strides.assign(strides.begin(), strides.begin() + lead);
  return h;
}

View View::tail(int lead, int64_t at) const {
  View t;
  t.storage = storage;
  t.offset = at;
  t.shape.assign(shape.begin() + lead, shape.end());
  t.strides.assign(strides.begin() + lead, strides.end());
  return t;
}

bool View::is_c_contiguous() const {
  if (numel() == 0) return true;
  int64_t expect = 1;
  for (int i = ndim(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (strides[i] != expect) return false;
    expect *= shape[i];
  }
  return true;
}

namespace {
// Keeps `extents` empty unless some dimension is dynamic.
void push_dim(View& v, int64_t size, int64_t stride, int extent) {
  if (extent >= 0 || v.is_dynamic()) {
    v.extents.resize(v.shape.size(), -1);
    v.extents.push_back(extent);
  }
  v.shape.push_back(size);
  v.strides.push_back(stride);
}

[[noreturn]] void dynamic_unsupported(const char* what) {
  throw std::invalid_argument(std::string(what) + " of a run-time dimension is not supported yet");
}
}  // namespace

View View::subscript(const std::vector<IndexItem>& items) const {
  View out;
  out.storage = storage;
  out.offset = offset;
  int dim = 0;
  for (const IndexItem& it : items) {
    switch (it.kind) {
      case IndexItem::NewAxis:
        push_dim(out, 1, 0, -1);
        break;
      case IndexItem::Int:
        if (dim >= ndim() || it.start < 0 || it.start >= shape[dim])
          throw std::out_of_range("index out of range in subscript");
        out.offset += it.start * strides[dim];
        ++dim;
        break;
      case IndexItem::Slice:
        if (dim >= ndim()) throw std::out_of_range("too many indices in subscript");
        if (extent_of(dim) >= 0) {
          // only the whole dimension keeps its run-time extent
          if (it.start != 0 || it.step != 1 || it.length != shape[dim]) dynamic_unsupported("slicing");
          push_dim(out, shape[dim], strides[dim], extent_of(dim));
        } else {
          push_dim(out, it.length, it.length > 0 ? strides[dim] * it.step : strides[dim], -1);
          if (it.length > 0) out.offset += it.start * strides[dim];
        }
        ++dim;
        break;
    }
  }
  for (; dim < ndim(); ++dim) push_dim(out, shape[dim], strides[dim], extent_of(dim));
  return out;
}

View View::transpose(const std::vector<int>& perm) const {
  if (static_cast<int>(perm.size()) != ndim()) throw std::invalid_argument("axes don't match array");
  View out = *this;
  std::vector<bool> seen(ndim(), false);
  for (int i = 0; i < ndim(); ++i) {
    int p = perm[i];
    if (p < 0 || p >= ndim() || seen[p]) throw std::invalid_argument("invalid axes permutation");
    seen[p] = true;
    out.shape[i] = shape[p];
    out.strides[i] = strides[p];
    if (is_dynamic()) out.extents[i] = extents[p];
  }
  return out;
}

View View::broadcast_to(const Shape& to, const std::vector<int>& to_extents) const {
  if (to.size() < shape.size()) throw std::invalid_argument("cannot broadcast to fewer dimensions");
  if (!to_extents.empty() && to_extents.size() != to.size()) throw std::invalid_argument("one extent per dimension");
  View out;
  out.storage = storage;
  out.offset = offset;
  out.shape = to;
  out.strides.assign(to.size(), 0);
  for (int e : to_extents)
    if (e >= 0) out.extents = to_extents;
  size_t lead = to.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    const int mine = extent_of(static_cast<int>(i));
    const int theirs = out.extent_of(static_cast<int>(lead + i));
    if (mine >= 0 || theirs >= 0) {
      if (mine == theirs && shape[i] == to[lead + i]) out.strides[lead + i] = strides[i];
      else if (mine >= 0 || shape[i] != 1) throw std::invalid_argument("shapes are not broadcast-compatible");
    } else if (shape[i] == to[lead + i]) {
      out.strides[lead + i] = shape[i] == 1 ? 0 : strides[i];
    } else if (shape[i] != 1) {
      throw std::invalid_argument("shapes are not broadcast-compatible");
    }
  }
  return out;
}

// NumPy's _attempt_nocopy_reshape: walk the old and new shapes in chunks of equal element
// count; a chunk of old axes can be regrouped only if they are contiguous among themselves.
std::optional<View> View::reshape(const Shape& to) const {
  if (is_dynamic()) dynamic_unsupported("reshaping");
  if (shape_numel(to) != numel()) throw std::invalid_argument("cannot reshape: sizes differ");
  View out;
  out.storage = storage;
  out.offset = offset;
  out.shape = to;
  if (numel() == 0 || is_c_contiguous()) {
    out.strides = contiguous_strides(to);
    return out;
  }
  Shape os, ostr;
  for (int i = 0; i < ndim(); ++i)
    if (shape[i] != 1) {
      os.push_back(shape[i]);
      ostr.push_back(strides[i]);
    }
  out.strides.assign(to.size(), 0);
  size_t oi = 0, oj = 1, ni = 0, nj = 1;
  const size_t on = os.size(), nn = to.size();
  while (ni < nn && oi < on) {
    int64_t np_ = to[ni], op = os[oi];
    while (np_ != op) {
      if (np_ < op) np_ *= to[nj++];
      else op *= os[oj++];
    }
    for (size_t ok = oi; ok + 1 < oj; ++ok)
      if (ostr[ok] != os[ok + 1] * ostr[ok + 1]) return std::nullopt;
    out.strides[nj - 1] = ostr[oj - 1];
    for (size_t nk = nj - 1; nk > ni; --nk) out.strides[nk - 1] = out.strides[nk] * to[nk];
    ni = nj++;
    oi = oj++;
  }
  // trailing size-1 axes of the new shape
  for (; ni < nn; ++ni) out.strides[ni] = 1;
  return out;
}

}  // namespace strider
