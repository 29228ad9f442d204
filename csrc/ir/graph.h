#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/view.h"

namespace strider {

enum class OpCode : uint16_t {
#define STRIDER_OP(name, kind, attrs) name,
#include "ir/ops.def"
};

/// The number of op codes.
constexpr int kNumOps = 0
#define STRIDER_OP(name, kind, attrs) +1
#include "ir/ops.def"
    ;

enum class OpKind : uint8_t { Copy, Unary, Binary, Ternary, Reduce, Arange, Compact, Compress, Gather, Scatter, Sort, Check, Scan, Search, Control };

/// An op's attributes, as ops.def lists them (bits of op_attrs).
constexpr uint32_t kNoAttrs = 0;
constexpr uint32_t kBool = 1u << 0;        // a loop over bool
constexpr uint32_t kInt = 1u << 1;         // loops over the integer dtypes
constexpr uint32_t kFloat = 1u << 2;       // loops over the float dtypes
constexpr uint32_t kPredicate = 1u << 3;   // unary, bool result
constexpr uint32_t kComparison = 1u << 4;  // binary, bool result
constexpr uint32_t kLibm = 1u << 5;        // computed by a libm call: costly to compute twice
constexpr uint32_t kMayFail = 1u << 6;     // NumPy raises for some inputs: st::<name>_fails

const char* op_name(OpCode op);
OpKind op_kind(OpCode op);
uint32_t op_attrs(OpCode op);
inline bool is_predicate(OpCode op) { return (op_attrs(op) & kPredicate) != 0; }
inline bool is_comparison(OpCode op) { return (op_attrs(op) & kComparison) != 0; }
/// Whether an op is data-dependent: a stage of its own, run by the runtime's library (the CUDA
/// backend's own kernels on a device), except a take that fuse_stages wrote over its output's
/// domain (see is_domain_gather).
inline bool is_data_dependent(OpCode op) { return op_kind(op) >= OpKind::Compact; }
/// Whether an op is a loop or branch marker (ops.def's Control kind).
inline bool is_control(OpCode op) { return op_kind(op) == OpKind::Control; }
/// Whether a control op reads and writes every view it lists (what its region carries).
inline bool carries(OpCode op) { return op == OpCode::loop_begin || op == OpCode::loop_end || op == OpCode::branch_end; }
/// Whether an op writes into an existing storage (its output view is not a fresh result).
inline bool writes_in_place(OpCode op) { return op_kind(op) == OpKind::Copy || op_kind(op) == OpKind::Scatter; }
/// The elementwise op a Scatter combines each row with the one it lands on (add_at, maximum_at,
/// minimum_at); none for put and append, which overwrite.
inline std::optional<OpCode> scatter_combines(OpCode op) {
  if (op == OpCode::add_at) return OpCode::add;
  if (op == OpCode::maximum_at) return OpCode::maximum;
  if (op == OpCode::minimum_at) return OpCode::minimum;
  return std::nullopt;
}
/// Whether an elementwise op has a loop whose inputs have dtype `t` (NumPy's ufunc loops).
bool has_loop(OpCode op, DType t);
/// "bool", "integer" or "float": the loop family of a dtype, as messages name it.
const char* loop_family(DType t);
/// The function of ops/scalar_ops.inc (st::) computing elementwise op `op` on dtype t: the op's
/// name, but float16's maximum and minimum break ties as its own loops do (maximum_first).
std::string scalar_function(OpCode op, DType t);
/// NumPy's ValueError where a kMayFail op fails (integer power is the only one): every backend
/// raises it as std::domain_error.
constexpr const char* kMayFailMessage = "Integers to negative integer powers are not allowed.";
/// The Python error a failed check_assert raises (its axes[0]; AssertionError where absent):
/// `assert`'s, int()'s of a float (NaN: ValueError; infinite or past int64: OverflowError),
/// np.average's of weights that sum to zero (ZeroDivisionError); kRunInNumPy: none, the call runs
/// in NumPy, whose result differs there (np.array of a list a loop filled, empty);
/// kUnboundLocalError: a variable read where a branch on the data left it unassigned.
/// kIndexError, as a check_equal's axes[0]: a boolean index's length against the indexed axis's
/// (NumPy's IndexError; a length of 1 is no broadcast there).
enum CheckError : int64_t {
  kAssertionError = 0, kValueError = 1, kOverflowError = 2, kZeroDivisionError = 3, kRunInNumPy = 4,
  kUnboundLocalError = 5, kIndexError = 6
};
/// Number of inputs an op of this kind reads (-1: any number, the views a region carries).
int op_arity(OpCode op);
/// Throws std::invalid_argument for an unknown name.
OpCode parse_op(const std::string& name);

/// Where a storage's memory comes from.
enum class StorageKind : uint8_t {
  Arg,    // caller's memory: one aliasing group of array arguments, or a runtime scalar
  Temp,   // allocated per call
  Const,  // data carried in the graph
};
/// "arg", "temp" or "const", as the IR text writes it.
const char* storage_kind_name(StorageKind k);


/// A flat buffer (DESIGN.md): dtype, element count, origin.
struct Storage {
  DType dtype = DType::Float32;
  int64_t size = 0;
  StorageKind kind = StorageKind::Temp;
  int arg = -1;                // Arg: index of the external buffer
  std::vector<uint8_t> data;   // Const: size * itemsize bytes

  bool operator==(const Storage& o) const {
    return dtype == o.dtype && size == o.size && kind == o.kind && arg == o.arg && data == o.data;
  }
};

/// One operation: reads `inputs`, writes `output` (a view of a temp storage it defines, or of an
/// existing storage for Copy).
struct Op {
  OpCode code = OpCode::copy;
  std::vector<View> inputs;
  View output;
  std::vector<int> axes;  // Reduce: the folded input axes, ascending
  std::string file;       // the user's source line that recorded the op
  int line = 0;

  bool operator==(const Op& o) const {
    return code == o.code && inputs == o.inputs && output == o.output && axes == o.axes &&
           file == o.file && line == o.line;
  }
};

/// Whether `op` is a take fuse_stages wrote over its output's domain (ops.def): compiled as a
/// load from a row the index names, not run by the library.
inline bool is_domain_gather(const Op& op) { return op.code == OpCode::take && op.axes.size() == 2; }
/// Whether `op` is a put fuse_stages wrote over its indices' domain (ops.def): compiled as a
/// store into the row its index names, not run by the library.
inline bool is_domain_scatter(const Op& op) { return op.code == OpCode::put && op.axes.size() == 2; }
/// Whether the runtime's library runs `op`, as a stage of its own: a data-dependent op but a
/// domain gather or scatter, which stages compile.
inline bool runs_in_library(const Op& op) {
  return is_data_dependent(op.code) && !is_domain_gather(op) && !is_domain_scatter(op);
}
/// Whether `op` tests or appends one element: a Check of a 0-d value, or an append of a 0-d
/// value to a 1-d list of static extent. On the CPU such an op joins a 0-d stage, which compiles
/// it (a loop's trip then runs its index checks and list appends in one kernel with its scalar
/// ops); elsewhere the library runs it, a stage of its own.
inline bool joins_scalar_stage(const Op& op) {
  if (op_kind(op.code) == OpKind::Check) return op.output.ndim() == 0 && op.inputs[0].ndim() == 0;
  return op.code == OpCode::append && op.inputs[0].ndim() == 0 && op.inputs[1].ndim() == 0 &&
         op.output.ndim() == 1 && !op.output.is_dynamic();
}

/// A traced function: storages, ops in program order, and the views it returns.
struct Graph {
  std::string name = "f";
  std::vector<Storage> storages;
  std::vector<Op> ops;
  std::vector<View> outputs;

  int add_storage(Storage s) {
    storages.push_back(std::move(s));
    return static_cast<int>(storages.size()) - 1;
  }
  DType dtype_of(const View& v) const { return storages.at(v.storage).dtype; }
  /// Its name, storages and outputs with no ops: where a pass rebuilding the ops starts.
  Graph without_ops() const { return Graph{name, storages, {}, outputs}; }
  bool operator==(const Graph& o) const {
    return name == o.name && storages == o.storages && ops == o.ops && outputs == o.outputs;
  }
};

/// "op7 (multiply @ heads.py:12)": an op as messages name it.
std::string describe_op(const Graph& g, int op);

/// The text form; parse_graph(print_graph(g)) == g.
std::string print_graph(const Graph& g);
std::string print_view(const View& v);
/// Throws std::invalid_argument with the line number on malformed text.
Graph parse_graph(const std::string& text);
/// Checks the invariants every pass relies on; throws std::logic_error naming the op.
void verify_graph(const Graph& g);
/// Checks parse_graph(print_graph(g)) == g (STRIDER_VERIFY runs it on every lowered graph);
/// throws std::logic_error with the text on a mismatch.
void verify_text_roundtrip(const Graph& g);

}  // namespace strider
