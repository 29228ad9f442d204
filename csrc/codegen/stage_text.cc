// The text of a stage that every backend's cache key is built on (stage_plan.h).

#include <map>
#include <set>
#include <sstream>

#include "codegen/stage_plan.h"

namespace strider::detail {

namespace {

// The stages whose ops a stage's code runs, as they run: those computed inside it (compute_at)
// first, then its own.
std::vector<const Stage*> parts_of(const Stage& s) {
  std::vector<const Stage*> parts;
  for (const Stage& m : s.computed_at) parts.push_back(&m);
  parts.push_back(&s);
  return parts;
}

}  // namespace

std::vector<int> stage_storages(const Stage& s) {
  std::vector<int> order;
  std::set<int> seen;
  auto name = [&](int sid) {
    if (seen.insert(sid).second) order.push_back(sid);
  };
  auto view = [&](const View& v) {
    name(v.storage);
    for (int e : v.extents)
      if (e >= 0) name(e);
  };
  for (int r : s.registers) name(r);
  for (const Stage::Folded& f : s.folded) name(f.storage);
  for (const Stage* part : parts_of(s)) {
    for (int r : part->registers) name(r);
    for (const Op& op : part->ops) {
      for (const View& v : op.inputs) view(v);
      view(op.output);
    }
  }
  return order;
}

std::string stage_text(const Graph& g, const Stage& s) {
  const std::vector<int> storages = stage_storages(s);
  std::map<int, size_t> number;
  for (size_t k = 0; k < storages.size(); ++k) number[storages[k]] = k;
  std::ostringstream os;
  auto ints = [&](const auto& v) {
    os << "[";
    for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
    os << "]";
  };
  auto numbered = [&](const auto& sids) {
    os << "[";
    size_t i = 0;
    for (int sid : sids) os << (i++ ? "," : "") << "%" << number.at(sid);
    os << "]";
  };
  auto view = [&](const View& v) {
    os << "%" << number.at(v.storage) << "[";
    for (int d = 0; d < v.ndim(); ++d) {
      os << (d ? "," : "");
      if (v.extent_of(d) >= 0) os << "?%" << number.at(v.extent_of(d)) << "<=";
      os << v.shape[d];
    }
    os << "]{";
    ints(v.strides);
    os << "}+" << v.offset;
  };
  os << "domain ";
  ints(s.domain);
  os << "\nloops";
  for (const std::string& l : s.loops) os << " " << l;
  os << print_tails(s) << "\nreduce_axes ";
  ints(s.reduce_axes);
  os << "\nregisters ";
  numbered(s.registers);
  os << "\nschedule " << print_schedule(s.schedule) << " vector_width=" << s.schedule.vector_width
     << " unroll=" << s.schedule.unroll << " parallel=" << s.schedule.parallel << "\n";
  os << "shared_loops " << s.shared_loops << " folded";
  for (const Stage::Folded& f : s.folded) os << " %" << number.at(f.storage) << ":" << f.base << ":" << f.slab;
  os << "\n";
  for (const Stage* part : parts_of(s)) {
    if (part != &s) {
      os << "computed_at domain ";
      ints(part->domain);
      os << print_tails(*part) << " reduce_axes ";
      ints(part->reduce_axes);
      os << " registers ";
      numbered(part->registers);
      os << " schedule " << print_schedule(part->schedule) << " vector_width=" << part->schedule.vector_width
         << " unroll=" << part->schedule.unroll << "\n";
    }
    for (const Op& op : part->ops) {
      os << "op " << op_name(op.code) << "(";
      for (size_t k = 0; k < op.inputs.size(); ++k) {
        os << (k ? ", " : "");
        view(op.inputs[k]);
      }
      os << ") axes=";
      ints(op.axes);
      os << " -> ";
      view(op.output);
      os << "\n";
    }
  }
  for (size_t k = 0; k < storages.size(); ++k) {
    const int i = storages[k];
    if (i < 0 || i >= static_cast<int>(g.storages.size())) {
      os << "%" << k << " unknown\n";
      continue;
    }
    const Storage& st = g.storages[i];
    os << "%" << k << " " << dtype_name(st.dtype) << " " << storage_kind_name(st.kind);
    if (st.kind == StorageKind::Const) {
      if (!st.data.empty() && st.data.size() <= kEmbedBytes) {
        static const char digits[] = "0123456789abcdef";
        os << " [" << st.size << "] 0x";
        for (uint8_t b : st.data) os << digits[b >> 4] << digits[b & 15];
      } else {
        os << " [" << st.size << "] not embedded";
      }
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace strider::detail
