// The data-dependent ops that order elements (sort, argsort and its top-k, searchsorted) by NumPy's
// sort order as unsigned keys, and the scans, as CUDA kernels (data_dependent_emitter.h).

#include <algorithm>

#include "codegen/cuda/data_dependent_emitter.h"

namespace strider::detail {

std::string DataDependentEmitter::sort_key(const std::string& x, DType t, int* bits) const {
  *bits = static_cast<int>(8 * itemsize(t));
  switch (t) {
    case DType::Float16: *bits = 32; return "(unsigned long long)st_key(st::half_to_float(" + x + "))";
    case DType::Float32:
    case DType::Float64: return "(unsigned long long)st_key(" + x + ")";
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64: {  // the sign bit flipped: two's complement in unsigned order
      const std::string u = "unsigned " + std::string(*bits == 8 ? "char" : *bits == 16 ? "short" : *bits == 32 ? "int" : "long long");
      return "(unsigned long long)(" + u + ")((" + u + ")" + x + " ^ (" + u + ")(1ull << " + std::to_string(*bits - 1) + "))";
    }
    default: return "(unsigned long long)" + x;  // bool (0 or 1 in memory) and unsigned integers
  }
}


// A thread per row, in order along it: the reference's rounding of float sums and products (a
// parallel scan would associate them otherwise). Long rows of integers and bools, whose sums,
// products, maxima and minima are the same bits however associated, take a block per row: tiles
// of kThreads elements scanned in runs of 16 (as block_scan), each tile's carried into the next.
void DataDependentEmitter::scan() {
  const View& in = op_.inputs[0];
  const View& out = op_.output;
  const DType t = g_.dtype_of(in);
  const OpCode f = op_.code == OpCode::cumsum    ? OpCode::add
                   : op_.code == OpCode::cumprod ? OpCode::multiply
                   : op_.code == OpCode::cummax  ? OpCode::maximum
                                                 : OpCode::minimum;
  if (in.ndim() == 0) refuse("a scan of a 0-d array");
  if (g_.dtype_of(out) != t) refuse("a scan into another dtype");
  if (!has_loop(f, t)) refuse(std::string(op_name(f)) + " has no " + loop_family(t) + " loop");
  const int last = in.ndim() - 1;
  const int64_t rows = in.numel() / std::max<int64_t>(in.shape[last], 1);
  const std::string n = "a0_n" + std::to_string(last), r = reg(in);
  const std::string x = from_memory("s" + std::to_string(in.storage) + "[from + i * " + literal(in.strides[last]) + "]", t);
  const std::string y = "s" + std::to_string(out.storage) + "[to + i * " + literal(out.strides[last]) + "]";
  auto fold = [&](const std::string& a, const std::string& b) { return "st::" + scalar_function(f, t) + "(" + a + ", " + b + ")"; };
  if (!is_float(t) && in.shape[last] > 4 * kThreads) {
    const std::string run = std::to_string(kThreads / kRuns);
    open("scan", std::min(rows, kCudaMaxBlocks));
    line("__shared__ " + r + " st_v[" + std::to_string(kThreads) + "];");
    line("__shared__ " + r + " st_runs[" + std::to_string(kRuns) + "];  // st_runs[k]: the fold of runs 0 to k - 1");
    walk("a0", in, 0, last, "a0_head", literal(in.offset));
    walk("o", out, 0, last, "o_head", literal(out.offset));
    open_block("for (long long row = blockIdx.x; row < a0_head_count; row += gridDim.x)");
    line("const long long from = a0_head(row), to = o_head(row);");
    line(r + " carry{};  // the fold of the tiles before");
    open_block("for (long long t0 = 0; t0 < " + n + "; t0 += " + std::to_string(kThreads) + ")");
    line("const long long i = t0 + threadIdx.x;");
    line("st_v[threadIdx.x] = i < " + n + " ? " + x + " : (" + r + ")0;");
    line("__syncthreads();");
    open_block("if (threadIdx.x < " + std::to_string(kRuns) + ")");
    line(r + "* const v = st_v + threadIdx.x * " + run + ";");
    line("for (int k = 1; k < " + run + "; ++k) v[k] = " + fold("v[k - 1]", "v[k]") + ";");
    close_block();
    line("__syncthreads();");
    open_block("if (threadIdx.x == 0)");
    line("for (int k = 1; k < " + std::to_string(kRuns) + "; ++k) st_runs[k] = k == 1 ? st_v[" + run + " - 1] : " +
         fold("st_runs[k - 1]", "st_v[k * " + run + " - 1]") + ";");
    close_block();
    line("__syncthreads();");
    line("auto scanned = [&](long long k) { return k < " + run + " ? st_v[k] : " + fold("st_runs[k / " + run + "]", "st_v[k]") + "; };");
    line("const long long last = (" + n + " - t0 < " + std::to_string(kThreads) + " ? " + n + " - t0 : " + std::to_string(kThreads) + ") - 1;");
    line("if (i < " + n + ") " + y + " = " + to_memory("t0 == 0 ? scanned(threadIdx.x) : " + fold("carry", "scanned(threadIdx.x)"), t) + ";");
    line("carry = t0 == 0 ? scanned(last) : " + fold("carry", "scanned(last)") + ";");
    line("__syncthreads();  // st_v is read before the next tile writes it");
    close_block();
    close_block();
    close_block();
    return;
  }
  open("scan", grid(rows));
  walk("a0", in, 0, last, "a0_head", literal(in.offset));
  walk("o", out, 0, last, "o_head", literal(out.offset));
  for_each("a0_head_count");
  line("const long long from = a0_head(t), to = o_head(t);");
  line(r + " acc{};");
  open_block("for (long long i = 0; i < " + n + "; ++i)");
  line("const " + r + " x = " + x + ";");
  line("acc = i == 0 ? x : " + CudaEmitter::as_dtype(fold("acc", "x"), t) + ";");
  line(y + " = " + to_memory("acc", t) + ";");
  close_block();
  close_block();
  close_block();
}

// NumPy's places, as the NumPy the function was traced with searches (axes[1]). NumPy 2.5 halves
// the whole range for each needle: a thread per needle. Before it, in a sorted array (NaNs last)
// each search alone finds them too; in an unsorted one they are those of NumPy's search narrowed
// from the last needle's range, so one thread walks the needles in C order as the reference does.
// One block first tells which (in scratch): the haystack is rarely long, and the sorted case is
// the common one.
void DataDependentEmitter::search() {
  const View& a = op_.inputs[0];
  const DType t = g_.dtype_of(a);
  if (g_.dtype_of(op_.inputs[1]) != t) refuse("the needles' dtype is not the sorted array's");
  const bool right = op_.axes[0] != 0;
  int bits = 0;
  auto key_of = [&](const std::string& p, const View& v, const std::string& i) { return sort_key(elem(p, v, i), t, &bits); };
  const std::string lower = right ? "!(key < k)" : "k < key";
  if (op_.axes[1] != 0) {
    open("search", grid(op_.inputs[1].numel()));
    for_each("a1_numel");
    line("const unsigned long long key = " + key_of("a1", op_.inputs[1], "t") + ";");
    line("long long first = 0;");
    open_block("for (long long len = a0_n0; len > 1; len -= len / 2)");
    line("const unsigned long long k = " + key_of("a0", a, "first + len / 2") + ";");
    line("if (" + lower + ") first += len / 2;");
    close_block();
    open_block("if (a0_n0 > 0)");
    line("const unsigned long long k = " + key_of("a0", a, "first") + ";");
    line("if (" + lower + ") ++first;");
    close_block();
    line(elem("o", op_.output, "t") + " = first;");
    close_block();
    close_block();
    return;
  }
  scratch_ = 8;
  open("sorted", 1);
  line("__shared__ int st_unsorted;");
  line("if (threadIdx.x == 0) st_unsorted = 0;");
  line("__syncthreads();");
  open_block("for (long long i = threadIdx.x; i + 1 < a0_n0; i += " + std::to_string(kThreads) + ")");
  line("if (" + key_of("a0", a, "i + 1") + " < " + key_of("a0", a, "i") + ") st_unsorted = 1;");
  close_block();
  line("__syncthreads();");
  line("if (threadIdx.x == 0) *(long long*)scratch = st_unsorted;");
  close_block();

  auto bisect = [&] {
    open_block("while (lo < hi)");
    line("const long long mid = lo + (hi - lo) / 2;");
    line("const unsigned long long k = " + key_of("a0", a, "mid") + ";");
    line("if (" + lower + ") lo = mid + 1;");
    line("else hi = mid;");
    close_block();
  };
  open("search", grid(op_.inputs[1].numel()));
  open_block("if (*(const long long*)scratch == 0)");
  for_each("a1_numel");
  line("const unsigned long long key = " + key_of("a1", op_.inputs[1], "t") + ";");
  line("long long lo = 0, hi = a0_n0;");
  bisect();
  line(elem("o", op_.output, "t") + " = lo;");
  close_block();
  close_block();
  open_block("else if (blockIdx.x == 0 && threadIdx.x == 0)");
  line("long long lo = 0, hi = a0_n0;");
  line("unsigned long long last = 0;");
  open_block("for (long long t = 0; t < a1_numel; ++t)");
  line("const unsigned long long key = " + key_of("a1", op_.inputs[1], "t") + ";");
  line(std::string("if (") + (right ? "!(key < last)" : "last < key") + ") hi = a0_n0;");
  line("else lo = 0, hi = hi < a0_n0 ? hi + 1 : a0_n0;");
  line("last = key;");
  bisect();
  line(elem("o", op_.output, "t") + " = lo;");
  close_block();
  close_block();
  close_block();
}

// sort and argsort: a block per row (rows beyond the grid taken in turn), an LSD radix sort of
// the row's keys one bit a pass, each pass a stable split (zeros first) by a block scan over
// tiles of the row, keys and positions ping-ponged in the block's scratch; a bit every key shares
// is skipped (few long rows: sort_by_tiles). The head (a top-k) is read from the whole order:
// correct before fast.
void DataDependentEmitter::sort() {
  const View& in = op_.inputs[0];
  const View& out = op_.output;
  const DType t = g_.dtype_of(in);
  if (in.ndim() == 0) refuse("a sort of a 0-d array");
  const bool reverse = !op_.axes.empty() && op_.axes[0] != 0;
  const bool positions = op_.code == OpCode::argsort;
  if (!positions && g_.dtype_of(out) != t) refuse("a sort into another dtype");
  const int last = in.ndim() - 1;
  const int64_t n_bound = std::max<int64_t>(in.shape[last], 1);
  const int64_t rows = in.numel() / std::max<int64_t>(in.shape[last], 1);
  const int64_t row_bytes = 32 * n_bound;  // two key and two position arrays of long long
  const int64_t blocks = std::clamp<int64_t>(std::min(rows, kSortScratch / row_bytes), 1, kCudaMaxBlocks);
  scratch_ = blocks * row_bytes;
  int bits = 0;
  const std::string key = sort_key("s" + std::to_string(in.storage) + "[from + i * " + literal(in.strides[last]) + "]", t, &bits);
  if (rows <= kFewRows && n_bound > 4 * kTile) return sort_by_tiles(key, bits, reverse, positions);
  const std::string nb = literal(n_bound), n = "a0_n" + std::to_string(last);
  open("sort", blocks);
  declare_scan();
  walk("a0", in, 0, last, "a0_head", literal(in.offset));
  walk("o", out, 0, last, "o_head", literal(out.offset));
  line("unsigned long long* const keys = (unsigned long long*)scratch + (long long)blockIdx.x * 4 * " + nb + ";");
  open_block("for (long long row = blockIdx.x; row < a0_head_count; row += gridDim.x)");
  line("const long long from = a0_head(row), to = o_head(row);");
  line("unsigned long long *k0 = keys, *k1 = keys + 2 * " + nb + ";");
  line("long long *p0 = (long long*)(keys + " + nb + "), *p1 = (long long*)(keys + 3 * " + nb + ");");
  open_block("for (long long i = threadIdx.x; i < " + n + "; i += " + std::to_string(kThreads) + ")");
  line("k0[i] = " + key + ";");
  line("p0[i] = i;");
  close_block();
  line("__syncthreads();");
  open_block("for (int bit = 0; bit < " + std::to_string(bits) + "; ++bit)");
  line("long long z = 0;");
  line("for (long long i = threadIdx.x; i < " + n + "; i += " + std::to_string(kThreads) + ") z += !((k0[i] >> bit) & 1);");
  block_scan("z", "z_ex", "zeros");
  line("if (zeros == 0 || zeros == " + n + ") continue;  // every key has the same bit: as it is");
  line("long long placed = 0;  // the zeros of the tiles before");
  open_block("for (long long t0 = 0; t0 < " + n + "; t0 += " + std::to_string(kThreads) + ")");
  line("const long long i = t0 + threadIdx.x;");
  line("const unsigned long long k = i < " + n + " ? k0[i] : 0ull;");
  line("const long long zero = i < " + n + " && !((k >> bit) & 1);");
  block_scan("zero", "zero_ex", "zero_total");
  open_block("if (i < " + n + ")");
  line("const long long at = zero ? placed + zero_ex : zeros + (t0 - placed) + (threadIdx.x - zero_ex);");
  line("k1[at] = k;");
  line("p1[at] = p0[i];");
  close_block();
  line("placed += zero_total;");
  close_block();
  line("unsigned long long* const k2 = k0;");
  line("k0 = k1, k1 = k2;");
  line("long long* const p2 = p0;");
  line("p0 = p1, p1 = p2;");
  line("__syncthreads();");
  close_block();
  // the first k of the order, or of its reverse
  const std::string m = "o_n" + std::to_string(last);
  open_block("for (long long i = threadIdx.x; i < " + m + " && i < " + n + "; i += " + std::to_string(kThreads) + ")");
  line("const long long p = p0[" + std::string(reverse ? n + " - 1 - i" : "i") + "];");
  line("s" + std::to_string(out.storage) + "[to + i * " + literal(out.strides[last]) + "] = " +
       (positions ? std::string("p") : "s" + std::to_string(in.storage) + "[from + p * " + literal(in.strides[last]) + "]") + ";");
  close_block();
  line("__syncthreads();  // the next row's keys overwrite these");
  close_block();
  close_block();
}


// Few long rows: a block per row would leave the device idle. Each pass is three launches over
// tiles of kTile elements of every row: the tiles' zero counts, one block's offsets per row (the
// zeros of the tiles before; the row's zeros), the tiles' stable splits. Kernels come in two
// parities, pass b running those of parity b % 2: they read keys and positions from buffer b % 2
// and the bit from state[b % 2], write buffer 1 - b % 2, and the offsets kernel sets
// state[1 - b % 2] = bit + 1 for the next pass (a bit a pass, no bit skipped: the launches are
// fixed). The key widths are even: the order ends in buffer 0.
void DataDependentEmitter::sort_by_tiles(const std::string& key, int bits, bool reverse, bool positions) {
  const View& in = op_.inputs[0];
  const View& out = op_.output;
  const int last = in.ndim() - 1;
  const int64_t nb = in.shape[last], rows = in.numel() / nb, tiles = (nb + kTile - 1) / kTile;
  const std::string n = "a0_n" + std::to_string(last), NB = literal(nb), T = literal(tiles);
  // long long words: keys and positions twice, the tiles' counts, the rows' zeros, the state
  const int64_t buffer = rows * nb, counts = 4 * buffer, zeros = counts + rows * tiles, state = zeros + rows;
  scratch_ = 8 * (state + 2);
  auto buffers = [&] {
    walk("a0", in, 0, last, "a0_head", literal(in.offset));
    line("unsigned long long* const w = (unsigned long long*)scratch;");
    line("unsigned long long* const keys[2] = {w, w + " + literal(2 * buffer) + "};");
    line("long long* const pos[2] = {(long long*)w + " + literal(buffer) + ", (long long*)w + " + literal(3 * buffer) + "};");
    line("long long* const counts = (long long*)w + " + literal(counts) + ";");
    line("long long* const zeros = (long long*)w + " + literal(zeros) + ";");
    line("long long* const state = (long long*)w + " + literal(state) + ";");
  };
  open("load", grid(buffer));
  buffers();
  for_each(literal(buffer));
  line("if (t == 0) state[0] = 0;");
  line("const long long row = t / " + NB + ", i = t % " + NB + ";");
  line("if (row >= a0_head_count || i >= " + n + ") continue;");
  line("const long long from = a0_head(row);");
  line("keys[0][t] = " + key + ";");
  line("pos[0][t] = i;");
  close_block();
  close_block();
  // a tile's block: its row and tile; a row past the run-time count has no elements
  auto tile_block = [&](int parity) {
    declare_scan();
    buffers();
    line("const int p = " + std::to_string(parity) + ";");
    line("const long long bit = state[p], row = blockIdx.x / " + T + ", tile = blockIdx.x % " + T + ";");
    line("const long long n = row < a0_head_count ? " + n + " : 0;");
    line("const unsigned long long* const k = keys[p] + row * " + NB + ";");
  };
  for (int parity : {0, 1}) {
    const std::string par = std::to_string(parity);
    open("count" + par, rows * tiles);
    tile_block(parity);
    line("long long z = 0;");
    open_block("for (int e = 0; e < " + std::to_string(kItems) + "; ++e)");
    line("const long long i = tile * " + literal(kTile) + " + threadIdx.x * " + std::to_string(kItems) + " + e;");
    line("if (i < n) z += !((k[i] >> bit) & 1);");
    close_block();
    block_scan("z", "z_ex", "z_total");
    line("if (threadIdx.x == 0) counts[blockIdx.x] = z_total;");
    close_block();

    open("offsets" + par, 1);
    declare_scan();
    buffers();
    open_block("for (long long row = 0; row < " + literal(rows) + "; ++row)");
    offsets("counts + row * " + T, tiles, "zeros[row]");
    close_block();
    line("if (threadIdx.x == 0) state[1 - " + par + "] = state[" + par + "] + 1;");
    close_block();

    open("split" + par, rows * tiles);
    tile_block(parity);
    line("const long long* const from = pos[p] + row * " + NB + ";");
    line("unsigned long long* const k1 = keys[1 - p] + row * " + NB + ";");
    line("long long* const p1 = pos[1 - p] + row * " + NB + ";");
    line("long long placed = counts[blockIdx.x];  // the row's zeros before this part of the tile");
    open_block("for (long long t0 = tile * " + literal(kTile) + "; t0 < (tile + 1) * " + literal(kTile) + "; t0 += " +
               std::to_string(kThreads) + ")");
    line("const long long i = t0 + threadIdx.x;");
    line("const unsigned long long key = i < n ? k[i] : 0ull;");
    line("const long long zero = i < n && !((key >> bit) & 1);");
    block_scan("zero", "zero_ex", "zero_total");
    open_block("if (i < n)");
    line("const long long at = zero ? placed + zero_ex : zeros[row] + (t0 - placed) + (threadIdx.x - zero_ex);");
    line("k1[at] = key;");
    line("p1[at] = from[i];");
    close_block();
    line("placed += zero_total;");
    close_block();
    close_block();
  }
  // the first k of the order, or of its reverse
  const int64_t m = std::max<int64_t>(out.shape[last], 1);
  open("head", grid(rows * m));
  buffers();
  walk("o", out, 0, last, "o_head", literal(out.offset));
  for_each(literal(rows * m));
  line("const long long row = t / " + literal(m) + ", i = t % " + literal(m) + ";");
  line("if (row >= a0_head_count || i >= o_n" + std::to_string(last) + " || i >= " + n + ") continue;");
  line("const long long p = pos[0][row * " + NB + " + " + (reverse ? n + " - 1 - i" : std::string("i")) + "];");
  line("s" + std::to_string(out.storage) + "[o_head(row) + i * " + literal(out.strides[last]) + "] = " +
       (positions ? std::string("p") : "s" + std::to_string(in.storage) + "[a0_head(row) + p * " + literal(in.strides[last]) + "]") + ";");
  close_block();
  close_block();
  // the launches: load, a pass a bit, head
  const std::vector<CudaLaunch> kernels = launches_;  // load, count0, offsets0, split0, count1, offsets1, split1, head
  launches_ = {kernels[0]};
  for (int b = 0; b < bits; ++b)
    for (int k = 0; k < 3; ++k) launches_.push_back(kernels[1 + 3 * (b % 2) + k]);
  launches_.push_back(kernels[7]);
}

}  // namespace strider::detail
