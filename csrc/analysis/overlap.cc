#include "analysis/overlap.h"

#include <isl/ctx.h>
#include <isl/set.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace strider {

namespace {

// isl contexts are not thread-safe; one per thread, freed when the thread ends.
isl_ctx* thread_ctx() {
  struct Ctx {
    isl_ctx* ctx = isl_ctx_alloc();
    ~Ctx() { isl_ctx_free(ctx); }
  };
  thread_local Ctx c;
  return c.ctx;
}

// Whether the isl set written `text` has a point, unless quick() says (1 or 0; -1: it cannot).
// The same questions come back (each pass asks again, and so do the stages of other functions
// with the same shapes): answers are kept per thread, a bounded number of them.
bool has_point(const std::string& text, const std::function<int()>& quick = [] { return -1; }) {
  thread_local std::unordered_map<std::string, bool> answers;
  if (auto it = answers.find(text); it != answers.end()) return it->second;
  if (answers.size() >= 4096) answers.clear();
  if (const int known = quick(); known >= 0) return answers[text] = known == 1;
  isl_set* set = isl_set_read_from_str(thread_ctx(), text.c_str());
  if (!set) throw std::runtime_error("isl could not read " + text);
  isl_bool empty = isl_set_is_empty(set);
  isl_set_free(set);
  if (empty == isl_bool_error) throw std::runtime_error("isl failed on " + text);
  return answers[text] = empty == isl_bool_false;
}

// Appends the affine offset expression of `v` over fresh variables named `prefix`k and their
// bounds; dims of extent 1 or stride 0 contribute a constant and need no variable.
void affine(const View& v, const char* prefix, std::ostringstream& vars, std::ostringstream& bounds,
            std::ostringstream& expr, bool& first_var) {
  expr << v.offset;
  for (int k = 0; k < v.ndim(); ++k) {
    if (v.shape[k] == 1 || v.strides[k] == 0) continue;
    vars << (first_var ? "" : ",") << prefix << k;
    first_var = false;
    bounds << " and 0 <= " << prefix << k << " <= " << v.shape[k] - 1;
    expr << " + " << v.strides[k] << "*" << prefix << k;
  }
}

// False when no element is touched by both views because every element a view touches is its
// offset plus a multiple of the gcd of both views' strides, and the offsets differ by a
// non-multiple (the columns of a box array: stride 4, offsets 0 and 2).
bool may_meet(const View& a, const View& b) {
  int64_t g = 0;
  for (const View* v : {&a, &b})
    for (int k = 0; k < v->ndim(); ++k)
      if (v->shape[k] != 1) g = std::gcd(g, v->strides[k] < 0 ? -v->strides[k] : v->strides[k]);
  const int64_t delta = a.offset - b.offset;
  return g == 0 ? delta == 0 : delta % g == 0;
}

// True when no two points of `v` touch one element: sorted by stride, each non-unit dim steps
// past everything the smaller ones span.
bool injective(const View& v) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (|stride|, extent)
  for (int k = 0; k < v.ndim(); ++k)
    if (v.shape[k] != 1) dims.emplace_back(v.strides[k] < 0 ? -v.strides[k] : v.strides[k], v.shape[k]);
  std::sort(dims.begin(), dims.end());
  int64_t span = 0;
  for (const auto& [stride, extent] : dims) {
    if (stride <= span) return false;
    span += stride * (extent - 1);
  }
  return true;
}

// Calls at(offset) for each element v touches (an element twice where two points touch it).
template <typename F>
void each_element(const View& v, F&& at) {
  std::vector<int> dims;
  for (int k = 0; k < v.ndim(); ++k)
    if (v.shape[k] != 1) dims.push_back(k);
  std::vector<int64_t> i(dims.size(), 0);
  int64_t off = v.offset;
  for (;;) {
    at(off);
    size_t d = dims.size();
    while (d > 0) {
      const int k = dims[d - 1];
      if (++i[d - 1] < v.shape[k]) {
        off += v.strides[k];
        break;
      }
      off -= v.strides[k] * (v.shape[k] - 1);
      i[d - 1] = 0;
      --d;
    }
    if (d == 0) return;
  }
}

// Whether a and b share an element, by listing them: -1 where they are too many to list. Views of
// a few thousand rows' columns (a box array's x1 against its rows) asked isl 1-2 ms each: a
// first call's dead-op pass spent 15-25 ms there.
int listed_overlap(const View& a, const View& b) {
  constexpr int64_t kMaxListed = int64_t{1} << 18, kMaxRange = int64_t{1} << 21;
  const int64_t lo = std::max(a.min_offset(), b.min_offset()), hi = std::min(a.max_offset(), b.max_offset());
  if (a.numel() + b.numel() > kMaxListed || hi - lo >= kMaxRange) return -1;
  std::vector<uint8_t> in_a(static_cast<size_t>(hi - lo + 1), 0);
  each_element(a, [&](int64_t e) {
    if (e >= lo && e <= hi) in_a[static_cast<size_t>(e - lo)] = 1;
  });
  bool met = false;
  each_element(b, [&](int64_t e) { met = met || (e >= lo && e <= hi && in_a[static_cast<size_t>(e - lo)]); });
  return met ? 1 : 0;
}

}  // namespace

OverlapResult footprints_overlap(const View& a, const View& b) {
  if (a.storage != b.storage || a.numel() == 0 || b.numel() == 0) return {false, OverlapMethod::Disjoint};
  if (a.max_offset() < b.min_offset() || b.max_offset() < a.min_offset()) return {false, OverlapMethod::Bounds};
  if (a == b || (a.is_c_contiguous() && b.is_c_contiguous())) return {true, OverlapMethod::Bounds};
  if (!may_meet(a, b)) return {false, OverlapMethod::Exact};
  std::ostringstream vars, bounds, ea, eb;
  bool first = true;
  affine(a, "i", vars, bounds, ea, first);
  affine(b, "j", vars, bounds, eb, first);
  std::ostringstream text;
  text << "{ [" << vars.str() << "] : " << ea.str() << " = " << eb.str() << bounds.str() << " }";
  return {has_point(text.str(), [&] { return listed_overlap(a, b); }), OverlapMethod::Exact};
}

namespace {
// Whether { i, j in the domain : a(i) = b(j) and <relation> } has a point; relation is isl text
// over i0.., j0...; both points lie inside the tails.
bool exists_pair(const View& a, const View& b, const std::string& relation, const std::vector<TailBound>& tails) {
  std::ostringstream vars, bounds, ea, eb;
  ea << a.offset;
  eb << b.offset;
  for (int d = 0; d < a.ndim(); ++d) {
    vars << (d ? "," : "") << "i" << d;
    bounds << " and 0 <= i" << d << " <= " << a.shape[d] - 1;
    ea << " + " << a.strides[d] << "*i" << d;
  }
  for (int d = 0; d < b.ndim(); ++d) {
    vars << (a.ndim() + d ? "," : "") << "j" << d;
    bounds << " and 0 <= j" << d << " <= " << b.shape[d] - 1;
    eb << " + " << b.strides[d] << "*j" << d;
  }
  for (const TailBound& t : tails)
    for (char p : {'i', 'j'})
      bounds << " and " << t.factor << "*" << p << t.outer << " + " << p << t.inner << " <= " << t.extent - 1;
  std::ostringstream text;
  text << "{ [" << vars.str() << "] : " << ea.str() << " = " << eb.str() << bounds.str() << " and (" << relation << ") }";
  return has_point(text.str());
}
}  // namespace

// Past a tail a view may wrap onto elements of other points: only the exact test knows.
bool shared_across_prefix(const View& a, const View& b, int prefix, const std::vector<TailBound>& tails) {
  if (prefix == 0 || !footprints_overlap(a, b).overlap) return false;
  std::ostringstream differ;
  for (int d = 0; d < prefix; ++d) differ << (d ? " or " : "") << "i" << d << " < j" << d << " or i" << d << " > j" << d;
  return exists_pair(a, b, differ.str(), tails);
}

bool shared_across_outer(const View& a, const View& b, const std::vector<TailBound>& tails) {
  if (a.ndim() == 0 || (a == b && tails.empty() && injective(a))) return false;
  return shared_across_prefix(a, b, 1, tails);
}

bool shared_between_points(const View& a, const View& b, const std::vector<TailBound>& tails) {
  if (a == b && tails.empty() && injective(a)) return false;
  return shared_across_prefix(a, b, a.ndim(), tails);
}

bool reordered_when_fused(const View& earlier, const View& later, const std::vector<TailBound>& tails) {
  if (!footprints_overlap(earlier, later).overlap) return false;
  // the same dense view touches each element at exactly one point: never reordered
  if (earlier == later && tails.empty() && injective(earlier)) return false;
  const int n = earlier.ndim();
  if (n == 0) return false;  // a single point: one iteration runs the ops in program order
  std::ostringstream lex;  // i > j lexicographically
  for (int d = 0; d < n; ++d) {
    lex << (d ? " or (" : "(");
    for (int e = 0; e < d; ++e) lex << "i" << e << " = j" << e << " and ";
    lex << "i" << d << " > j" << d << ")";
  }
  return exists_pair(earlier, later, lex.str(), tails);
}

}  // namespace strider
