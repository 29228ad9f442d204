#include "schedule/loop_nest.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace strider {

std::string print_primitive(const Primitive& p) {
  std::ostringstream os;
  os << p.verb << "(";
  bool first = true;
  for (const std::string& n : p.names) {
    os << (first ? "" : ", ") << n;
    first = false;
  }
  for (int64_t f : p.factors) {
    os << (first ? "" : ", ") << f;
    first = false;
  }
  os << ")";
  return os.str();
}

std::string print_schedule(const Schedule& s) {
  std::ostringstream os;
  for (size_t i = 0; i < s.primitives.size(); ++i) os << (i ? " " : "") << print_primitive(s.primitives[i]);
  return s.primitives.empty() ? "(serial)" : os.str();
}

std::string print_tails(const Stage& s) {
  if (s.tails.empty()) return "";
  std::ostringstream os;
  os << " tails [";
  for (size_t i = 0; i < s.tails.size(); ++i) {
    const Tail& t = s.tails[i];
    os << (i ? ", " : "") << t.outer << "*" << t.factor << "+" << t.inner << "<" << t.extent;
  }
  os << "]";
  return os.str();
}

std::vector<Primitive> parse_schedule(const std::string& text) {
  std::vector<Primitive> out;
  size_t pos = 0;
  auto skip = [&] {
    while (pos < text.size() && (std::isspace(static_cast<unsigned char>(text[pos])) || text[pos] == ';')) ++pos;
  };
  skip();
  if (text.compare(pos, 8, "(serial)") == 0) pos += 8;
  skip();
  while (pos < text.size()) {
    Primitive p;
    size_t open = text.find('(', pos), close = text.find(')', pos);
    if (open == std::string::npos || close == std::string::npos || close < open)
      throw ScheduleError("schedule: expected verb(arguments) at '" + text.substr(pos) + "'");
    p.verb = text.substr(pos, open - pos);
    while (!p.verb.empty() && std::isspace(static_cast<unsigned char>(p.verb.back()))) p.verb.pop_back();
    std::stringstream args(text.substr(open + 1, close - open - 1));
    for (std::string a; std::getline(args, a, ',');) {
      size_t b = a.find_first_not_of(" \t"), e = a.find_last_not_of(" \t");
      if (b == std::string::npos) throw ScheduleError("schedule: empty argument in " + p.verb);
      a = a.substr(b, e - b + 1);
      if (std::isdigit(static_cast<unsigned char>(a[0])) || a[0] == '-') p.factors.push_back(std::stoll(a));
      else p.names.push_back(a);
    }
    out.push_back(std::move(p));
    pos = close + 1;
    skip();
  }
  return out;
}

std::string print_stages(const Graph& g, const StageGraph& sg) {
  std::ostringstream os;
  for (size_t i = 0; i < sg.stages.size(); ++i) {
    const Stage& s = sg.stages[i];
    os << "stage " << i << ": domain [";
    for (size_t d = 0; d < s.domain.size(); ++d) os << (d ? "," : "") << s.loops[d] << "=" << s.domain[d];
    os << "]";
    if (!s.reduce_axes.empty()) {
      os << " reduce [";
      for (size_t d = 0; d < s.reduce_axes.size(); ++d) os << (d ? "," : "") << s.loops[s.reduce_axes[d]];
      os << "]";
    }
    os << print_tails(s) << " ops";
    for (int id : s.op_ids) os << " op" << id;
    if (!s.registers.empty()) {
      os << " registers";
      for (int r : s.registers) os << " %s" << r;
    }
    for (const Stage::Folded& f : s.folded) os << " folded %s" << f.storage << "[" << f.slab << "]";
    os << " schedule " << print_schedule(s.schedule);
    if (s.computed_in >= 0) {
      const Stage& c = sg.stages[s.computed_in];
      os << " (computed at " << c.loops[c.shared_loops - 1] << " of stage " << s.computed_in << ")";
    }
    os << "\n";
    for (const Op& op : s.ops) {
      os << "  " << op_name(op.code) << "(";
      for (size_t k = 0; k < op.inputs.size(); ++k) os << (k ? ", " : "") << print_view(op.inputs[k]);
      os << ")";
      if (is_domain_gather(op) || is_domain_scatter(op))
        os << " axes=[" << op.axes[0] << "," << op.axes[1] << "]";  // row stride, rows
      os << " -> " << print_view(op.output) << "\n";
    }
  }
  (void)g;
  for (const std::string& r : sg.narrowed) os << "narrowed: " << r << "\n";
  for (const std::string& r : sg.recomputed) os << "recomputed: " << r << "\n";
  for (const std::string& r : sg.buffered) os << "buffered: " << r << "\n";
  for (const std::string& r : sg.in_place) os << "in place: " << r << "\n";
  for (const std::string& r : sg.carried) os << "carried: " << r << "\n";
  for (const std::string& r : sg.rejections) os << "not fused: " << r << "\n";
  return os.str();
}

bool vector_stores(const std::vector<const View*>& outputs, int axis) {
  for (const View* w : outputs) {
    const int64_t step = std::abs(w->strides[axis]);
    if (step == 1) continue;
    if (step < 2 || step > 4) return false;
    int64_t lo = w->offset, hi = w->offset, views = 0;
    for (const View* o : outputs)
      if (o->storage == w->storage && o->strides == w->strides) {
        lo = std::min(lo, o->offset);
        hi = std::max(hi, o->offset);
        ++views;
      }
    // (views at one offset twice make a gap elsewhere)
    if (hi - lo + 1 != views || views % step != 0) return false;
  }
  return true;
}

}  // namespace strider
