#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "codegen/cuda/cuda_codegen.h"
#include "runtime/cuda_loader.h"
#include "runtime/elementwise.h"

// The CUDA backend without a GPU: every op on every dtype is emitted where the reference has a
// loop for it and refused (naming the op) where it has none, every reduction in each of its
// kernel shapes; all of it compiles with NVRTC for sm_80 and sm_90. Cubins are cached on disk
// under a key that holds the architecture and the NVRTC version.
namespace strider {
namespace {


Stage one_op_stage(Graph& g, OpCode code, const std::vector<DType>& in, DType out, const Shape& shape,
                   const std::vector<int>& axes) {
  Op op;
  op.code = code;
  op.axes = axes;
  for (size_t k = 0; k < in.size(); ++k) {
    Storage s;
    s.dtype = in[k];
    s.size = shape_numel(shape);
    s.kind = StorageKind::Arg;
    s.arg = static_cast<int>(k);
    op.inputs.push_back(View{g.add_storage(s), shape, contiguous_strides(shape), 0});
  }
  Shape kept;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(shape[d]);
  Storage r;
  r.dtype = out;
  r.size = shape_numel(kept);
  op.output = View{g.add_storage(r), kept, contiguous_strides(kept), 0};
  g.ops.push_back(op);
  Stage s;
  s.domain = shape;
  for (size_t d = 0; d < shape.size(); ++d) s.loops.push_back("i" + std::to_string(d));
  s.op_ids = {static_cast<int>(g.ops.size()) - 1};
  s.ops = {op};
  s.reduce_axes = axes;
  return s;
}

// Whether runtime/elementwise.h has a loop for op on t (it throws logic_error where not).
bool reference_has_loop(OpCode code, DType t) {
  try {
    dispatch_dtype(t, [&](auto zero) {
      using T = decltype(zero);
      const st::reg_t<T> one(1);
      // cast is convert<U, T>, defined for every pair
      if (op_kind(code) == OpKind::Unary && code != OpCode::cast)
        is_predicate(code) ? detail::unary_predicate<T>(code, one) : bool(detail::unary_same<T>(code, one));
      if (op_kind(code) == OpKind::Binary)
        is_comparison(code) ? detail::compare<T>(code, one, one) : bool(detail::binary_same<T>(code, one, one));
      return 0;
    });
    return true;
  } catch (const std::logic_error&) {
    return false;
  }
}

// One NVRTC program holding every source (each is self-contained, kernels named per stage): a
// cubin for sm_90, PTX for compute_80 (the front end's checks for that architecture without
// ptxas, half the time: tests/python/test_cuda_e2e.py takes cubins of sm_80).
void expect_compiles(const std::vector<std::string>& sources) {
  const Nvrtc* nvrtc = Nvrtc::get();
  if (!nvrtc) GTEST_SKIP() << nvrtc_unavailable_reason();
  std::string all;
  for (const std::string& s : sources) all += s;
  for (const char* arch : {"compute_80", "sm_90"})
    EXPECT_NO_THROW(nvrtc->compile_cubin(all, "stages.cu", arch, cuda_compile_options())) << arch;
}

TEST(CudaCodegen, EveryElementwiseOpIsEmittedWhereTheReferenceHasALoop) {
  std::vector<std::string> sources;
  int refused = 0;
#define STRIDER_OP(name, kind, attrs)                                                                  \
  for (DType t : kDTypes) {                                                                             \
    const OpCode code = OpCode::name;                                                                   \
    const OpKind k = op_kind(code);                                                                     \
    if (k != OpKind::Unary && k != OpKind::Binary && k != OpKind::Ternary && k != OpKind::Copy) continue; \
    const bool boolean = is_predicate(code) || is_comparison(code);                     \
    std::vector<DType> in(op_arity(code), t);                                                           \
    if (k == OpKind::Ternary) in[0] = DType::Bool;                                                      \
    Graph g;                                                                                            \
    const Stage s = one_op_stage(g, code, in, boolean ? DType::Bool : t, {37}, {});                     \
    try {                                                                                               \
      sources.push_back(emit_cuda_stage(g, s).source);                                                  \
      EXPECT_TRUE(reference_has_loop(code, t)) << #name << " " << dtype_name(t);                        \
    } catch (const std::invalid_argument& e) {                                                          \
      ++refused;                                                                                        \
      EXPECT_FALSE(reference_has_loop(code, t)) << e.what();                                            \
      EXPECT_NE(std::string(e.what()).find("CUDA backend cannot compile op0 (" #name ")"), std::string::npos) << e.what(); \
    }                                                                                                   \
  }
#include "ir/ops.def"
  EXPECT_GT(refused, 0);  // bitwise ops on floats, divide on integers, ...
  EXPECT_GT(sources.size(), 240u);  // NumPy's loops (ops.def) of every op on every dtype
  expect_compiles(sources);
}

TEST(CudaCodegen, EveryReductionInEveryKernelShape) {
  struct Case {
    Shape shape;
    std::vector<int> axes;
    const char* marker;  // a line only that shape emits
    size_t launches;
  };
  const Case cases[] = {
      {{50, 4}, {1}, "r++", 1},                            // thread: short rows
      {{4, 50}, {0}, "r++", 1},                            // thread: a column sum
      {{64, 1000}, {1}, "f += 32", 1},                     // warp
      {{64, 10000}, {1}, "part[lane / 32] = a", 1},        // block
      {{100000}, {0}, "partials[b] = a;", 2},              // grid
      {{70000, 3}, {0}, "partials[o * 274 + chunk] = a;", 2},  // columns
  };
  std::vector<std::string> sources;
  for (OpCode code : {OpCode::sum, OpCode::prod, OpCode::max, OpCode::min, OpCode::argmax, OpCode::argmin, OpCode::any,
                      OpCode::all})
    for (DType t : kDTypes)
      for (const Case& c : cases) {
        const bool arg = code == OpCode::argmax || code == OpCode::argmin;
        const DType out = arg ? DType::Int64 : code == OpCode::any || code == OpCode::all ? DType::Bool : t;
        Graph g;
        const CudaStage st = emit_cuda_stage(g, one_op_stage(g, code, {t}, out, c.shape, c.axes));
        // float16 sums and products round after every step, and float products are NumPy's in
        // order only: a thread per output
        const bool half_steps = (code == OpCode::sum || code == OpCode::prod) && t == DType::Float16;
        const bool in_order = half_steps || (code == OpCode::prod && is_float(t));
        EXPECT_NE(st.source.find(in_order ? "r++" : c.marker), std::string::npos) << op_name(code) << " " << c.shape[0];
        EXPECT_EQ(st.source.find("a.v = st::round_half(st::") != std::string::npos, half_steps);
        EXPECT_EQ(st.launches.size(), in_order ? 1 : c.launches);
        EXPECT_EQ(st.scratch_bytes > 0, st.launches.size() == 2);
        sources.push_back(st.source);
      }
  expect_compiles(sources);
}

TEST(CudaCodegen, IntegerPowerTakesTheErrorFlag) {
  Graph g;
  const CudaStage st = emit_cuda_stage(g, one_op_stage(g, OpCode::power, {DType::Int64, DType::Int64}, DType::Int64, {9}, {}));
  EXPECT_TRUE(st.error_flag);
  EXPECT_NE(st.source.find("long long* __restrict__ err)"), std::string::npos);
  EXPECT_NE(st.source.find("if (st::power_fails(a0_0, a0_1)) st_fail(err, 1, 0);"), std::string::npos);
  Graph f;
  EXPECT_FALSE(emit_cuda_stage(f, one_op_stage(f, OpCode::power, {DType::Float32, DType::Float32}, DType::Float32, {9}, {})).error_flag);
}

// A one-op graph: storages %s0 (T[10000], the values), %s1 (i64[64], indices), %s2 (bool[64]),
// %s3 (i64[1], a run-time extent) and %s4 (U[10000], the result), every " T[" typed t, " U[" u.
Graph data_dependent_graph(const std::string& op, DType t, DType u) {
  std::string text = "graph @t {\n %s0 = storage T[10000] arg 0\n %s1 = storage i64[64] arg 1\n %s2 = storage bool[64] arg 2\n"
                     " %s3 = storage i64[1] arg 3\n %s4 = storage U[10000] arg 4\n op0 = " + op + "\n return\n}";
  for (size_t at = text.find(" T["); at != std::string::npos; at = text.find(" T[", at)) text.replace(at + 1, 1, dtype_name(t));
  for (size_t at = text.find(" U["); at != std::string::npos; at = text.find(" U[", at)) text.replace(at + 1, 1, dtype_name(u));
  return parse_graph(text);
}

TEST(CudaCodegen, DataDependentOpsAreKernelsOnEveryDtype) {
  std::vector<std::string> sources;
  auto emit = [&](const std::string& op, DType t, DType u) {
    const Graph g = data_dependent_graph(op, t, u);
    Stage s;
    s.op_ids = {0};
    s.ops = {g.ops[0]};
    const CudaStage st = emit_cuda_stage(g, s);
    sources.push_back(st.source);
    return st;
  };
  for (DType t : kDTypes) {
    SCOPED_TRACE(dtype_name(t));
    emit("sort(%s0[4,16]{16,1}+0) -> %s4[4,16]{16,1}+0", t, t);
    emit("argsort(%s0[?%s3<=64]{1}+0) axes=[1,5] -> %s4[5]{1}+0", t, DType::Int64);
    emit("sort(%s0[10000]{1}+0) axes=[1,7] -> %s4[7]{1}+0", t, t);  // one long row: by tiles
    // NumPy 2.5's search (halving) and the earlier one (narrowed from the last needle's)
    emit("searchsorted(%s0[32]{1}+0, %s0[8,4]{1,8}+32) axes=[1,1] -> %s4[8,4]{4,1}+0", t, DType::Int64);
    emit("searchsorted(%s0[32]{1}+0, %s0[8,4]{1,8}+32) axes=[0,0] -> %s4[8,4]{4,1}+0", t, DType::Int64);
    emit("nonzero(%s0[8,8]{1,8}+0) -> %s4[?%s3<=64]{1}+0", t, DType::Int64);
    emit("compress(%s2[16]{1}+0, %s0[16,4]{4,1}+0) -> %s4[?%s3<=16,4]{4,1}+0", t, t);
    emit("take(%s0[16,4]{4,1}+0, %s1[3,2]{2,1}+0) -> %s4[3,2,4]{8,4,1}+0", t, t);
    emit("put(%s1[6]{1}+0, %s0[6,4]{4,1}+0) -> %s4[16,4]{4,1}+0", t, t);
    // a list's append: one row, and a block of a run-time count of rows
    emit("append(%s1[]{}+0, %s0[4]{1}+0) -> %s4[16,4]{4,1}+0", t, t);
    emit("append(%s1[]{}+0, %s0[?%s3<=6,4]{4,1}+0) -> %s4[16,4]{4,1}+0", t, t);
    // scans of short rows (a thread each) and long ones (a block each for integers)
    const char* const rows[] = {"(%s0[4,16]{1,4}+0) -> %s4[4,16]{16,1}+0", "(%s0[2,2000]{2000,1}+0) -> %s4[2,2000]{2000,1}+0"};
    // and the scatters that combine rows (np.add.at, np.maximum.at, np.minimum.at), whole ops
    const std::string scatter = "(%s1[6]{1}+0, %s0[6,4]{4,1}+0) -> %s4[16,4]{4,1}+0";
    const std::pair<std::string, OpCode> ops[] = {
        {"cumsum(", OpCode::add},          {"cumprod(", OpCode::multiply}, {"cummax(", OpCode::maximum},
        {"cummin(", OpCode::minimum},      {"add_at" + scatter, OpCode::add},
        {"maximum_at" + scatter, OpCode::maximum}, {"minimum_at" + scatter, OpCode::minimum}};
    for (const auto& [op, f] : ops)
      for (const char* r : rows) {
        const bool whole = op.back() != '(';
        if (whole && r != rows[0]) continue;
        const std::string text = whole ? op : op + std::string(r + 1);
        if (has_loop(f, t)) emit(text, t, t);
        else EXPECT_THROW(emit(text, t, t), std::invalid_argument) << text;
      }
  }
  expect_compiles(sources);
}

TEST(CudaCodegen, DataDependentStagesLaunchStepsAndFillTheErrorRecord) {
  auto emit = [](const std::string& op, const std::string& storages) {
    const Graph g = parse_graph("graph @t {\n" + storages + " op0 = " + op + "\n return\n}");
    Stage s;
    s.op_ids = {0};
    s.ops = {g.ops[0]};
    return emit_cuda_stage(g, s);
  };
  const std::string st = " %s0 = storage f32[5000] arg 0\n %s1 = storage i64[1] arg 1\n %s2 = storage i64[5000] arg 2\n";
  // compaction: counts of 2048-element tiles, their offsets, the writes; no error record
  const CudaStage nz = emit("nonzero(%s0[5000]{1}+0) -> %s2[?%s1<=5000]{1}+0", st);
  ASSERT_EQ(nz.launches.size(), 3u);
  EXPECT_EQ(nz.launches[0].kernel, nz.name + "_count");
  EXPECT_EQ(nz.launches[0].blocks, 3);
  EXPECT_EQ(nz.launches[1].blocks, 1);
  EXPECT_FALSE(nz.error_flag);
  EXPECT_EQ(nz.scratch_bytes, 3 * 8);
  EXPECT_NE(nz.source.find("if (k < o_n0) s2[0 + k * 1] = i;"), std::string::npos);
  // an indexed read: every index checked, the first bad one's position kept (op 0: code 2)
  const CudaStage take = emit("take(%s0[50,100]{100,1}+0, %s2[7]{1}+0) -> %s3[7,100]{100,1}+0", st + " %s3 = storage f32[700] arg 3\n");
  EXPECT_TRUE(take.error_flag);
  EXPECT_NE(take.source.find("if (i < 0 || i >= a0_n0) st_fail(err, 2, t);"), std::string::npos);
  EXPECT_EQ(take.launches.back().kernel, take.name + "_fill");
  EXPECT_EQ(take.launches.back().threads, 1);
  // the assert's message never goes to the device
  const CudaStage assert_ = emit("check_assert(%s0[]{}+0, %s1[1]{1}+0) -> %s2[]{}+0",
                                 " %s0 = storage bool[1] arg 0\n %s1 = storage i32[1] const 0x41000000\n %s2 = storage bool[1] arg 2\n");
  EXPECT_EQ(assert_.params, (std::vector<int>{0, 2}));
  // a sort: a block per row, a radix pass a key bit, stable splits by block scans
  const CudaStage sort = emit("argsort(%s0[20,250]{250,1}+0) -> %s2[20,250]{250,1}+0", st);
  ASSERT_EQ(sort.launches.size(), 1u);
  EXPECT_EQ(sort.launches[0].blocks, 20);
  EXPECT_NE(sort.source.find("for (int bit = 0; bit < 32; ++bit) {"), std::string::npos);
  EXPECT_NE(sort.source.find("__syncthreads();"), std::string::npos);
}

TEST(CudaCodegen, DataDependentOpReadingItsOwnOutputIsRefused) {
  const Graph g = parse_graph("graph @t {\n %s0 = storage f32[40] arg 0\n %s1 = storage i64[4] arg 1\n"
                              " op0 = put(%s1[4]{1}+0, %s0[4]{1}+0) -> %s0[40]{1}+0\n return\n}");
  Stage s;
  s.op_ids = {0};
  s.ops = {g.ops[0]};
  try {
    emit_cuda_stage(g, s);
    FAIL() << "emitted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("op0 (put): it reads the storage it writes"), std::string::npos) << e.what();
  }
}

TEST(CudaCodegen, KernelNameFollowsTheStageNotTheFunction) {
  Graph a, b;
  a.name = "first";
  b.name = "second";
  const CudaStage x = emit_cuda_stage(a, one_op_stage(a, OpCode::exp, {DType::Float32}, DType::Float32, {8}, {}));
  const CudaStage y = emit_cuda_stage(b, one_op_stage(b, OpCode::exp, {DType::Float32}, DType::Float32, {8}, {}));
  Graph c;
  const CudaStage z = emit_cuda_stage(c, one_op_stage(c, OpCode::exp, {DType::Float32}, DType::Float32, {9}, {}));
  EXPECT_EQ(x.name, y.name);
  EXPECT_NE(x.name, z.name);
  EXPECT_EQ(x.name.rfind("strider_", 0), 0u);
  EXPECT_EQ(x.name.size(), 8u + 16u);
}

TEST(CudaCodegen, ADataDependentKernelIsNamedAndCachedWithTheOpItsErrorNames) {
  // one check stage, op0 of one function and op1 of another: its kernel writes the op's id into
  // the error record, so the two are two kernels (one named by code alone raised the other's op)
  const std::string storages = " %s0 = storage bool[1] arg 0\n %s1 = storage i32[3] const 0x6e0000006f00000021000000\n"
                               " %s2 = storage bool[1] arg 2\n %s3 = storage f32[4] arg 3\n";
  const std::string check = "check_assert(%s0[]{}+0, %s1[3]{1}+0) axes=[2] -> %s2[]{}+0";
  const Graph a = parse_graph("graph @a {\n" + storages + " op0 = " + check + "\n return\n}");
  const Graph b = parse_graph("graph @b {\n" + storages + " op0 = exp(%s3[4]{1}+0) -> %s3[4]{1}+0\n op1 = " + check +
                              "\n return\n}");
  Stage sa, sb;
  sa.op_ids = {0};
  sa.ops = {a.ops[0]};
  sb.op_ids = {1};
  sb.ops = {b.ops[1]};
  const CudaStage x = emit_cuda_stage(a, sa), y = emit_cuda_stage(b, sb);
  EXPECT_NE(x.name, y.name);
  EXPECT_NE(x.source, y.source);
  EXPECT_NE(cuda_group_cache_key(a, {&sa}, "sm_90", "13.0").digest(), cuda_group_cache_key(b, {&sb}, "sm_90", "13.0").digest());
  EXPECT_NE(y.source.find("st_fail(err, " + std::to_string(kCudaFailedOp + 1) + ", 0)"), std::string::npos);
}

TEST(CudaCodegen, CacheKeyHoldsArchAndNvrtcVersion) {
  Graph g;
  const Stage s = one_op_stage(g, OpCode::exp, {DType::Float32}, DType::Float32, {8}, {});
  const CacheKey k = cuda_group_cache_key(g, {&s}, "sm_90", "13.0");
  EXPECT_NE(k.digest(), cuda_group_cache_key(g, {&s}, "sm_80", "13.0").digest());
  EXPECT_NE(k.digest(), cuda_group_cache_key(g, {&s}, "sm_90", "12.4").digest());
  EXPECT_EQ(k.digest(), cuda_group_cache_key(g, {&s}, "sm_90", "13.0").digest());
}

TEST(CudaCodegen, CubinComesFromTheDiskCacheTheSecondTime) {
  if (!Nvrtc::get()) GTEST_SKIP() << nvrtc_unavailable_reason();
  char name[] = "/tmp/strider-cuda-cache-XXXXXX";
  const std::string dir = mkdtemp(name);
  {
    DiskCache cache(dir);
    Graph g;
    const Stage s = one_op_stage(g, OpCode::add, {DType::Float32, DType::Float32}, DType::Float32, {8}, {});
    const CudaCompiled first = compile_cuda_stage(g, s, "sm_80", &cache);
    const CudaCompiled second = compile_cuda_stage(g, s, "sm_80", &cache);
    EXPECT_FALSE(first.from_disk);
    EXPECT_TRUE(second.from_disk);
    EXPECT_EQ(first.cubin, second.cubin);
    EXPECT_FALSE(compile_cuda_stage(g, s, "sm_90", &cache).from_disk);  // another arch, another entry
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strider
