// The stage's final reduction as CUDA kernels. One accumulator type per stage (namespace
// <kernel>_r): init, step (fold one element, in index order within a thread), merge (combine
// two partial folds) and finish. max, min, argmax and argmin keep the element's index next to
// its value, so merging in any tree order picks what the reference's sequential fold picks: the
// first NaN, else the first of the extreme elements (== ignores the sign of zero, as the fold).
// Sums and products of floats accumulate in double, as the reference, and those into float16 in
// float rounded to half after each step, in one thread per output; integers wrap.
//
// Shapes, by the static bounds of M output elements and K folded elements each:
// - thread: one thread folds an output element in the reference's order (the innermost axis is
//   kept, so neighbouring threads read neighbouring elements; or rows of at most 32);
// - warp: 32 lanes stride over the row, then __shfl_down_sync (K <= 4096, or M >= 1024);
// - block: 256 threads stride over the row, warps shuffle, lane 0s meet in shared memory;
// - grid (M < 32, K >= 65536): <kernel>_partial folds C chunks of each row into scratch memory,
//   block per chunk; then <kernel> folds each row's C partials, warp per output element;
// - columns (the innermost axis is kept, M < 1024, K >= 16384: a few long columns): the same two
//   kernels, the first with a thread per chunk of a column.

#include <algorithm>
#include <functional>

#include "codegen/cuda/cuda_emitter.h"

namespace strider::detail {

namespace {


enum class Shape { Thread, Warp, Block, Grid, Columns };

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

void CudaEmitter::emit_reduction() {
  const size_t last = p_.ops.size() - 1;
  const Op& r = p_.ops[last];
  cur_op_ = static_cast<int>(last);
  const DType in = g_.dtype_of(r.inputs[0]);
  const DType out = g_.dtype_of(r.output);
  const ReduceSpec& spec = p_.reduce;
  using C = ReduceSpec::Combine;
  const bool extreme = !spec.has_identity();
  std::vector<int> kept, folded;
  for (int a = 0; a < p_.rank(); ++a) (p_.reduced[a] ? folded : kept).push_back(a);

  // --- the accumulator (ops/reduce_spec.h); a bool one is an int, which warp shuffles move
  const std::string acc_t = spec.acc == DType::Bool ? "int" : reg_type(spec.acc);
  const std::string value_t = reg_type(spec.acc);  // what the fold computes in
  const std::string x_t = reg_type(in);
  const std::string ns = name_ + "_r";
  std::ostringstream& h = helpers_;
  h << "namespace " << ns << " {\n";
  h << "struct acc { " << acc_t << " v;" << (extreme ? " long long at;" : "") << " };\n";
  h << "__device__ __forceinline__ acc init() { acc a; a.v = " << spec.identity() << ";" << (extreme ? " a.at = -1;" : "")
    << " return a; }\n";
  auto acc_value = [&](const std::string& v) { return acc_t == value_t ? v : "(" + value_t + ")" + v; };
  std::string step, merge;
  if (!extreme) {
    const char* f = spec.combine == C::Add ? "st::add" : spec.combine == C::Multiply ? "st::multiply"
                  : spec.combine == C::Or ? "st::logical_or" : "st::logical_and";
    step = std::string("a.v = ") + f + "(" + acc_value("a.v") + ", " + convert("x", in, spec.acc) + ");";
    // NumPy's float16 steps: in float, rounded to half after each
    if (spec.acc == DType::Float16)
      step = std::string("a.v = st::round_half(") + f + "(a.v, " + convert("x", in, DType::Float32) + "));";
    merge = std::string("a.v = ") + f + "(" + acc_value("a.v") + ", " + acc_value("b.v") + ");";
  } else {
    // merges of partial folds keep what one sequential fold keeps
    const std::string m = spec.is_max() ? "true" : "false";
    const std::string kept_x = acc_t == x_t ? "a.v" : "(" + x_t + ")a.v";
    step = "if (a.at < 0 || st::replaces<" + m + ">(x, " + kept_x + ")) { a.v = x; a.at = r; }";
    merge = "if (b.at >= 0 && (a.at < 0 || st::merge_wins<" + m + ">(" + (acc_t == x_t ? "b.v" : "(" + x_t + ")b.v") +
            ", b.at, " + kept_x + ", a.at))) a = b;";
  }
  h << "__device__ __forceinline__ void step(acc& a, " << x_t << " x, long long r) { " << step << " }\n";
  h << "__device__ __forceinline__ void merge(acc& a, const acc& b) { " << merge << " }\n";
  h << "__device__ __forceinline__ acc shfl_down(const acc& a, int d) { acc o; o.v = __shfl_down_sync(0xffffffffu, a.v, d);"
    << (extreme ? " o.at = __shfl_down_sync(0xffffffffu, a.at, d);" : "") << " return o; }\n";
  // the result: the index kept, or the accumulator in the input's dtype (any and all: a bool)
  std::string result;
  if (spec.index) result = convert("(a.at < 0 ? 0LL : a.at)", DType::Int64, out);
  else if (spec.acc == DType::Bool) result = convert("(a.v != 0)", DType::Bool, out);
  else result = convert(convert("a.v", spec.acc, in), in, out);
  h << "__device__ __forceinline__ " << reg_type(out) << " finish(const acc& a) { return " << result << "; }\n";
  h << "}  // namespace " << ns << "\n";

  // --- the shape
  const int64_t m = bound(kept), k = bound(folded);
  Shape shape = Shape::Grid;
  // a fold in order (float16 steps, float products): one thread folds each output
  if (p_.rank() == 0 || k <= 32 || (!extreme && spec.in_order())) shape = Shape::Thread;
  else if (!p_.reduced.back()) shape = m < 1024 && k >= 16384 ? Shape::Columns : Shape::Thread;
  else if (k <= 4096 || m >= 1024) shape = Shape::Warp;
  else if (m >= 32 || k < 65536) shape = Shape::Block;
  const int64_t outputs = std::max<int64_t>(m, 1);
  int64_t chunks = 1;
  if (shape == Shape::Grid) chunks = std::clamp<int64_t>(ceil_div(k, 8192), 2, std::max<int64_t>(2, 1024 / outputs));
  if (shape == Shape::Columns) chunks = std::clamp<int64_t>(ceil_div(k, 256), 2, std::max<int64_t>(2, 65536 / outputs));
  if (chunks > 1) scratch_bytes_ = m * chunks * (extreme ? 16 : acc_t == "int" || acc_t == "float" ? 4 : 8);

  const std::string I = index_t_;
  const std::string threads = std::to_string(kCudaThreads);
  const std::string warps = std::to_string(kCudaThreads / 32);
  auto point = [&](const std::string& flat) {  // folds the element at the current indices
    line("{");
    ++indent_;
    for (size_t j = 0; j < last; ++j) emit_op(j);
    cur_op_ = static_cast<int>(last);
    line("step(a, " + load(r.inputs[0]) + ", " + flat + ");");
    --indent_;
    line("}");
  };
  auto warp_merge = [&] { line("for (int d = 16; d > 0; d >>= 1) merge(a, shfl_down(a, d));"); };
  // 256 threads on one output element: warps shuffle, their lane 0s meet in shared memory
  auto block_merge = [&](const std::function<void()>& done) {
    warp_merge();
    line("if (lane % 32 == 0) part[lane / 32] = a;");
    line("__syncthreads();");
    line("if (lane < 32) {");
    ++indent_;
    line("a = lane < " + warps + " ? part[lane] : init();");
    warp_merge();
    line("if (lane == 0) {");
    ++indent_;
    done();
    --indent_;
    line("}");
    --indent_;
    line("}");
    line("__syncthreads();  // part is reused by the next element");
  };
  auto store_result = [&] {
    line("if (lane == 0) {");
    ++indent_;
    store(r.output, "finish(a)");
    --indent_;
    line("}");
  };
  auto open = [&](const std::string& kernel) {
    open_kernel(kernel);
    line("using namespace " + ns + ";");
  };

  if (shape == Shape::Thread) {
    open(name_);
    line("for (" + I + " o = (" + I + ")blockIdx.x * " + threads + " + threadIdx.x; o < " + count(kept) + "; o += (" + I +
         ")gridDim.x * " + threads + ") {");
    ++indent_;
    decompose("o", kept);
    line("acc a = init();");
    line("long long r = 0;");
    for (int f : folded) {
      const std::string i = "i" + std::to_string(f);
      line("for (" + I + " " + i + " = 0; " + i + " < n" + std::to_string(f) + "; ++" + i + ") {");
      ++indent_;
    }
    point("r++");
    for (size_t f = 0; f < folded.size(); ++f) {
      --indent_;
      line("}");
    }
    store(r.output, "finish(a)");
    --indent_;
    line("}");
    close_kernel();
    launches_.push_back({name_, std::clamp<int64_t>(ceil_div(m, kCudaThreads), 1, kCudaMaxBlocks), kCudaThreads});
    return;
  }
  if (shape == Shape::Warp || shape == Shape::Block) {
    const int group = shape == Shape::Warp ? 32 : kCudaThreads;
    const std::string per_block = std::to_string(kCudaThreads / group);
    open(name_);
    if (shape == Shape::Block) line("__shared__ acc part[" + warps + "];");
    line("const int lane = threadIdx.x % " + std::to_string(group) + ";");
    line("for (" + I + " o = ((" + I + ")blockIdx.x * " + threads + " + threadIdx.x) / " + std::to_string(group) + "; o < " +
         count(kept) + "; o += (" + I + ")gridDim.x * " + per_block + ") {");
    ++indent_;
    decompose("o", kept);
    line("acc a = init();");
    line("for (" + I + " f = lane; f < " + count(folded) + "; f += " + std::to_string(group) + ") {");
    ++indent_;
    decompose("f", folded);
    point("f");
    --indent_;
    line("}");
    if (shape == Shape::Warp) {
      warp_merge();
      store_result();
    } else {
      block_merge([&] { store(r.output, "finish(a)"); });
    }
    --indent_;
    line("}");
    close_kernel();
    const int64_t blocks = shape == Shape::Warp ? ceil_div(m, kCudaThreads / 32) : m;
    launches_.push_back({name_, std::clamp<int64_t>(blocks, 1, kCudaMaxBlocks), kCudaThreads});
    return;
  }

  // grid, columns: chunks of each output element's fold go to scratch (partials[o * C + chunk]),
  // then one warp per output element folds its chunks
  const std::string c = std::to_string(chunks);
  const std::string len = "(" + count(folded) + " + " + c + " - 1) / " + c;
  const std::string end = "(chunk + 1) * len < " + count(folded) + " ? (chunk + 1) * len : " + count(folded);
  open(name_ + "_partial");
  line("acc* partials = (acc*)scratch;");
  line("const " + I + " len = " + len + ";");
  if (shape == Shape::Grid) {
    // a block per chunk of a row
    line("__shared__ acc part[" + warps + "];");
    line("const int lane = threadIdx.x;");
    line("for (" + I + " b = blockIdx.x; b < " + count(kept) + " * " + c + "; b += gridDim.x) {");
    ++indent_;
    line("const " + I + " o = b / " + c + ";");
    line("const " + I + " chunk = b % " + c + ";");
    decompose("o", kept);
    line("const " + I + " end = " + end + ";");
    line("acc a = init();");
    line("for (" + I + " f = chunk * len + lane; f < end; f += " + threads + ") {");
    ++indent_;
    decompose("f", folded);
    point("f");
    --indent_;
    line("}");
    block_merge([&] { line("partials[b] = a;"); });
    launches_.push_back({name_ + "_partial", std::clamp<int64_t>(m * chunks, 1, kCudaMaxBlocks), kCudaThreads});
  } else {
    // a thread per chunk of a column, in index order; neighbouring threads take neighbouring
    // columns (the innermost axis is kept), so their reads are neighbours too
    line("for (" + I + " b = (" + I + ")blockIdx.x * " + threads + " + threadIdx.x; b < " + count(kept) + " * " + c + "; b += (" + I +
         ")gridDim.x * " + threads + ") {");
    ++indent_;
    line("const " + I + " o = b % (" + count(kept) + ");");
    line("const " + I + " chunk = b / (" + count(kept) + ");");
    decompose("o", kept);
    line("const " + I + " end = " + end + ";");
    line("acc a = init();");
    line("for (" + I + " f = chunk * len; f < end; ++f) {");
    ++indent_;
    decompose("f", folded);
    point("f");
    --indent_;
    line("}");
    line("partials[o * " + c + " + chunk] = a;");
    launches_.push_back({name_ + "_partial", std::clamp<int64_t>(ceil_div(m * chunks, kCudaThreads), 1, kCudaMaxBlocks), kCudaThreads});
  }
  --indent_;
  line("}");
  close_kernel();

  open(name_);
  line("const acc* partials = (const acc*)scratch;");
  line("const int lane = threadIdx.x % 32;");
  line("for (" + I + " o = ((" + I + ")blockIdx.x * " + threads + " + threadIdx.x) / 32; o < " + count(kept) + "; o += (" + I +
       ")gridDim.x * " + warps + ") {");
  ++indent_;
  decompose("o", kept);
  line("acc a = init();");
  line("for (" + I + " c = lane; c < " + c + "; c += 32) merge(a, partials[o * " + c + " + c]);");
  warp_merge();
  store_result();
  --indent_;
  line("}");
  close_kernel();
  launches_.push_back({name_, std::clamp<int64_t>(ceil_div(m, kCudaThreads / 32), 1, kCudaMaxBlocks), kCudaThreads});
}

}  // namespace strider::detail
