#include <algorithm>

#include "schedule/primitives.h"

namespace strider::detail {

namespace {
int storage_of(const Primitive& p) {
  if (p.names.size() != 1 || !p.factors.empty()) refuse(p, "takes one storage, written %sN");
  return storage_arg(p, p.names[0]);
}
}  // namespace

// compute_inline(%sN): the stage keeps a temporary in registers; it must be written once in the
// stage and read only there, through the view it was written with.
void compute_inline(const Graph& g, Stage& s, const Primitive& p) {
  const int sid = storage_of(p);
  if (sid < 0 || sid >= static_cast<int>(g.storages.size()) || g.storages[sid].kind != StorageKind::Temp)
    refuse(p, p.names[0] + " is not a temporary");
  if (std::find(s.inlinable.begin(), s.inlinable.end(), sid) == s.inlinable.end())
    refuse(p, p.names[0] + " must be stored: it is read outside the stage, by a reduction, or through another view");
  if (std::find(s.registers.begin(), s.registers.end(), sid) == s.registers.end()) s.registers.push_back(sid);
  std::sort(s.registers.begin(), s.registers.end());
}

// compute_root(%sN): the stage stores a temporary it would keep in registers.
void compute_root(Stage& s, const Primitive& p) {
  const int sid = storage_of(p);
  auto it = std::find(s.registers.begin(), s.registers.end(), sid);
  if (it == s.registers.end()) refuse(p, p.names[0] + " is not a register of this stage");
  s.registers.erase(it);
}

}  // namespace strider::detail
