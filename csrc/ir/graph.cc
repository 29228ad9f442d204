#include "ir/graph.h"

#include <sstream>
#include <stdexcept>

namespace strider {

namespace {
struct OpInfo {
  const char* name;
  OpKind kind;
  uint32_t attrs;
};
constexpr OpInfo kOps[] = {
#define STRIDER_OP(name, kind, attrs) {#name, OpKind::kind, attrs},
#include "ir/ops.def"
};
}  // namespace

const char* op_name(OpCode op) { return kOps[static_cast<int>(op)].name; }
OpKind op_kind(OpCode op) { return kOps[static_cast<int>(op)].kind; }
uint32_t op_attrs(OpCode op) { return kOps[static_cast<int>(op)].attrs; }

bool has_loop(OpCode op, DType t) {
  const uint32_t family = t == DType::Bool ? kBool : is_float(t) ? kFloat : kInt;
  return (op_attrs(op) & family) != 0;
}

const char* loop_family(DType t) { return t == DType::Bool ? "bool" : is_float(t) ? "float" : "integer"; }

std::string scalar_function(OpCode op, DType t) {
  const bool first = t == DType::Float16 && (op == OpCode::maximum || op == OpCode::minimum);
  return std::string(op_name(op)) + (first ? "_first" : "");
}

int op_arity(OpCode op) {
  if (carries(op)) return -1;  // any number
  if (is_control(op)) return 1;
  if (op == OpCode::check_nonempty) return 1;
  if (op == OpCode::check_equal) return 3;
  switch (op_kind(op)) {
    case OpKind::Binary:
    case OpKind::Arange:
    case OpKind::Compress:
    case OpKind::Gather:
    case OpKind::Scatter:
    case OpKind::Check:
    case OpKind::Search: return 2;
    case OpKind::Ternary: return 3;
    default: return 1;
  }
}

std::string describe_op(const Graph& g, int op) {
  std::ostringstream os;
  os << "op" << op << " (" << op_name(g.ops[op].code);
  if (g.ops[op].line > 0) {
    const std::string& f = g.ops[op].file;
    os << " @ " << f.substr(f.find_last_of('/') + 1) << ":" << g.ops[op].line;
  }
  os << ")";
  return os.str();
}

OpCode parse_op(const std::string& name) {
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i)
    if (name == kOps[i].name) return static_cast<OpCode>(i);
  throw std::invalid_argument("unknown op '" + name + "'");
}

}  // namespace strider
