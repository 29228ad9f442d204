#include "ops/numpy_loops.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace strider {

namespace {

struct Installed {
  UfuncLoop loop = nullptr;
  void* data = nullptr;
};

// indexed by numpy_loop_id; written at import, before any stage compiles or runs
std::vector<Installed>& table() {
  static std::vector<Installed> t;
  return t;
}

}  // namespace

bool computed_inline(OpCode op, DType dtype) {
  return (op == OpCode::exp || op == OpCode::log) && dtype == DType::Float32;
}

bool numpy_computes(OpCode op, DType dtype) {
  if (dtype != DType::Float32 && dtype != DType::Float64) return false;
  if (op_kind(op) != OpKind::Unary || (op_attrs(op) & kLibm) == 0) return false;
  return !computed_inline(op, dtype);
}

int32_t numpy_loop_id(OpCode op, DType dtype) {
  return 2 * static_cast<int32_t>(op) + (dtype == DType::Float64 ? 1 : 0);
}

void set_numpy_loop(OpCode op, DType dtype, UfuncLoop loop, void* data) {
  if (!numpy_computes(op, dtype)) throw std::logic_error(std::string(op_name(op)) + " is not an op NumPy's loop decides");
  const size_t id = static_cast<size_t>(numpy_loop_id(op, dtype));
  if (table().size() <= id) table().resize(id + 1);
  table()[id] = {loop, data};
}

bool numpy_decides(OpCode op, DType dtype) {
  if (!numpy_computes(op, dtype)) return false;
  const size_t id = static_cast<size_t>(numpy_loop_id(op, dtype));
  return id < table().size() && table()[id].loop != nullptr;
}

bool numpy_loops_installed() {
  for (const Installed& i : table())
    if (i.loop) return true;
  return false;
}

void run_numpy_loop(OpCode op, DType dtype, const void* in, void* out, int64_t n) {
  strider_numpy_loop(numpy_loop_id(op, dtype), in, out, n);
}

}  // namespace strider

extern "C" void strider_numpy_loop(int32_t id, const void* in, void* out, int64_t n) {
  const strider::Installed& at = strider::table()[static_cast<size_t>(id)];
  const intptr_t size = (id & 1) ? 8 : 4;
  char* args[2] = {const_cast<char*>(static_cast<const char*>(in)), static_cast<char*>(out)};
  const intptr_t dims[1] = {static_cast<intptr_t>(n)};
  const intptr_t steps[2] = {size, size};
  at.loop(args, dims, steps, at.data);
}
