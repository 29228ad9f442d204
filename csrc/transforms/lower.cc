#include <set>
#include <sstream>
#include <stdexcept>

#include "codegen/cuda/cuda_codegen.h"
#include "codegen/llvm/codegen.h"
#include "runtime/flags.h"
#include "schedule/default_schedule.h"
#include "transforms/passes.h"

namespace strider {

namespace {
void schedule_stages(const Graph& g, StageGraph& sg, const std::map<int, std::string>& schedules) {
  for (size_t i = 0; i < sg.stages.size(); ++i) {
    auto user = schedules.find(static_cast<int>(i));
    Stage& s = sg.stages[i];
    apply_schedule(g, s, user != schedules.end() ? parse_schedule(user->second) : default_schedule(g, s));
  }
  std::set<int> user;
  for (const auto& entry : schedules) user.insert(entry.first);
  default_compute_at(g, sg, user);
  compute_at_stages(g, sg);
  for (const auto& [index, text] : schedules)
    if (index < 0 || index >= static_cast<int>(sg.stages.size()))
      throw ScheduleError("schedule for stage " + std::to_string(index) + ": there are " +
                          std::to_string(sg.stages.size()) + " stages");
}
}  // namespace

void compile_stages(Program& p) {
  const size_t n = p.stages.stages.size();
  p.kernels.assign(n, nullptr);
  p.fallbacks.assign(n, llvm_backend_available() ? "" : "built without LLVM");
  if (!llvm_backend_available()) return;
  for (size_t i = 0; i < n; ++i) {
    if (p.stages.stages[i].computed_in >= 0) continue;  // its code is part of that stage's
    try {
      auto kernel = compile_stage(p.graph, p.stages.stages[i]);
      ++(kernel->from_disk() ? p.disk_hits : p.compiled);
      p.kernels[i] = std::move(kernel);
    } catch (const std::invalid_argument& e) {
      p.fallbacks[i] = e.what();
      log_line("codegen", "stage " + std::to_string(i) + " runs on the reference executor: " + e.what());
    }
    if (!p.kernels[i]) continue;
    debug_dump_text(p.graph.name + ".stage" + std::to_string(i) + ".ll", p.kernels[i]->llvm_ir());
    const Stage& s = p.stages.stages[i];
    p.unstored.resize(p.graph.storages.size(), false);
    for (int r : s.registers) p.unstored[r] = true;
    for (const Stage& m : s.computed_at)
      for (int r : m.registers) p.unstored[r] = true;
    for (const Stage::Folded& f : s.folded) p.unstored[f.storage] = true;
  }
}

Program lower(Graph g, const std::map<int, std::string>& schedules, bool jit, Target target) {
  verify_graph(g);
  debug_dump("trace_to_graph", g);
  Program p;
  // dead-op elimination needs the ordering edges; the final graph's are built once, at the end
  p.table = build_storage_table(g);
  Graph live = eliminate_dead_ops(g, p.table, build_dependence_dag(g, p.table, false));
  if (!(live == g)) {
    log_line("passes", "eliminate_dead_ops removed " + std::to_string(g.ops.size() - live.ops.size()) + " ops");
    p.table = build_storage_table(live);
  }
  debug_dump("eliminate_dead_ops", live);
  std::vector<std::string> recomputed;
  Graph inlined = inline_producers(live, p.table, &recomputed);
  if (!recomputed.empty()) {
    for (const std::string& r : recomputed) log_line("inline", r);
    const StorageTable t = build_storage_table(inlined);
    live = eliminate_dead_ops(inlined, t, build_dependence_dag(inlined, t, false));
    p.table = build_storage_table(live);
    debug_dump("inline_producers", live);
  }
  std::vector<std::string> buffered;
  if (target == Target::Cuda) {
    Graph separated = buffer_overlapping_writes(live, &buffered);
    if (!buffered.empty()) {
      for (const std::string& r : buffered) log_line("passes", "buffer_overlapping_writes: " + r);
      live = std::move(separated);
      p.table = build_storage_table(live);
      debug_dump("buffer_overlapping_writes", live);
    }
  }
  p.dag = build_dependence_dag(live, p.table, false);
  log_line("passes", "build_dependence_dag: " + std::to_string(p.dag.edges.size()) + " edges");
  verify_graph(live);
  p.stages = fuse_stages(live, p.table, target);
  p.stages.recomputed = std::move(recomputed);
  p.stages.buffered = std::move(buffered);
  log_line("passes", "fuse_stages: " + std::to_string(live.ops.size()) + " ops in " +
                         std::to_string(p.stages.stages.size()) + " stages");
  schedule_stages(live, p.stages, schedules);
  p.graph = std::move(live);
  if (jit) compile_stages(p);
  else p.fallbacks.assign(p.stages.stages.size(), "the JIT is off");
  return p;
}

std::string run_passes(const std::string& ir_text, const std::vector<std::string>& passes,
                       const std::map<int, std::string>& schedules, Target target) {
  Graph g = parse_graph(ir_text);
  std::ostringstream extra;
  for (const std::string& name : passes) {
    if (name == "verify_graph") {
      verify_graph(g);
    } else if (name == "build_storage_table") {
      extra << "// storage table\n" << print_storage_table(g, build_storage_table(g));
    } else if (name == "build_dependence_dag") {
      extra << "// dependence edges\n" << print_dag(build_dependence_dag(g, build_storage_table(g)));
    } else if (name == "eliminate_dead_ops") {
      StorageTable t = build_storage_table(g);
      g = eliminate_dead_ops(g, t, build_dependence_dag(g, t));
    } else if (name == "inline_producers") {
      std::vector<std::string> log;
      g = inline_producers(g, build_storage_table(g), &log);
      extra << "// recomputed\n";
      for (const std::string& r : log) extra << r << "\n";
    } else if (name == "buffer_overlapping_writes") {
      std::vector<std::string> log;
      g = buffer_overlapping_writes(g, &log);
      extra << "// buffered\n";
      for (const std::string& r : log) extra << r << "\n";
    } else if (name == "fuse_stages") {
      StageGraph sg = fuse_stages(g, build_storage_table(g), target);
      schedule_stages(g, sg, schedules);
      extra << "// stages\n" << print_stages(g, sg);
    } else if (name == "emit_cuda") {
      StageGraph sg = fuse_stages(g, build_storage_table(g), Target::Cuda);
      schedule_stages(g, sg, schedules);
      for (size_t i = 0; i < sg.stages.size(); ++i) {
        extra << "// cuda stage " << i << "\n";
        try {
          extra << emit_cuda_stage(g, sg.stages[i]).source;
        } catch (const std::invalid_argument& e) {
          extra << "// refused: " << e.what() << "\n";
        }
      }
    } else if (name == "lower") {
      g = lower(std::move(g), schedules, true, target).graph;
    } else {
      throw std::invalid_argument("unknown pass '" + name + "'");
    }
  }
  return print_graph(g) + extra.str();
}

}  // namespace strider
