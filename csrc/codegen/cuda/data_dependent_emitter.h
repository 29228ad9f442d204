#pragma once

// Internal to the CUDA backend: the state of emitting a data-dependent op's stage.
// emit_cuda_data_dependent.cc: the kernels' common parts, compaction, indexed rows, checks;
// emit_cuda_sort.cc: the ops that order (sort, argsort, searchsorted) and the scans.

#include <stdexcept>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "codegen/cuda/cuda_emitter.h"

namespace strider::detail {

constexpr int kThreads = kCudaThreads;
constexpr int kItems = 8;  // elements per thread in a compaction's tiles
constexpr int64_t kTile = int64_t{kThreads} * kItems;
constexpr int kRuns = 16;  // runs of a block scan
constexpr int64_t kFewRows = 32;  // sorts of this many rows or fewer, each long, launch tiles
constexpr int64_t kSortScratch = int64_t{64} << 20;  // bytes of keys and positions the sort's blocks share

class DataDependentEmitter {
 public:
  DataDependentEmitter(const Graph& g, const Op& op, int op_id, std::string name)
      : g_(g), op_(op), who_(literal(kCudaFailedOp + op_id)), id_(op_id), name_(std::move(name)) {}

  CudaStage emit();

 private:
  [[noreturn]] void refuse(const std::string& why) const {
    throw std::invalid_argument("CUDA backend cannot compile op" + std::to_string(id_) + " (" + op_name(op_.code) + "): " + why);
  }
  void line(const std::string& text) { body_ << std::string(2 * indent_, ' ') << text << "\n"; }
  void open_block(const std::string& head) {
    line(head.empty() ? "{" : head + " {");
    ++indent_;
  }
  void close_block() {
    --indent_;
    line("}");
  }
  std::string reg(const View& v) const { return CudaEmitter::reg_type(g_.dtype_of(v)); }
  // element t (C order) of view p, as memory holds it
  std::string elem(const std::string& p, const View& v, const std::string& t) const {
    return "s" + std::to_string(v.storage) + "[" + p + "_at(" + t + ")]";
  }
  std::string extent(const View& v, int d) const {
    if (v.extent_of(d) < 0) return literal(v.shape[d]);
    return "st_extent<long long>(s" + std::to_string(v.extent_of(d)) + ", " + literal(v.shape[d]) + ")";
  }
  // Declares p_n<d> (the extents), p_numel, and p_at(t): the element offset of C-order index t.
  void declare(const std::string& p, const View& v) {
    for (int d = 0; d < v.ndim(); ++d) line("const long long " + p + "_n" + std::to_string(d) + " = " + extent(v, d) + ";");
    walk(p, v, 0, v.ndim(), p + "_at", literal(v.offset));
    line("const long long " + p + "_numel = " + p + "_at_count;");
  }
  // Declares name(t): the offset (from `base`) of C-order index t over v's axes [d0, d1), and name_count.
  void walk(const std::string& p, const View& v, int d0, int d1, const std::string& name, const std::string& base = "0") {
    std::string count = "1";
    for (int d = d0; d < d1; ++d) count += " * " + p + "_n" + std::to_string(d);
    line("const long long " + name + "_count = " + count + ";");
    open_block("auto " + name + " = [&](long long t) -> long long");
    line("long long o = " + base + ";");
    for (int d = d1 - 1; d >= d0; --d) {
      const std::string n = p + "_n" + std::to_string(d);
      if (d > d0) line("o += t % " + n + " * " + literal(v.strides[d]) + ", t /= " + n + ";");
      else line("o += t * " + literal(v.strides[d]) + ";");
    }
    line("return o;");
    --indent_;
    line("};");
  }
  // Opens kernel name_<step>, launched on `blocks` blocks after the ones before, with every view declared.
  void open(const std::string& step, int64_t blocks, int threads = kThreads) {
    const std::string kernel = name_ + "_" + step;
    launches_.push_back({kernel, std::max<int64_t>(blocks, 1), threads});
    open_block("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kThreads) + ") " + kernel + "(@PARAMS@)");
    for (const auto& [p, v] : views_) declare(p, *v);
  }
  // A grid-stride loop over t < n.
  void for_each(const std::string& n) {
    open_block("for (long long t = (long long)blockIdx.x * " + std::to_string(kThreads) + " + threadIdx.x; t < " + n +
               "; t += (long long)gridDim.x * " + std::to_string(kThreads) + ")");
  }
  int64_t grid(int64_t n) const { return std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, kCudaMaxBlocks); }
  // The block's exclusive prefix sum of the long long `v` (each thread's), as `ex`, and its total,
  // in shared st_sh (and st_runs: a sum per run of 16); every thread of the block must reach it.
  // Four barriers: 16 threads scan a run of 16 each, one thread the runs' sums (few barriers keep
  // the emulator's fiber switches few; on the device the serial steps are shared-memory adds).
  void block_scan(const std::string& v, const std::string& ex, const std::string& total) {
    line("st_sh[threadIdx.x] = " + v + ";");
    line("__syncthreads();");
    open_block("if (threadIdx.x < " + std::to_string(kRuns) + ")");
    line("long long* const run = st_sh + threadIdx.x * " + std::to_string(kThreads / kRuns) + ";");
    line("for (int k = 1; k < " + std::to_string(kThreads / kRuns) + "; ++k) run[k] += run[k - 1];");
    close_block();
    line("__syncthreads();");
    open_block("if (threadIdx.x == 0)");
    line("long long sum = 0;");
    open_block("for (int r = 0; r < " + std::to_string(kRuns) + "; ++r)");
    line("st_runs[r] = sum;");
    line("sum += st_sh[r * " + std::to_string(kThreads / kRuns) + " + " + std::to_string(kThreads / kRuns - 1) + "];");
    close_block();
    line("st_runs[" + std::to_string(kRuns) + "] = sum;");
    close_block();
    line("__syncthreads();");
    line("const long long " + ex + " = st_sh[threadIdx.x] - " + v + " + st_runs[threadIdx.x / " + std::to_string(kThreads / kRuns) + "];");
    line("const long long " + total + " = st_runs[" + std::to_string(kRuns) + "];");
    line("__syncthreads();  // st_sh is read before it is written again");
  }
  // The counts[0, n) of blocks made their exclusive prefix sums in place by one block (each thread
  // sums a run of them, the block scans the sums), their sum stored to `total` (unless empty).
  void offsets(const std::string& counts, int64_t n, const std::string& total);
  // The shared memory of block_scan.
  void declare_scan() {
    line("__shared__ long long st_sh[" + std::to_string(kThreads) + "];");
    line("__shared__ long long st_runs[" + std::to_string(kRuns + 1) + "];");
  }
  // The failing element's payload, once the stage's kernels have run: err[2] the index at the
  // position the record holds, err[3] the indexed axis's length.
  void fill_payload(const std::string& p, const View& idx, const std::string& length) {
    open("fill", 1, 1);
    open_block("if (err[0] == " + who_ + ")");
    line("err[2] = " + elem(p, idx, "9223372036854775807LL - err[1]") + ";");
    line("err[3] = " + length + ";");
    close_block();
    close_block();
  }
  // A sort key of dtype t's memory element x, as unsigned long long; `bits` gets the key's width.
  std::string sort_key(const std::string& x, DType t, int* bits) const;

  void compact();
  void indexed_rows();
  void check();
  void scan();
  void search();
  void sort();
  // sort's kernels for few long rows: every pass a launch of tiles, one block apiece.
  void sort_by_tiles(const std::string& key, int bits, bool reverse, bool positions);

  const Graph& g_;
  const Op& op_;
  std::string who_;  // the op's code in the error record
  int id_;
  std::string name_;
  std::vector<std::pair<std::string, const View*>> views_;  // a<j> for inputs, o for the output
  std::ostringstream body_;
  int indent_ = 0;
  std::vector<CudaLaunch> launches_;
  bool error_ = false;
  int64_t scratch_ = 0;
};

}  // namespace strider::detail
