// The data-dependent ops (ops.def's Compact to Search kinds) as CUDA kernels, each alone in its
// stage, with the reference's semantics (runtime/data_dependent.cc) and no inter-block waits
// (blocks may run one after another): a stage is a few launches on one stream, passing counts and
// offsets through scratch memory. Views are read as the op holds them; a run-time extent is read
// on the device and clamped to its static bound, which sizes the grids. Failures fill the error
// record (runtime/kernel.h) with the first failing element in C order, and a one-thread kernel
// adds the payload the host's message needs.
//
// CUB has these algorithms, but it is a header library and NVRTC compiles this backend's sources
// with no #include: the few block-level pieces are written here.

#include <algorithm>
#include <set>
#include <stdexcept>

#include "codegen/cuda/data_dependent_emitter.h"

namespace strider::detail {

// nonzero and compress: per block of kTile elements a count, one block's scan of the counts, then
// each block writes its kept elements from its offset, in C order; nonzero writes the flat indices,
// compress lists the kept rows in scratch and copies them in a fourth kernel, a thread an element.
void DataDependentEmitter::compact() {
  const bool rows = op_.code == OpCode::compress;
  const View& in = op_.inputs[0];
  const View& out = op_.output;
  const int64_t bound = rows ? in.shape[0] : in.numel();
  const std::string n = rows ? "a0_n0" : "a0_numel";
  const int64_t blocks = std::max<int64_t>((bound + kTile - 1) / kTile, 1);
  const std::string flag = rows ? elem("a0", in, "i") + " != 0"
                                : "st::convert<bool>(" + from_memory(elem("a0", in, "i"), g_.dtype_of(in)) + ")";
  scratch_ = 8 * (blocks + (rows ? out.shape[0] : 0));
  auto count_tile = [&] {
    declare_scan();
    line("long long* const counts = (long long*)scratch;");
    line("long long c = 0;");
    open_block("for (int e = 0; e < " + std::to_string(kItems) + "; ++e)");
    line("const long long i = (long long)blockIdx.x * " + literal(kTile) + " + threadIdx.x * " + std::to_string(kItems) + " + e;");
    line("if (i < " + n + " && " + flag + ") ++c;");
    close_block();
    block_scan("c", "c_ex", "c_total");
  };
  open("count", blocks);
  count_tile();
  line("if (threadIdx.x == 0) counts[blockIdx.x] = c_total;");
  close_block();

  open("offsets", 1);
  declare_scan();
  offsets("(long long*)scratch", blocks, "");
  close_block();

  // the kept elements past the room computed before (the output's extent) are dropped
  open("write", blocks);
  count_tile();
  line("long long k = counts[blockIdx.x] + c_ex;");
  open_block("for (int e = 0; e < " + std::to_string(kItems) + "; ++e)");
  line("const long long i = (long long)blockIdx.x * " + literal(kTile) + " + threadIdx.x * " + std::to_string(kItems) + " + e;");
  line("if (!(i < " + n + " && " + flag + ")) continue;");
  if (rows) line("if (k < o_n0) ((long long*)scratch)[" + literal(blocks) + " + k] = i;");
  else line("if (k < o_n0) s" + std::to_string(out.storage) + "[" + literal(out.offset) + " + k * " + literal(out.strides[0]) + "] = i;");
  line("++k;");
  close_block();
  close_block();
  if (!rows) return;

  const View& src = op_.inputs[1];
  open("rows", grid(out.numel()));
  walk("a1", src, 1, src.ndim(), "a1_row");
  for_each("o_numel");
  line("const long long k = t / a1_row_count, r = t % a1_row_count;");
  line("const long long from = ((const long long*)scratch)[" + literal(blocks) + " + k];");
  line(elem("o", out, "t") + " = s" + std::to_string(src.storage) + "[" + literal(src.offset) + " + from * " +
       literal(src.strides[0]) + " + a1_row(r)];");
  close_block();
  close_block();
}

// take, put and add_at (maximum_at, minimum_at): a kernel checks every index (put: the largest
// position j writing each row claims it, so the last write wins), then rows move a thread an
// element; add_at of 32- and 64-bit integers adds so with atomicAdd (wrap-around sums: any order
// gives the same bits), other dtypes and ops combine in the order of the indices, as the
// reference rounds, a thread per element of a row walking them all (correct before fast: a
// scatter of few rows runs on few threads).
void DataDependentEmitter::offsets(const std::string& counts, int64_t n, const std::string& total) {
  const int64_t per = (n + kThreads - 1) / kThreads;
  open_block("");
  line("long long* const c = " + counts + ";");
  line("const long long b0 = (long long)threadIdx.x * " + literal(per) + ", b1 = b0 + " + literal(per) + " < " + literal(n) +
       " ? b0 + " + literal(per) + " : " + literal(n) + ";");
  line("long long sum = 0;");
  line("for (long long b = b0; b < b1; ++b) sum += c[b];");
  block_scan("sum", "sum_ex", "sum_total");
  line("long long at = sum_ex;");
  open_block("for (long long b = b0; b < b1; ++b)");
  line("const long long here = c[b];");
  line("c[b] = at, at += here;");
  close_block();
  if (!total.empty()) line("if (threadIdx.x == 0) " + total + " = sum_total;");
  close_block();
}

void DataDependentEmitter::indexed_rows() {
  const bool gather = op_.code == OpCode::take;
  const View& idx = op_.inputs[gather ? 1 : 0];
  const std::string ip = gather ? "a1" : "a0";
  const View& indexed = gather ? op_.inputs[0] : op_.output;
  const std::string xp = gather ? "a0" : "o";
  const std::string n = xp + "_n0";
  const bool put = op_.code == OpCode::put;
  // append of a block: the rows of in1 from the 0-d position in0 on
  const bool block = op_.code == OpCode::append && op_.inputs[1].ndim() == op_.output.ndim();
  error_ = true;
  if (put) scratch_ = 8 * std::max<int64_t>(indexed.shape[0], 1);
  if (put) {
    open("clear", grid(indexed.shape[0]));
    for_each(literal(indexed.shape[0]));
    line("((long long*)scratch)[t] = -1;");
    close_block();
    close_block();
  }
  open("check", grid(idx.numel()));
  for_each(ip + "_numel");
  line("const long long i = " + elem(ip, idx, "t") + (block ? " + a1_n0 - 1" : "") + ";");  // a block's last row
  line(std::string(block ? "if (a1_n0 > 0 && (i < 0 || i >= " + n + "))" : "if (i < 0 || i >= " + n + ")") +
       " st_fail(err, " + who_ + ", t);");
  if (put) line("else atomicMax((long long*)scratch + i, t);");
  close_block();
  close_block();

  const std::string to = "s" + std::to_string(op_.output.storage);
  const View& dense = gather ? op_.output : op_.inputs[1];
  const std::string dp = gather ? "o" : "a1";
  const std::string row = literal(indexed.offset) + " + i * " + literal(indexed.strides[0]) + " + " + xp + "_row(r)";
  const DType t = g_.dtype_of(op_.output);
  const DType v = g_.dtype_of(dense);  // a combine's loop: the values', each step cast back to t
  const std::optional<OpCode> combine = scatter_combines(op_.code);
  if (combine && !has_loop(*combine, v)) refuse(std::string(op_name(*combine)) + " has no " + loop_family(v) + " loop");
  const bool atomic = combine == OpCode::add && v == t && !is_float(t) && itemsize(t) >= 4;
  if (combine && !atomic) {
    open(op_name(*combine), grid(indexed.numel() / std::max<int64_t>(indexed.shape[0], 1)));
    walk(xp, indexed, 1, indexed.ndim(), xp + "_row");
    for_each(xp + "_row_count");
    line("const long long r = t;");
    open_block("for (long long j = 0; j < " + ip + "_numel; ++j)");
    line("const long long i = " + elem(ip, idx, "j") + ";");
    line("if (i < 0 || i >= " + n + ") continue;");
    line("const long long at = " + row + ";");
    const std::string combined = CudaEmitter::as_dtype(
        "st::" + scalar_function(*combine, v) + "(" + CudaEmitter::convert(from_memory(to + "[at]", t), t, v) + ", " +
            from_memory(elem(dp, dense, "j * " + xp + "_row_count + r"), v) + ")", v);
    line(to + "[at] = " + to_memory(CudaEmitter::convert(combined, v, t), t) + ";");
    close_block();
    close_block();
    close_block();
  } else {
    open("move", grid(dense.numel()));
    walk(xp, indexed, 1, indexed.ndim(), xp + "_row");
    for_each(dp + "_numel");
    line("const long long j = t / " + xp + "_row_count, r = t % " + xp + "_row_count;");
    line("const long long i = " + (block ? elem(ip, idx, "0") + " + j" : elem(ip, idx, "j")) + ";");
    line("if (i < 0 || i >= " + n + ") continue;");
    if (put) line("if (((const long long*)scratch)[i] != j) continue;  // a later position writes this row");
    const std::string word = itemsize(t) == 8 ? "unsigned long long" : "unsigned int";
    if (gather) line(elem("o", dense, "t") + " = s" + std::to_string(indexed.storage) + "[" + row + "];");
    else if (atomic) line("atomicAdd((" + word + "*)&" + to + "[" + row + "], (" + word + ")" + elem(dp, dense, "t") + ");");
    else line(to + "[" + row + "] = " + elem(dp, dense, "t") + ";");
    close_block();
    close_block();
  }
  fill_payload(ip, idx, n);
}

void DataDependentEmitter::check() {
  error_ = true;
  const std::string o = "s" + std::to_string(op_.output.storage) + "[" + literal(op_.output.offset) + "]";
  auto scalar = [&](int j) { return elem("a" + std::to_string(j), op_.inputs[j], "0"); };
  if (op_.code == OpCode::check_index) {
    open("check", grid(op_.output.numel()));
    line("const long long n = " + scalar(1) + ";");
    for_each("o_numel");
    line("const long long i = " + elem("a0", op_.inputs[0], "t") + ";");
    open_block("if (i < -n || i >= n)");
    line("st_fail(err, " + who_ + ", t);");
    line("continue;");
    close_block();
    line(elem("o", op_.output, "t") + " = i < 0 ? i + n : i;");
    close_block();
    close_block();
    return fill_payload("a0", op_.inputs[0], scalar(1));
  }
  open("check", 1, 1);
  if (op_.code == OpCode::check_assert) {
    line("const bool ok = " + scalar(0) + " != 0;");
    line(o + " = ok;");
    line("if (!ok) st_fail(err, " + who_ + ", 0);");
  } else {
    // check_nonempty: the length; check_equal: the two lengths
    const bool equal = op_.code == OpCode::check_equal;
    line("const long long a = " + scalar(0) + ", b = " + (equal ? scalar(1) : "1") + ";");
    line(o + " = a;");
    open_block(std::string("if (") + (equal ? "a != b" : "a <= 0") + " && st_fail(err, " + who_ + ", 0))");
    line("err[2] = a;");
    line(std::string("err[3] = ") + (equal ? "b" : "0") + ";");
    close_block();
  }
  close_block();
}

CudaStage DataDependentEmitter::emit() {
  // its threads read and write in no order the reference's walk would keep
  for (const View& v : op_.inputs)
    if (v.storage == op_.output.storage) refuse("it reads the storage it writes");
  for (size_t j = 0; j < op_.inputs.size(); ++j) views_.push_back({"a" + std::to_string(j), &op_.inputs[j]});
  views_.push_back({"o", &op_.output});
  // a check's message stays on the host (the graph's constant): the device never reads it
  if (op_.code == OpCode::check_assert || op_.code == OpCode::check_equal) views_.erase(views_.end() - 2);
  switch (op_kind(op_.code)) {
    case OpKind::Compact:
    case OpKind::Compress: compact(); break;
    case OpKind::Gather:
    case OpKind::Scatter: indexed_rows(); break;
    case OpKind::Check: check(); break;
    case OpKind::Scan: scan(); break;
    case OpKind::Search: search(); break;
    case OpKind::Sort: sort(); break;
    case OpKind::Control: refuse("a loop or branch op has no kernel: the host drives it (CudaProgram::run)");
    default: refuse("not a data-dependent op");
  }
  // every kernel takes every storage a view names
  std::set<int> params;
  for (const auto& [p, v] : views_) {
    params.insert(v->storage);
    for (int e : v->extents)
      if (e >= 0) params.insert(e);
  }
  std::string list;
  for (int s : params) {
    const bool written = s == op_.output.storage;
    list += (list.empty() ? "" : ", ") + std::string(written ? "" : "const ") + CudaEmitter::mem_type(g_.storages[s].dtype) +
            "* __restrict__ s" + std::to_string(s);
  }
  if (error_) list += ", long long* __restrict__ err";
  if (scratch_) list += ", void* __restrict__ scratch";
  std::string kernels = body_.str();
  for (size_t at = kernels.find("@PARAMS@"); at != std::string::npos; at = kernels.find("@PARAMS@", at))
    kernels.replace(at, 8, list);
  CudaStage out;
  out.name = name_;
  out.source = "// strider CUDA stage " + name_ + ": " + g_.name + " op" + std::to_string(id_) + " (" + op_name(op_.code) +
               ", compile with -fmad=false)\n" + prelude() + kernels;
  out.params.assign(params.begin(), params.end());
  out.launches = launches_;
  out.error_flag = error_;
  out.scratch_bytes = scratch_;
  return out;
}


CudaStage emit_data_dependent(const Graph& g, const Op& op, int op_id, const std::string& name) {
  return DataDependentEmitter(g, op, op_id, name).emit();
}

}  // namespace strider::detail
