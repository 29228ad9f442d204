#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>

#include "codegen/cuda/cuda_codegen.h"
#include "cuda_emulator.h"
#include "runtime/elementwise.h"
#include "stage_testing.h"

// What the CUDA backend emits, run on the CPU (cuda_emulator.h) and compared with the reference
// executor from the same inputs: every op on every dtype, casts, where, fused stages with
// registers, strided stores, broadcasts and negative strides, and every reduction in each of its
// kernel shapes (thread, warp, block, grid, columns), elementwise stages through their vector
// path (aligned arguments) and their scalar one (misaligned). Bit for bit, except float sums and products that
// the warp, block and grid shapes fold as trees (and float64 in double where the reference uses
// long double). The device's own math library is not exercised here (the host's libm stands in).
namespace strider {
namespace {

using namespace testing;

struct Case {
  std::string label;
  Graph g;
  Stage s;
  Tolerance tol;
  bool small_ints = false;  // storage 1 holds 0..12 (integer power exponents)
  std::function<void(Memory&)> set;  // then sets chosen inputs (run-time extents)
};

// Emits every case (a refused one must be one the reference has no loop for), emulates the
// emitted ones from one library and compares every Arg storage with the reference's, with the
// arguments' base addresses aligned as malloc aligns them and moved by each of `shifts` bytes
// (vector paths check the alignment). Returns how many were emulated.
int check_all(const std::vector<Case>& cases, std::vector<int> shifts = {0}) {
  std::vector<CudaStage> emitted;
  std::vector<const Case*> which;
  for (const Case& c : cases) {
    try {
      emitted.push_back(emit_cuda_stage(c.g, c.s));
      which.push_back(&c);
    } catch (const std::invalid_argument& e) {
      Memory ref(c.g);
      EXPECT_THROW(run_reference(c.g, ref.ptrs), std::logic_error) << c.label << ": refused what the reference runs: " << e.what();
    }
  }
  CudaEmulator emulator(emitted);
  for (size_t k = 0; k < which.size() * shifts.size(); ++k) {
    const Case& c = *which[k % which.size()];
    const int shift = shifts[k / which.size()];
    SCOPED_TRACE(c.label + " shifted by " + std::to_string(shift));
    Memory ref(c.g), got(c.g);
    std::vector<char*> bases = got.bases();
    for (size_t s = 0; s < c.g.storages.size(); ++s)
      if (c.g.storages[s].kind == StorageKind::Arg) {
        fill(c.g.storages[s].dtype, ref.at(s), c.g.storages[s].size, static_cast<uint32_t>(s) * 7 + 1, c.small_ints && s == 1);
        bases[s] += shift;  // Memory leaves 8 bytes to spare
      }
    if (c.set) c.set(ref);
    // unshifted, the vector paths run (malloc aligns to 16 bytes); shifted, the scalar ones
    for (size_t s = 0; s < c.g.storages.size() && shift == 0; ++s)
      EXPECT_EQ(reinterpret_cast<uintptr_t>(bases[s]) % 16, 0u);
    for (size_t s = 0; s < c.g.storages.size(); ++s)
      if (c.g.storages[s].kind == StorageKind::Arg)
        std::memcpy(bases[s], ref.at(s), c.g.storages[s].size * itemsize(c.g.storages[s].dtype));
    bool domain_error = false;
    try {
      run_reference(c.g, ref.ptrs);
    } catch (const std::domain_error&) {
      domain_error = true;
    }
    EXPECT_EQ(emulator.run(k % which.size(), bases)[0], domain_error ? kCudaFailedPower : 0);
    if (domain_error) continue;  // elements before it may differ, as in the reference
    for (size_t s = 0; s < c.g.storages.size(); ++s)
      if (c.g.storages[s].kind == StorageKind::Arg) {
        const std::string diff = compare(c.g, static_cast<int>(s), ref.at(s), bases[s], c.tol);
        const std::string& source = emitted[k % which.size()].source;
        EXPECT_EQ(diff, "") << print_graph(c.g) << source.substr(source.find("#endif"));
        if (!diff.empty()) break;
      }
  }
  return static_cast<int>(which.size());
}

Case one_op(const std::string& text, const Shape& domain, std::string label, Tolerance tol = {}, bool small_ints = false) {
  Case c{std::move(label), parse_graph(text), {}, tol, small_ints};
  c.s = stage_of(c.g, domain, {0});
  return c;
}

TEST(CudaEmulated, UnaryOpsAndCastsOnEveryDtype) {
  SKIP_WITHOUT_EMULATOR();
  std::vector<Case> cases;
  for (OpCode op : ops_of_kind(OpKind::Unary))
    for (DType t : kDTypes)
      for (DType u : kDTypes) {
        if (op != OpCode::cast && u != (is_predicate(op) ? DType::Bool : t)) continue;
        cases.push_back(one_op(unary_graph(op, t, u, 204), {204}, std::string(op_name(op)) + " " + dtype_name(t) + " -> " + dtype_name(u)));
      }
  EXPECT_GT(check_all(cases, {0, 4}), 130);  // NumPy's loops (ops.def), and every cast
}

TEST(CudaEmulated, BinaryOpsOnEveryDtype) {
  SKIP_WITHOUT_EMULATOR();
  std::vector<Case> cases;
  for (OpCode op : ops_of_kind(OpKind::Binary))
    for (DType t : kDTypes) {
      const DType u = is_comparison(op) ? DType::Bool : t;
      const std::string label = std::string(op_name(op)) + " " + dtype_name(t);
      // integer powers take small exponents here, and negative ones in a case of their own
      cases.push_back(one_op(binary_graph(op, t, u, 732), {732}, label, {}, op == OpCode::power && !is_float(t)));
    }
  cases.push_back(one_op(binary_graph(OpCode::power, DType::Int64, DType::Int64, 732), {732}, "power i64 < 0"));
  EXPECT_GT(check_all(cases, {0, 4}), 110);
}

TEST(CudaEmulated, FusedStageWithRegistersStridedStoresBroadcastsAndNegativeStrides) {
  SKIP_WITHOUT_EMULATOR();
  // boxes[:, 0::4] = exp(d[:, 0]); boxes[:, 2::4] = that * 2 (the temporaries in registers)
  const Graph boxes = parse_graph(R"(graph @t {
    %s0 = storage f32[400] arg 0
    %s1 = storage f32[400] arg 1
    %s2 = storage f32[100] temp
    %s3 = storage f32[1] const 0x00000040
    %s4 = storage f32[100] temp
    op0 = exp(%s1[100]{4}+0) -> %s2[100]{1}+0
    op1 = copy(%s2[100]{1}+0) -> %s0[100]{4}+0
    op2 = multiply(%s2[100]{1}+0, %s3[100]{0}+0) -> %s4[100]{1}+0
    op3 = copy(%s4[100]{1}+0) -> %s0[100]{4}+2
    return
  })");
  // a[:, None] + b
  const Graph broadcast = parse_graph(R"(graph @t {
    %s0 = storage f32[5] arg 0
    %s1 = storage f32[7] arg 1
    %s2 = storage f32[35] arg 2
    op0 = add(%s0[5,7]{1,0}+0, %s1[5,7]{0,1}+0) -> %s2[5,7]{7,1}+0
    return
  })");
  // -a[::-1] stored through x[::-2]
  const Graph reversed = parse_graph(R"(graph @t {
    %s0 = storage f32[5] arg 0
    %s1 = storage f32[10] arg 1
    op0 = negative(%s0[5]{-1}+4) -> %s1[5]{-2}+9
    return
  })");
  // where(c, a[::-1], a[3])
  const Graph where = parse_graph(R"(graph @t {
    %s0 = storage bool[300] arg 0
    %s1 = storage f32[300] arg 1
    %s2 = storage f32[300] arg 2
    op0 = where(%s0[300]{1}+0, %s1[300]{-1}+299, %s1[300]{0}+3) -> %s2[300]{1}+0
    return
  })");
  std::vector<Case> cases;
  cases.push_back({"delta2bbox", boxes, stage_of(boxes, {100}, {0, 1, 2, 3}, {2, 4}), {}});
  cases.push_back({"broadcast", broadcast, stage_of(broadcast, {5, 7}, {0}), {}});
  cases.push_back({"negative strides", reversed, stage_of(reversed, {5}, {0}), {}});
  cases.push_back({"where", where, stage_of(where, {300}, {0}), {}});
  EXPECT_EQ(check_all(cases, {0, 4}), 4);
}

TEST(CudaEmulated, ArangeOnEveryDtype) {
  SKIP_WITHOUT_EMULATOR();
  std::vector<Case> cases;
  for (DType t : kDTypes)
    for (int64_t n : {1, 2, 50}) {
      const Graph g = typed("graph @t {\n %s0 = storage T[2] arg 0\n %s1 = storage T[" + std::to_string(2 * n) +
                            "] arg 1\n op0 = arange(%s0[]{}+0, %s0[]{}+1) -> %s1[" + std::to_string(n) + "]{2}+1\n return\n}", t);
      cases.push_back({std::string("arange ") + dtype_name(t) + " " + std::to_string(n), g, stage_of(g, {n}, {0}), {}});
    }
  EXPECT_EQ(check_all(cases), static_cast<int>(cases.size()));
}

TEST(CudaEmulated, RunTimeExtentsAreReadAndClamped) {
  SKIP_WITHOUT_EMULATOR();
  // -x[:n], x[:n].sum(axis=0), x[:n].sum(axis=1), n read from storage 1
  const char* ops[] = {"negative(%s0[?%s1<=8,2]{2,1}+0) -> %s2[?%s1<=8,2]{2,1}+0",
                       "sum(%s0[?%s1<=8,2]{2,1}+0) axes=[0] -> %s2[2]{1}+0",
                       "sum(%s0[?%s1<=8,2]{2,1}+0) axes=[1] -> %s2[?%s1<=8]{1}+0"};
  std::vector<Case> cases;
  for (const char* op : ops) {
    const Graph g = parse_graph(std::string("graph @t {\n %s0 = storage f32[16] arg 0\n %s1 = storage i64[1] arg 1\n"
                                            " %s2 = storage f32[16] arg 2\n op0 = ") + op + "\n return\n}");
    for (int64_t n : {3, 0, -1, 100})
      cases.push_back({std::string(op) + " n=" + std::to_string(n), g, stage_of(g, {8, 2}, {0}), {}, false,
                       [n](Memory& m) { std::memcpy(m.at(1), &n, sizeof n); }});
  }
  EXPECT_EQ(check_all(cases), static_cast<int>(cases.size()));
}

struct Layout {
  Shape shape;
  std::vector<int> axes;
};

std::vector<Case> reductions(const std::vector<Layout>& layouts) {
  std::vector<Case> cases;
  for (OpCode op : ops_of_kind(OpKind::Reduce))
    for (DType t : kDTypes)
      for (const Layout& l : layouts) {
        const DType u = op == OpCode::argmax || op == OpCode::argmin ? DType::Int64
                      : op == OpCode::any || op == OpCode::all       ? DType::Bool
                                                                     : t;
        const bool tree = is_float(t) && (op == OpCode::sum || op == OpCode::prod);
        cases.push_back(one_op(reduce_graph(op, t, u, l.shape, l.axes), l.shape,
                               std::string(op_name(op)) + " " + dtype_name(t) + " over " + std::to_string(shape_numel(l.shape)),
                               tree ? Tolerance{64, 1e4} : Tolerance{}));
      }
  return cases;
}

TEST(CudaEmulated, ReductionsByThreadsAndWarps) {
  SKIP_WITHOUT_EMULATOR();
  const std::vector<Case> cases = reductions({
      {{50, 4}, {1}},           // thread: short rows
      {{4, 50}, {0}},           // thread: a column fold
      {{5, 7, 37}, {0, 2}},     // thread: axes around a kept one
      {{5, 7, 37}, {0, 1, 2}},  // warp: all of it, 1295 elements
      {{64, 1000}, {1}},        // warp
  });
  EXPECT_EQ(check_all(cases), static_cast<int>(cases.size()));
}

TEST(CudaEmulated, ReductionsByBlocksAndInChunks) {
  SKIP_WITHOUT_EMULATOR();
  const std::vector<Case> cases = reductions({
      {{32, 4500}, {1}},  // block
      {{66000}, {0}},     // grid: chunks, then their fold
      {{20000, 3}, {0}},  // columns: chunks, then their fold
  });
  EXPECT_EQ(check_all(cases), static_cast<int>(cases.size()));
}

}  // namespace
}  // namespace strider
