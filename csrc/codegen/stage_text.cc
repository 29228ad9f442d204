// The text of a stage that every backend's cache key is built on (stage_plan.h).

#include <set>
#include <sstream>

#include "codegen/stage_plan.h"

namespace strider::detail {

std::string stage_text(const Graph& g, const Stage& s) {
  std::ostringstream os;
  auto ints = [&](const auto& v) {
    os << "[";
    for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
    os << "]";
  };
  os << "domain ";
  ints(s.domain);
  os << "\nloops";
  for (const std::string& l : s.loops) os << " " << l;
  os << print_tails(s) << "\nreduce_axes ";
  ints(s.reduce_axes);
  os << "\nregisters ";
  ints(s.registers);
  os << "\nschedule " << print_schedule(s.schedule) << " vector_width=" << s.schedule.vector_width
     << " unroll=" << s.schedule.unroll << " parallel=" << s.schedule.parallel << "\n";
  std::set<int> touched;
  auto touch = [&](const View& v) {
    touched.insert(v.storage);
    for (int e : v.extents)
      if (e >= 0) touched.insert(e);
  };
  // the stages computed inside this one (compute_at): their ops first, as they run
  std::vector<const Stage*> parts;
  for (const Stage& m : s.computed_at) parts.push_back(&m);
  parts.push_back(&s);
  os << "shared_loops " << s.shared_loops << " folded";
  for (const Stage::Folded& f : s.folded) os << " " << f.storage << ":" << f.base << ":" << f.slab;
  os << "\n";
  for (const Stage* part : parts) {
    if (part != &s) {
      os << "computed_at domain ";
      ints(part->domain);
      os << print_tails(*part) << " reduce_axes ";
      ints(part->reduce_axes);
      os << " registers ";
      ints(part->registers);
      os << " schedule " << print_schedule(part->schedule) << " vector_width=" << part->schedule.vector_width
         << " unroll=" << part->schedule.unroll << "\n";
    }
    for (const Op& op : part->ops) {
      os << "op " << op_name(op.code) << "(";
      for (size_t k = 0; k < op.inputs.size(); ++k) {
        os << (k ? ", " : "") << print_view(op.inputs[k]);
        touch(op.inputs[k]);
      }
      os << ") axes=";
      ints(op.axes);
      os << " -> " << print_view(op.output) << "\n";
      touch(op.output);
    }
  }
  os << "storages " << g.storages.size() << "\n";
  for (int i : touched) {
    if (i < 0 || i >= static_cast<int>(g.storages.size())) {
      os << "%s" << i << " unknown\n";
      continue;
    }
    const Storage& st = g.storages[i];
    os << "%s" << i << " " << dtype_name(st.dtype) << " " << storage_kind_name(st.kind);
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
