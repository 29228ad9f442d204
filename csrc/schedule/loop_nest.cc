#include "schedule/loop_nest.h"

#include <sstream>

namespace strider {

std::string print_schedule(const Schedule& s) {
  std::ostringstream os;
  os << "vectorize(" << s.vector_width << ") unroll(" << s.unroll << ")" << (s.parallel ? " parallel" : "");
  return os.str();
}

std::string print_stages(const Graph& g, const StageGraph& sg) {
  std::ostringstream os;
  for (size_t i = 0; i < sg.stages.size(); ++i) {
    const Stage& s = sg.stages[i];
    os << "stage " << i << ": domain [";
    for (size_t d = 0; d < s.domain.size(); ++d) os << (d ? "," : "") << s.domain[d];
    os << "]";
    if (!s.reduce_axes.empty()) {
      os << " reduce [";
      for (size_t d = 0; d < s.reduce_axes.size(); ++d) os << (d ? "," : "") << s.reduce_axes[d];
      os << "]";
    }
    os << " ops";
    for (int id : s.op_ids) os << " op" << id;
    if (!s.registers.empty()) {
      os << " registers";
      for (int r : s.registers) os << " %s" << r;
    }
    os << " schedule " << print_schedule(s.schedule) << "\n";
    for (const Op& op : s.ops) {
      os << "  " << op_name(op.code) << "(";
      for (size_t k = 0; k < op.inputs.size(); ++k) os << (k ? ", " : "") << print_view(op.inputs[k]);
      os << ") -> " << print_view(op.output) << "\n";
    }
  }
  (void)g;
  for (const std::string& r : sg.rejections) os << "not fused: " << r << "\n";
  return os.str();
}

}  // namespace strider
