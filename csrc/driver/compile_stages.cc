// compile_stages: every stage's native code, compiled by LLVM (or loaded from the disk cache)
// in groups of one module each, at once or on background threads while a first call runs.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "codegen/llvm/codegen.h"
#include "codegen/stage_plan.h"
#include "driver/driver.h"
#include "ops/numpy_loops.h"
#include "runtime/background_compile.h"
#include "runtime/thread_pool.h"
#include "support/flags.h"

namespace strider {

namespace {

// What the reference executor runs in microseconds while a background compile runs: a stage
// with more element-ops waits for its kernel instead (interpreted, it could cost more than that).
constexpr int64_t kInterpretOps = int64_t{1} << 16;

// What LLVM takes for a stage's function, roughly (O3 and codegen, measured on a 2-core
// machine): a loop's a few milliseconds, mostly the vectorizer's and the cleanups after it, more
// with more ops; a scalar stage's one. A module adds its own fixed cost once (the scalar ops'
// bitcode, the pass pipelines, linking).
constexpr std::chrono::microseconds kLoopFunction{3000}, kPerOp{250}, kScalarFunction{1000}, kModule{2000};
// A background compile's groups are cut in stage order at about this much, or at a share of
// the whole per thread where that is less: the first stages' kernels come first, a caller
// interpreting a loop compiles only the loop's group, and a caller waiting for kernels compiles
// as much as a worker does.
constexpr std::chrono::microseconds kGroupCost{20000};
// How much faster a group compiles with Effort::kQuick (py_cpu_nms's two big stages: 120 ms of
// O3 and codegen, 6-16 ms quickly) and with Effort::kLoops (Soft-NMS's IoU stage: 40-80 ms, 30).
constexpr int kQuickFaster = 8, kLoopsFaster = 2;
static_assert(static_cast<int>(Effort::kFull) == BackgroundCompile::kFinal, "a kernel's tier is its effort");
// A loop nest over at least this many elements (its bound, where its extent is known only at
// run time) is where a loop's time goes (see compile_stages_in_background's loops_first).
constexpr int64_t kWideLoop = 256;

// The stages compile_stages compiles, in groups of one LLVM module each, and each group's
// expected cost. Stages of one text (a loop body unrolled, an image of a batch after another) go
// to one group, which compiles their code once (compile_stage_group). The split and the groups'
// cache keys are the same in every process with as many threads. Refusals go to p.fallbacks.
struct Plan {
  std::vector<BackgroundCompile::Group> groups;
  std::vector<std::string> text;  // per stage, where it is in a group
};

// One group per thread of the pool, since a module's fixed costs are paid once per group, not
// once per stage (a loop brings tens of them); the heaviest stage goes to the lightest group. In
// the background (`must_wait` given), groups in stage order (see kGroupCost), those with a stage
// that must wait for its kernel first; unless such stages weigh half the whole or more: the
// first call then waits for most of the compile anyway, fastest in groups of equal weight.
// `only` given: the stages it marks alone.
Plan plan_groups(Program& p, const std::vector<char>& must_wait = {}, const std::vector<char>& only = {}) {
  const size_t n = p.stages.stages.size();
  std::vector<size_t> order;
  std::vector<std::chrono::microseconds> cost(n, std::chrono::microseconds(0));
  Plan plan;
  plan.text.resize(n);
  std::map<std::string, size_t> placed;  // text -> its group
  std::chrono::microseconds total(0);
  for (size_t i = 0; i < n; ++i) {
    const Stage& s = p.stages.stages[i];
    if (s.computed_in >= 0 || (!only.empty() && !only[i])) continue;  // (computed_in: its code is that stage's)
    try {
      detail::make_plan(p.graph, s, "LLVM");
    } catch (const std::invalid_argument& e) {  // refused: nothing to weigh
      p.fallbacks[i] = e.what();
      continue;
    }
    order.push_back(i);
    plan.text[i] = detail::stage_text(p.graph, s);
    if (placed.emplace(plan.text[i], 0).second) {  // (a stage alike an earlier one costs nothing more)
      cost[i] = shape_numel(s.domain) > 1 ? kLoopFunction + kPerOp * static_cast<int64_t>(s.ops.size()) : kScalarFunction;
      total += cost[i];
    }
  }
  const int threads = parallel_threads();
  std::chrono::microseconds waiting(0);
  for (size_t i : order)
    if (!must_wait.empty() && must_wait[i]) waiting += cost[i];
  const bool in_order = !must_wait.empty() && 2 * waiting < total;
  if (!in_order) {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost[a] > cost[b]; });
    plan.groups.resize(std::min<size_t>(threads, order.size()));
  }
  const auto cut = std::clamp<std::chrono::microseconds>(total / threads, kLoopFunction, kGroupCost);
  for (size_t i : order) {
    size_t& at = placed.at(plan.text[i]);
    if (cost[i].count() > 0) {  // the first of its text
      if (!in_order) {
        at = std::min_element(plan.groups.begin(), plan.groups.end(),
                              [](const auto& a, const auto& b) { return a.cost < b.cost; }) - plan.groups.begin();
      } else {
        if (plan.groups.empty() || plan.groups.back().cost - kModule >= cut) plan.groups.push_back({{}, kModule});
        at = plan.groups.size() - 1;
      }
      plan.groups[at].cost += cost[i];
    }
    plan.groups[at].stages.push_back(i);
  }
  for (BackgroundCompile::Group& group : plan.groups) std::sort(group.stages.begin(), group.stages.end());
  if (in_order)  // a stage that must wait holds the call up, one the reference runs does not: first
    std::stable_partition(plan.groups.begin(), plan.groups.end(), [&](const BackgroundCompile::Group& group) {
      return std::any_of(group.stages.begin(), group.stages.end(), [&](size_t i) { return must_wait[i]; });
    });
  return plan;
}

std::vector<const Stage*> stages_of(const Program& p, const std::vector<size_t>& group) {
  std::vector<const Stage*> stages;
  for (size_t i : group) stages.push_back(&p.stages.stages[i]);
  return stages;
}

// Where the program keeps its kernels of `effort`, per stage.
std::vector<std::shared_ptr<const CompiledStage>>& kernels_of(Program& p, Effort effort) {
  return effort == Effort::kQuick ? p.quick_kernels : effort == Effort::kLoops ? p.loop_kernels : p.kernels;
}

// Its kernels into kernels_of(p, effort), and for the full compile its reasons into p.fallbacks
// (the full compile says why a stage has no kernel).
void compile_group(Program& p, const std::vector<size_t>& group, DiskCache* cache = DiskCache::process(),
                   Effort effort = Effort::kFull) {
  CompiledGroup compiled = compile_stage_group(p.graph, stages_of(p, group), cache, effort);
  for (size_t j = 0; j < group.size(); ++j) {
    kernels_of(p, effort)[group[j]] = std::move(compiled.kernels[j]);
    if (effort == Effort::kFull) p.fallbacks[group[j]] = std::move(compiled.refused[j]);
  }
}

// The storages stage s keeps in registers or stack slabs: never allocated when it runs compiled.
void mark_unstored(Program& p, const Stage& s) {
  p.unstored.resize(p.graph.storages.size(), false);
  for (int r : s.registers) p.unstored[r] = true;
  for (const Stage& m : s.computed_at)
    for (int r : m.registers) p.unstored[r] = true;
  for (const Stage::Folded& f : s.folded) p.unstored[f.storage] = true;
}

// After every group: the log, the dumps and the counts (a machine code counted once, however
// many stages run it).
void finish_compile(Program& p, const Plan& plan) {
  std::set<std::string> counted;
  for (size_t i = 0; i < p.stages.stages.size(); ++i) {
    if (!p.fallbacks[i].empty())
      log_line("codegen", "stage " + std::to_string(i) + " runs on the reference executor: " + p.fallbacks[i]);
    if (!p.kernels[i]) continue;
    if (counted.insert(plan.text[i]).second) ++(p.kernels[i]->from_disk() ? p.disk_hits : p.compiled);
    debug_dump_text(p.graph.name + ".stage" + std::to_string(i) + ".ll", p.kernels[i]->llvm_ir());
  }
}

// Appends `from`'s groups to `to`'s, and the texts of its stages.
void append_plan(Plan& to, const Plan& from) {
  to.groups.insert(to.groups.end(), from.groups.begin(), from.groups.end());
  to.text.resize(std::max(to.text.size(), from.text.size()));
  for (size_t i = 0; i < from.text.size(); ++i)
    if (to.text[i].empty()) to.text[i] = from.text[i];
}

// Per stage: whether it runs inside a loop (between its loop_begin's and loop_end's stages),
// every trip.
std::vector<char> in_loops(const Program& p) {
  std::vector<char> in_loop(p.stages.stages.size(), 0);
  int depth = 0;
  for (size_t i = 0; i < in_loop.size(); ++i) {
    const Op* c = p.stages.stages[i].control();
    if (c && c->code == OpCode::loop_end) --depth;
    in_loop[i] = depth > 0;
    if (c && c->code == OpCode::loop_begin) ++depth;
  }
  return in_loop;
}

// Whether the reference executor computes what stage s's kernel computes, bit for bit
// (codegen/llvm/codegen.h: all but float transcendentals and float sums and products; those
// computed_inline aside: Soft-NMS's Gaussian decay waited for its O3 kernel on a first call)
bool interpreted_alike(const Graph& g, const Stage& s) {
  for (const Op& op : s.ops) {
    const DType t = g.dtype_of(op.output);
    if (is_float(t) && (((op_attrs(op.code) & kLibm) && !computed_inline(op.code, t)) || op.code == OpCode::sum ||
                        op.code == OpCode::prod))
      return false;
  }
  return std::all_of(s.computed_at.begin(), s.computed_at.end(), [&](const Stage& m) { return interpreted_alike(g, m); });
}

// Whether the disk cache has an entry for the group (linking it takes a millisecond or two).
bool in_disk_cache(const Program& p, const BackgroundCompile::Group& group, DiskCache* cache) {
  if (!cache || !cache->enabled()) return false;
  std::error_code ignored;
  return std::filesystem::exists(cache->path(stage_cache_key(p.graph, stages_of(p, group.stages))), ignored);
}

void start_compile(Program& p) {
  const size_t n = p.stages.stages.size();
  p.kernels.assign(n, nullptr);
  p.fallbacks.assign(n, llvm_backend_available() ? "" : "built without LLVM");
}

}  // namespace

void compile_stages(Program& p) {
  start_compile(p);
  if (!llvm_backend_available()) return;
  const Plan plan = plan_groups(p);
  parallel_for(static_cast<int64_t>(plan.groups.size()), [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) compile_group(p, plan.groups[k].stages);
  });
  finish_compile(p, plan);
  for (size_t i = 0; i < p.stages.stages.size(); ++i)
    if (p.kernels[i]) mark_unstored(p, p.stages.stages[i]);
}

void compile_stages_in_background(Program& p, DiskCache* cache) {
  start_compile(p);
  if (!llvm_backend_available()) return;
  const size_t n = p.stages.stages.size();
  // a stage the reference computes alike gets a quick kernel first (its values are the full
  // one's bit for bit: Effort::kQuick), which the call runs while the full compile goes on: one
  // that must wait, instead of waiting for the full one; a loop's small ones, instead of the
  // reference from the quick kernel's coming on (a ski rental compiles it on the caller sooner
  // than the full one); the call picks the full kernels up as they come. Unless the disk cache
  // holds the full one: loading it is quicker still.
  std::vector<char> must_wait(n, 0), quick(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Stage& s = p.stages.stages[i];
    const bool alike = interpreted_alike(p.graph, s);
    must_wait[i] = !alike ||
                   shape_numel(s.domain) * static_cast<int64_t>(std::max<size_t>(1, s.ops.size())) >= kInterpretOps;
    quick[i] = alike;
  }
  // Plans of the stages `only` marks: those that must wait balanced over the threads, the others
  // in stage order.
  auto plan_of = [&](const std::vector<char>& only, bool waiting) {
    return std::count(only.begin(), only.end(), 1) ? plan_groups(p, waiting ? std::vector<char>{} : std::vector<char>(n, 0), only)
                                                   : Plan();
  };
  // Plans of the stages `only` marks in stage order, those inside loops first, in groups of
  // their own: while a first call runs a loop on quick kernels (a few times slower, nothing
  // vectorized), their O3 ones come first (greedy NMS on 6000 boxes ran its whole first call on
  // them, the loop's O3 code waiting in a group with the stages before the loop). `wide_first`:
  // of those, the loop nests over many elements first, for O3 gains little on a scalar stage
  // (Soft-NMS's IoU stage waited behind twenty scalar ones on 6000 boxes, its quick code running
  // meanwhile); not for quick kernels, which the call waits for in stage order.
  const std::vector<char> in_loop = in_loops(p);
  // `in_loop_groups`: set to how many of the plan's groups are of stages inside loops.
  auto loops_first = [&](const std::vector<char>& only, bool wide_first, size_t* in_loop_groups = nullptr) {
    std::vector<char> wide(n, 0), narrow(n, 0), outer(n, 0);
    for (size_t i = 0; i < n; ++i) {
      const bool wide_one = wide_first && shape_numel(p.stages.stages[i].domain) >= kWideLoop;
      (!in_loop[i] ? outer : wide_one ? wide : narrow)[i] = only[i];
    }
    Plan plan = plan_of(wide, false);
    append_plan(plan, plan_of(narrow, false));
    if (in_loop_groups) *in_loop_groups = plan.groups.size();
    append_plan(plan, plan_of(outer, false));
    return plan;
  };
  // the full compile: first the stages no quick kernel can stand in for that must wait (a
  // transcendental's, a float sum's), in groups of their own; then the others
  std::vector<char> slow(n, 0), full(n, 0);
  for (size_t i = 0; i < n; ++i) (quick[i] ? full : slow)[i] = 1;  // (a stage not alike must wait)
  auto plan = std::make_shared<Plan>(plan_of(slow, true));
  const size_t slow_groups = plan->groups.size();
  append_plan(*plan, loops_first(full, true));
  plan->text.resize(n);
  for (const BackgroundCompile::Group& group : plan->groups) {
    const bool stored = in_disk_cache(p, group, cache);
    for (size_t i : group.stages) {
      mark_unstored(p, p.stages.stages[i]);
      if (stored) quick[i] = 0;
    }
  }
  // a loop nest over many elements inside a loop gets a vectorized kernel (Effort::kLoops), in
  // a third of O3's time, right after the quick kernels a first call waits for: its trips run on
  // quick code a few times slower until it comes (Soft-NMS's IoU stage on 6000 boxes, 31 ms of
  // trips at O3 speed, 200 on quick code alone). In place of a quick kernel, which compiles
  // little quicker (7.8 ms against 10-20 for that stage), but for a compaction's, whose
  // vectorized code takes several times as long (py_cpu_nms's: 49 ms, a first call of 50 that
  // waited for it). One stage a group, the most work first
  std::vector<size_t> wide;
  for (size_t i = 0; i < n; ++i) {
    const Stage& s = p.stages.stages[i];
    if (!quick[i] || !in_loop[i] || shape_numel(s.domain) < kWideLoop) continue;
    wide.push_back(i);
    quick[i] = std::any_of(s.ops.begin(), s.ops.end(), [](const Op& op) { return op.code == OpCode::compress; });
  }
  std::vector<char> waits(n, 0), rest(n, 0);
  for (size_t i = 0; i < n; ++i) (must_wait[i] ? waits : rest)[i] = quick[i];
  auto quick_waits = std::make_shared<const Plan>(plan_of(waits, true));
  size_t quick_in_loops = 0;
  auto quick_rest = std::make_shared<const Plan>(loops_first(rest, false, &quick_in_loops));
  auto work = [&](size_t i) { return shape_numel(p.stages.stages[i].domain) * static_cast<int64_t>(p.stages.stages[i].ops.size()); };
  std::stable_sort(wide.begin(), wide.end(), [&](size_t a, size_t b) { return work(a) > work(b); });
  auto loops = std::make_shared<Plan>();
  for (size_t i : wide) {
    std::vector<char> one(n, 0);
    one[i] = 1;
    append_plan(*loops, plan_of(one, false));
  }
  const bool quick_none = quick_waits->groups.empty() && quick_rest->groups.empty();
  p.quick_kernels.assign(quick_none ? 0 : n, nullptr);
  p.loop_kernels.assign(loops->groups.empty() ? 0 : n, nullptr);
  // the groups in the order the workers take them: what a first call waits for (quick kernels,
  // the vectorized ones of the loops, then full ones no quick kernel stands in for), then the
  // quick kernels of the rest inside loops, the other quick ones, then the full ones
  struct Part {
    const Plan* plan;
    size_t group;
    Effort effort;
  };
  std::vector<Part> parts;
  std::vector<BackgroundCompile::Group> groups;
  auto add = [&](const Plan& from, size_t begin, size_t end, Effort effort) {
    for (size_t g = begin; g < end; ++g) {
      parts.push_back({&from, g, effort});
      groups.push_back(from.groups[g]);
      if (effort == Effort::kQuick) groups.back().cost /= kQuickFaster;
      if (effort == Effort::kLoops) groups.back().cost /= kLoopsFaster;
    }
  };
  add(*quick_waits, 0, quick_waits->groups.size(), Effort::kQuick);
  add(*loops, 0, loops->groups.size(), Effort::kLoops);
  add(*plan, 0, slow_groups, Effort::kFull);
  add(*quick_rest, 0, quick_in_loops, Effort::kQuick);
  add(*quick_rest, quick_in_loops, quick_rest->groups.size(), Effort::kQuick);
  add(*plan, slow_groups, plan->groups.size(), Effort::kFull);
  Program* at = &p;
  auto job = std::make_shared<BackgroundCompile>(
      n, std::move(groups), std::move(must_wait),
      [at, plan, cache, quick_waits, quick_rest, loops, parts](size_t g) {  // (parts point into the plans)
        const Part& part = parts[g];
        const std::vector<size_t>& stages = part.plan->groups[part.group].stages;
        compile_group(*at, stages, cache, part.effort);
        for (size_t i : stages)  // (efforts in the tiers' order)
          at->background.job->publish(i, kernels_of(*at, part.effort)[i].get(), static_cast<int>(part.effort));
      },
      [at, plan] {
        finish_compile(*at, *plan);
        for (const BackgroundCompile::Group& group : plan->groups)
          for (size_t i : group.stages) at->unstored_holds = at->unstored_holds && at->kernels[i];
      });
  p.background.job = job;
  BackgroundCompile::start(job);
}

}  // namespace strider
