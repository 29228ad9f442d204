#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "codegen/llvm/codegen.h"
#include "codegen/stage_plan.h"
#include "runtime/kernel_cache.h"

// The disk cache: entries round trip, every kind of damage is recompiled and the file replaced,
// an unusable directory keeps kernels in memory, and keys change exactly when the code would.
namespace strider {
namespace {

#define SKIP_WITHOUT_LLVM() \
  if (!llvm_backend_available()) GTEST_SKIP() << "built without LLVM"

namespace fs = std::filesystem;

struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/strider-cache-test-XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, ec);
    fs::remove_all(path, ec);
  }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// y = x * 2 + 1 over 1000 floats, in one stage with the temp in a register.
struct Saxpy {
  Graph g = parse_graph(R"(graph @saxpy {
    %s0 = storage f32[1000] arg 0
    %s1 = storage f32[1] const 0x00000040
    %s2 = storage f32[1] const 0x0000803f
    %s3 = storage f32[1000] temp
    %s4 = storage f32[1000] arg 1
    op0 = multiply(%s0[1000]{1}+0, %s1[1000]{0}+0) -> %s3[1000]{1}+0
    op1 = add(%s3[1000]{1}+0, %s2[1000]{0}+0) -> %s4[1000]{1}+0
    return
  })");
  Stage s;

  Saxpy() {
    s.domain = {1000};
    s.loops = {"i0"};
    s.op_ids = {0, 1};
    s.ops = g.ops;
    s.registers = {3};
    s.schedule.vector_width = 8;
  }

  // Runs the stage on 0..999 and checks every element.
  void check(const CompiledStage& c) const {
    std::vector<float> x(1000), y(1000, -1.0f);
    for (int i = 0; i < 1000; ++i) x[i] = static_cast<float>(i) * 0.25f;
    char* bases[5] = {reinterpret_cast<char*>(x.data()), nullptr, nullptr, nullptr, reinterpret_cast<char*>(y.data())};
    c.run(bases);
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(y[i], x[i] * 2.0f + 1.0f) << i;
  }
};

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the length goes into a second padding block
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(KernelCache, KeysAreNamedPartsAndNameTheirFile) {
  CacheKey a, b;
  a.add("strider", "0.1.0");
  a.add("stage", "line one\nline two\n");
  b.add("strider", "0.1.0");
  b.add("stage", "line one\nline two \n");
  EXPECT_NE(a.text(), b.text());
  EXPECT_NE(a.digest(), b.digest());
  EXPECT_EQ(a.digest().size(), 64u);
  EXPECT_EQ(a.summary().rfind("strider=0.1.0 stage=\"line one...\"(18B,sha256:", 0), 0u) << a.summary();
  // a part's length is in the text: moving bytes between parts changes the key
  CacheKey c, d;
  c.add("x", "ab");
  c.add("y", "c");
  d.add("x", "a");
  d.add("y", "bc");
  EXPECT_NE(c.text(), d.text());
  TempDir dir;
  EXPECT_EQ(DiskCache(dir.path).path(a), dir.path + "/" + a.digest() + ".kernel");
}

TEST(KernelCache, EntriesRoundTrip) {
  TempDir dir;
  const std::string root = dir.path + "/new/cache";
  DiskCache cache(root);
  ASSERT_TRUE(cache.enabled());
  EXPECT_EQ(fs::status(root).permissions() & fs::perms::all, fs::perms::owner_all);  // created 0700
  CacheKey key;
  key.add("stage", "domain [4]");
  KernelBlob blob{{{"strider_0123", 24, ""}, {"", 0, "LLVM backend cannot compile op3 (nonzero): why"}},
                  std::string("\x7f" "ELF\0\1\2", 7), "define i32 @strider_0123(ptr %0)"};
  EXPECT_FALSE(cache.load(key));
  cache.store(key, blob);
  std::optional<KernelBlob> back = cache.load(key);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, blob);
  EXPECT_EQ(read_file(cache.path(key)), encode_entry(key, blob));
  // nothing but the entry is left in the directory
  int files = 0;
  for (const auto& e : fs::directory_iterator(root)) files += e.path().extension() == ".kernel" ? 1 : 100;
  EXPECT_EQ(files, 1);
  std::string why;
  EXPECT_TRUE(decode_entry(encode_entry(key, blob), key, &why)) << why;
}

// Each kind of damage: the entry is not run, the stage is compiled and the file replaced.
TEST(KernelCache, DamagedEntriesAreRecompiledAndReplaced) {
  SKIP_WITHOUT_LLVM();
  TempDir dir;
  DiskCache cache(dir.path);
  Saxpy w;
  const CacheKey key = stage_cache_key(w.g, w.s);
  const std::string file = cache.path(key);
  {
    auto first = compile_stage(w.g, w.s, &cache);
    EXPECT_FALSE(first->from_disk());
    w.check(*first);
  }
  const std::string good = read_file(file);
  ASSERT_TRUE(decode_entry(good, key, nullptr));
  {
    auto again = compile_stage(w.g, w.s, &cache);
    EXPECT_TRUE(again->from_disk());
    w.check(*again);
    EXPECT_FALSE(again->llvm_ir().empty());
  }
  std::optional<KernelBlob> blob = decode_entry(good, key, nullptr);
  CacheKey other;
  other.add("stage", "another stage");
  KernelBlob foreign_object = *blob;
  foreign_object.object = "this is not an object file";
  std::string foreign_version = good;
  const uint32_t version = DiskCache::kFormat + 1;
  std::memcpy(&foreign_version[8], &version, 4);
  const std::array<uint8_t, 32> sum = sha256(std::string_view(foreign_version).substr(0, good.size() - 32));
  std::memcpy(&foreign_version[good.size() - 32], sum.data(), 32);
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x10;
  const std::vector<std::pair<std::string, std::string>> damage = {
      {"truncated", good.substr(0, good.size() / 2)},
      {"truncated to its header", good.substr(0, 12)},
      {"empty", ""},
      {"bit-flipped", flipped},
      {"written for another key", encode_entry(other, *blob)},
      {"from another entry format", foreign_version},
      {"holding an object LLVM cannot link", encode_entry(key, foreign_object)},
  };
  for (const auto& [what, bytes] : damage) {
    SCOPED_TRACE(what);
    write_file(file, bytes);
    if (what != "holding an object LLVM cannot link") EXPECT_FALSE(cache.load(key));
    auto stage = compile_stage(w.g, w.s, &cache);
    EXPECT_FALSE(stage->from_disk());
    w.check(*stage);
    EXPECT_EQ(read_file(file), good);  // replaced by the same entry (codegen is deterministic)
    EXPECT_TRUE(compile_stage(w.g, w.s, &cache)->from_disk());
  }
}

TEST(KernelCache, UnusableDirectoriesKeepKernelsInMemory) {
  SKIP_WITHOUT_LLVM();
  TempDir dir;
  Saxpy w;
  write_file(dir.path + "/file", "x");
  std::vector<std::string> unusable = {dir.path + "/file/cache"};  // cannot be created
  if (geteuid() != 0) {  // root writes into read-only directories
    fs::create_directory(dir.path + "/ro");
    fs::permissions(dir.path + "/ro", fs::perms::owner_read | fs::perms::owner_exec);
    unusable.push_back(dir.path + "/ro");
    unusable.push_back(dir.path + "/ro/sub");
  }
  for (const std::string& path : unusable) {
    SCOPED_TRACE(path);
    testing::internal::CaptureStderr();
    DiskCache cache(path);
    auto a = compile_stage(w.g, w.s, &cache);
    auto b = compile_stage(w.g, w.s, &cache);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_FALSE(cache.enabled());
    EXPECT_FALSE(a->from_disk());
    EXPECT_FALSE(b->from_disk());
    w.check(*a);
    w.check(*b);
    // one warning, naming the directory
    EXPECT_NE(err.find("warning: kernel cache directory '" + path + "'"), std::string::npos) << err;
    EXPECT_EQ(err.find("warning", err.find("warning") + 1), std::string::npos) << err;
  }
  EXPECT_EQ(read_file(dir.path + "/file"), "x");
}

TEST(KernelCache, OneProcessLinksAnEntryTwice) {
  SKIP_WITHOUT_LLVM();
  TempDir dir;
  DiskCache cache(dir.path);
  Saxpy w;
  auto compiled = compile_stage(w.g, w.s, &cache);
  auto a = compile_stage(w.g, w.s, &cache);
  auto b = compile_stage(w.g, w.s, &cache);
  EXPECT_TRUE(a->from_disk() && b->from_disk());
  compiled.reset();  // freeing one copy leaves the others linked
  w.check(*a);
  a.reset();
  w.check(*b);
  auto c = compile_stage(w.g, w.s, nullptr);  // no cache: the same symbols again
  w.check(*c);
}

TEST(KernelCache, ThreadsCompilingOneKeyLeaveAValidEntry) {
  SKIP_WITHOUT_LLVM();
  TempDir dir;
  DiskCache cache(dir.path);
  Saxpy w;
  std::vector<std::unique_ptr<CompiledStage>> stages(4);
  std::vector<std::thread> threads;
  for (auto& s : stages) threads.emplace_back([&] { s = compile_stage(w.g, w.s, &cache); });
  for (auto& t : threads) t.join();
  for (auto& s : stages) w.check(*s);
  EXPECT_TRUE(cache.load(stage_cache_key(w.g, w.s)));
  for (const auto& e : fs::directory_iterator(dir.path)) EXPECT_EQ(e.path().extension(), ".kernel") << e.path();
}

// Stages compiled together are one module and one entry: identical stages share a function, a
// refused stage gets compile_stage's message, and each kernel runs as it does compiled alone.
TEST(KernelCache, AGroupOfStagesIsOneEntry) {
  SKIP_WITHOUT_LLVM();
  TempDir dir;
  DiskCache cache(dir.path);
  Saxpy w;
  w.g.storages.push_back(Storage{DType::Int64, 1000, StorageKind::Temp, -1, {}});
  Op sort;
  sort.code = OpCode::argsort;
  sort.inputs = {w.g.ops[0].inputs[0]};
  sort.output = w.g.ops[0].output;
  sort.output.storage = 5;
  w.g.ops.push_back(sort);
  Stage scalar_loop = w.s, refused;
  scalar_loop.schedule.vector_width = 1;
  refused.domain = {1000};
  refused.loops = {"i0"};
  refused.op_ids = {2};
  refused.ops = {sort};
  const std::vector<const Stage*> group = {&w.s, &refused, &scalar_loop, &w.s};
  std::string alone;
  try {
    compile_stage(w.g, refused, nullptr);
  } catch (const std::invalid_argument& e) {
    alone = e.what();
  }
  EXPECT_NE(alone.find("op2 (argsort)"), std::string::npos) << alone;
  for (bool from_disk : {false, true}) {
    SCOPED_TRACE(from_disk ? "from the disk" : "compiled");
    CompiledGroup c = compile_stage_group(w.g, group, &cache);
    ASSERT_EQ(c.kernels.size(), 4u);
    ASSERT_EQ(c.refused.size(), 4u);
    EXPECT_FALSE(c.kernels[1]);
    EXPECT_EQ(c.refused[1], alone);
    for (int i : {0, 2, 3}) {
      ASSERT_TRUE(c.kernels[i]) << c.refused[i];
      EXPECT_EQ(c.refused[i], "");
      EXPECT_EQ(c.kernels[i]->from_disk(), from_disk);
      w.check(*c.kernels[i]);
    }
    const std::string& ir = c.kernels[0]->llvm_ir();
    EXPECT_EQ(ir, c.kernels[2]->llvm_ir());  // one module
    const std::string entry = "define i32 @strider_" + stage_cache_key(w.g, w.s).digest().substr(0, 16) + "(";
    EXPECT_NE(ir.find(entry), std::string::npos);
    EXPECT_EQ(ir.find(entry, ir.find(entry) + 1), std::string::npos) << "identical stages are one function";
  }
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) files += e.path().extension() == ".kernel" ? 1 : 100;
  EXPECT_EQ(files, 1);
  const CacheKey key = stage_cache_key(w.g, group);
  EXPECT_TRUE(cache.load(key));
  EXPECT_NE(key.text(), stage_cache_key(w.g, w.s).text());
  std::vector<std::string> names;
  for (const auto& [name, value] : key.parts()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"strider", "llvm", "codegen", "target", "math", "stage", "stage", "stage", "stage"}));
}

// The Saxpy stage again on storages of its own (an unrolled loop's next trip): %s5 -> %s9.
Stage saxpy_twin(Saxpy& w) {
  const size_t first = w.g.storages.size();
  for (int k : {0, 3, 4}) w.g.storages.push_back(w.g.storages[k]);
  const int x = static_cast<int>(first), t = x + 1, y = x + 2;
  Stage twin = w.s;
  twin.ops[0].inputs[0].storage = x;
  twin.ops[0].output.storage = twin.ops[1].inputs[0].storage = t;
  twin.ops[1].output.storage = y;
  twin.registers = {t};
  return twin;
}

TEST(KernelCache, StagesAlikeButForTheirStoragesShareOneCode) {
  SKIP_WITHOUT_LLVM();
  Saxpy w;
  const Stage twin = saxpy_twin(w);
  EXPECT_EQ(detail::stage_storages(w.s), (std::vector<int>{3, 0, 1, 2, 4}));  // registers first, then as the ops name them
  EXPECT_EQ(detail::stage_storages(twin), (std::vector<int>{6, 5, 1, 2, 7}));
  EXPECT_EQ(stage_cache_key(w.g, twin).text(), stage_cache_key(w.g, w.s).text());
  CompiledGroup c = compile_stage_group(w.g, {&w.s, &twin}, nullptr);
  ASSERT_TRUE(c.kernels[0] && c.kernels[1]);
  const std::string& ir = c.kernels[0]->llvm_ir();
  const std::string entry = "define i32 @strider_";
  EXPECT_EQ(ir.find(entry, ir.find(entry) + 1), std::string::npos) << "one function for both";
  // each reads and writes its own storages through its table
  std::vector<float> x(1000), y(1000, -1.0f), x2(1000), y2(1000, -1.0f);
  for (int i = 0; i < 1000; ++i) x[i] = static_cast<float>(i) * 0.25f, x2[i] = -static_cast<float>(i);
  char* bases[8] = {reinterpret_cast<char*>(x.data()), nullptr, nullptr, nullptr, reinterpret_cast<char*>(y.data()),
                    reinterpret_cast<char*>(x2.data()), nullptr, reinterpret_cast<char*>(y2.data())};
  c.kernels[1]->run(bases);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(y2[i], x2[i] * 2.0f + 1.0f) << i;
  EXPECT_EQ(y[0], -1.0f);  // the other's output untouched
  c.kernels[0]->run(bases);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(y[i], x[i] * 2.0f + 1.0f) << i;
  // which storages coincide is part of the text: y = x * 2 + 1 written over x is another code
  Stage in_place = twin;
  in_place.ops[1].output.storage = twin.ops[0].inputs[0].storage;
  EXPECT_NE(stage_cache_key(w.g, in_place).text(), stage_cache_key(w.g, w.s).text());
}

TEST(KernelCache, StageKeysChangeExactlyWithTheCode) {
  SKIP_WITHOUT_LLVM();
  Saxpy w;
  const CacheKey key = stage_cache_key(w.g, w.s);
  std::vector<std::string> names;
  for (const auto& [name, value] : key.parts()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"strider", "llvm", "codegen", "target", "math", "stage"}));
  EXPECT_EQ(stage_cache_key(w.g, w.s).text(), key.text());
  // op ids, source lines and the graph's name reach messages only
  Saxpy same;
  same.g.name = "other";
  same.s.op_ids = {7, 9};
  same.g.ops[0].line = same.s.ops[0].line = 12;
  EXPECT_EQ(stage_cache_key(same.g, same.s).text(), key.text());
  auto differs = [&](auto change) {
    Saxpy v;
    change(v);
    return stage_cache_key(v.g, v.s).text() != key.text();
  };
  EXPECT_TRUE(differs([](Saxpy& v) { v.s.schedule.vector_width = 16; }));
  EXPECT_TRUE(differs([](Saxpy& v) { v.s.schedule.parallel = true; }));
  EXPECT_TRUE(differs([](Saxpy& v) { v.s.registers.clear(); }));
  EXPECT_TRUE(differs([](Saxpy& v) { v.g.storages[0].dtype = v.g.storages[4].dtype = DType::Float64; }));
  EXPECT_TRUE(differs([](Saxpy& v) { v.g.storages[1].data[3] = 0x41; }));  // an embedded constant
  EXPECT_TRUE(differs([](Saxpy& v) { v.s.ops[1].output.strides = {2}; }));
  EXPECT_TRUE(differs([](Saxpy& v) { v.s.ops[0].inputs[0].offset = 1; }));
}

}  // namespace
}  // namespace strider
