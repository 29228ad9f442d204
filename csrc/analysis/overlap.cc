#include "analysis/overlap.h"

#include <isl/ctx.h>
#include <isl/set.h>

#include <memory>
#include <sstream>
#include <stdexcept>

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

}  // namespace

OverlapResult footprints_overlap(const View& a, const View& b) {
  if (a.storage != b.storage || a.numel() == 0 || b.numel() == 0) return {false, OverlapMethod::Disjoint};
  if (a.max_offset() < b.min_offset() || b.max_offset() < a.min_offset()) return {false, OverlapMethod::Bounds};
  if (a == b || (a.is_c_contiguous() && b.is_c_contiguous())) return {true, OverlapMethod::Bounds};
  std::ostringstream vars, bounds, ea, eb;
  bool first = true;
  affine(a, "i", vars, bounds, ea, first);
  affine(b, "j", vars, bounds, eb, first);
  std::ostringstream text;
  text << "{ [" << vars.str() << "] : " << ea.str() << " = " << eb.str() << bounds.str() << " }";
  isl_set* set = isl_set_read_from_str(thread_ctx(), text.str().c_str());
  if (!set) throw std::runtime_error("isl could not read the overlap set " + text.str());
  isl_bool empty = isl_set_is_empty(set);
  isl_set_free(set);
  if (empty == isl_bool_error) throw std::runtime_error("isl failed on the overlap set " + text.str());
  return {empty == isl_bool_false, OverlapMethod::Exact};
}

namespace {
// Whether { i, j in the domain : a(i) = b(j) and <relation> } has a point; relation is isl text
// over i0.., j0...
bool exists_pair(const View& a, const View& b, const std::string& relation) {
  std::ostringstream vars, bounds, ea, eb;
  const int n = a.ndim();
  for (int d = 0; d < n; ++d) {
    vars << (d ? "," : "") << "i" << d;
    bounds << " and 0 <= i" << d << " <= " << a.shape[d] - 1 << " and 0 <= j" << d << " <= " << b.shape[d] - 1;
  }
  for (int d = 0; d < n; ++d) vars << ",j" << d;
  ea << a.offset;
  eb << b.offset;
  for (int d = 0; d < n; ++d) {
    ea << " + " << a.strides[d] << "*i" << d;
    eb << " + " << b.strides[d] << "*j" << d;
  }
  std::ostringstream text;
  text << "{ [" << vars.str() << "] : " << ea.str() << " = " << eb.str() << bounds.str() << " and (" << relation << ") }";
  isl_set* set = isl_set_read_from_str(thread_ctx(), text.str().c_str());
  if (!set) throw std::runtime_error("isl could not read " + text.str());
  isl_bool empty = isl_set_is_empty(set);
  isl_set_free(set);
  if (empty == isl_bool_error) throw std::runtime_error("isl failed on " + text.str());
  return empty == isl_bool_false;
}
}  // namespace

bool shared_across_outer(const View& a, const View& b) {
  if (a.ndim() == 0 || !footprints_overlap(a, b).overlap) return false;
  return exists_pair(a, b, "i0 < j0 or i0 > j0");
}

bool reordered_when_fused(const View& earlier, const View& later) {
  if (!footprints_overlap(earlier, later).overlap) return false;
  // the same dense view touches each element at exactly one point: never reordered
  if (earlier == later && earlier.is_c_contiguous()) return false;
  const int n = earlier.ndim();
  if (n == 0) return false;  // a single point: one iteration runs the ops in program order
  std::ostringstream lex;  // i > j lexicographically
  for (int d = 0; d < n; ++d) {
    lex << (d ? " or (" : "(");
    for (int e = 0; e < d; ++e) lex << "i" << e << " = j" << e << " and ";
    lex << "i" << d << " > j" << d << ")";
  }
  return exists_pair(earlier, later, lex.str());
}

}  // namespace strider
