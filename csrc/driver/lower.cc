#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "codegen/cuda/cuda_codegen.h"
#include "driver/driver.h"
#include "runtime/executor.h"
#include "schedule/default_schedule.h"
#include "support/flags.h"

namespace strider {

// Where the run goes after each stage of a loop or branch (Program::jumps).
void link_regions(Program& p) {
  std::vector<const Op*> control;
  bool any = false;
  for (const Stage& s : p.stages.stages) {
    control.push_back(s.control());
    any = any || control.back();
  }
  if (any) p.jumps = region_jumps(control);
}

namespace {

// What the steps hand along: the program being built and what it was asked for.
struct Lowering {
  Lowering(Graph g, const std::map<int, std::string>& s, Target t, bool j) : schedules(s), target(t), jit(j) {
    p.graph = std::move(g);
  }

  // on the heap: a background compile holds its address
  std::shared_ptr<Program> owner = std::make_shared<Program>();
  Program& p = *owner;
  std::map<int, std::string> schedules;  // stage index -> the user's primitives
  Target target = Target::Cpu;
  bool jit = true;
  bool background = false;   // compile_stages starts a background compile (lower_in_background)
  bool hints = false;        // build_dependence_dag keeps the RAR hints (the text tests print them)
  bool table_stale = true;   // the graph changed since p.table was built
  std::vector<std::string> recomputed, buffered;  // inline_producers' and buffer_overlapping_writes' lines
  std::vector<std::string> in_place;              // compress_in_place's lines
  std::vector<std::string> narrowed;              // narrow_casts' lines
  std::vector<std::string> carried;               // carry_gathers' lines
  std::vector<std::string> cuda;                  // emit_cuda: each stage's CUDA C, or why it is refused
  int steps_run = 0;                              // numbers the dumps in run order
};

// What a step did: whether it changed anything (its input is left untouched when not) and a
// note for the log.
struct Result {
  bool changed = false;
  std::string note;
};

// One step: the name it has in logs, dumps, run_passes and tests/text/<name>.ir, what it does,
// and what it adds to the graph's text in dumps and run_passes.
struct Step {
  const char* name;
  Result (*run)(Lowering&);
  std::string (*print)(const Lowering&);
  // run_passes runs this step right after it unless the next name asks for it: fuse_stages'
  // stages print scheduled, as the pipeline runs them
  const char* then = nullptr;
};

// The storage table of the current graph: the one place it is rebuilt, after a step changed
// the graph.
const StorageTable& table(Lowering& l) {
  if (l.table_stale) l.p.table = build_storage_table(l.p.graph);
  l.table_stale = false;
  return l.p.table;
}

// A graph step's result: the new graph replaces the old one where it differs.
Result replace_graph(Lowering& l, Graph g, const std::string& note) {
  if (g == l.p.graph) return {};
  l.p.graph = std::move(g);
  l.table_stale = true;
  return {true, note};
}

std::string lines(const char* title, const std::vector<std::string>& v) {
  std::string out = std::string("// ") + title + "\n";
  for (const std::string& r : v) out += r + "\n";
  return out;
}

std::string nothing(const Lowering&) { return ""; }
std::string stages_text(const Lowering& l) { return "// stages\n" + print_stages(l.p.graph, l.p.stages); }

Result verify(Lowering& l) {
  verify_graph(l.p.graph);
  return {};
}

Result storage_table(Lowering& l) {
  size_t accesses = 0;
  for (const auto& a : table(l).accesses) accesses += a.size();
  return {false, std::to_string(l.p.graph.storages.size()) + " storages, " + std::to_string(accesses) + " accesses"};
}

Result dependence_dag(Lowering& l) {
  l.p.dag = build_dependence_dag(l.p.graph, table(l), l.hints);
  return {false, std::to_string(l.p.dag.edges.size()) + " edges"};
}

Result dead_ops(Lowering& l) {
  const StorageTable& t = table(l);
  Graph live = eliminate_dead_ops(l.p.graph, t, build_dependence_dag(l.p.graph, t, false));
  const size_t removed = l.p.graph.ops.size() - live.ops.size();
  return replace_graph(l, std::move(live), "removed " + std::to_string(removed) + " ops");
}

Result sort_heads(Lowering& l) {
  Graph g = select_sort_heads(l.p.graph, table(l));
  int selected = 0;
  for (size_t i = 0; i < g.ops.size(); ++i) selected += g.ops[i].axes != l.p.graph.ops[i].axes;
  return replace_graph(l, std::move(g), std::to_string(selected) + " sorts selected");
}

Result narrow_step(Lowering& l) {
  std::vector<std::string> log;
  Graph g = narrow_casts(l.p.graph, table(l), &log);
  l.narrowed.insert(l.narrowed.end(), log.begin(), log.end());
  return replace_graph(l, std::move(g), std::to_string(log.size()) + " ops computed in float32");
}

Result in_place_step(Lowering& l) {
  std::vector<std::string> log;
  Graph g = compress_in_place(l.p.graph, table(l), &log);
  l.in_place.insert(l.in_place.end(), log.begin(), log.end());
  return replace_graph(l, std::move(g), std::to_string(log.size()) + " compresses in place");
}

Result carry_step(Lowering& l) {
  std::vector<std::string> log;
  Graph g = carry_gathers(l.p.graph, table(l), &log);
  l.carried.insert(l.carried.end(), log.begin(), log.end());
  return replace_graph(l, std::move(g), std::to_string(log.size()) + " gathers read carried values");
}

Result inline_step(Lowering& l) {
  std::vector<std::string> log;
  Graph g = inline_producers(l.p.graph, table(l), &log);
  l.recomputed.insert(l.recomputed.end(), log.begin(), log.end());
  return replace_graph(l, std::move(g), std::to_string(log.size()) + " producers recomputed");
}

Result buffer_step(Lowering& l) {
  std::vector<std::string> log;
  Graph g = buffer_overlapping_writes(l.p.graph, &log);
  l.buffered.insert(l.buffered.end(), log.begin(), log.end());
  return replace_graph(l, std::move(g), std::to_string(log.size()) + " ops write a temporary first");
}

Result fuse(Lowering& l) {
  l.p.stages = fuse_stages(l.p.graph, table(l), l.target);
  const size_t ops = l.p.graph.ops.size(), stages = l.p.stages.stages.size();
  return {stages < ops, std::to_string(ops) + " ops in " + std::to_string(stages) + " stages"};
}

// The user's schedule text for a stage index where given, else the default; then compute_at.
Result schedule(Lowering& l) {
  const Graph& g = l.p.graph;
  StageGraph& sg = l.p.stages;
  for (size_t i = 0; i < sg.stages.size(); ++i) {
    auto user = l.schedules.find(static_cast<int>(i));
    Stage& s = sg.stages[i];
    apply_schedule(g, s, user != l.schedules.end() ? parse_schedule(user->second) : default_schedule(g, s));
  }
  std::set<int> user;
  for (const auto& entry : l.schedules) user.insert(entry.first);
  default_compute_at(g, sg, user);
  compute_at_stages(g, sg);
  for (const auto& [index, text] : l.schedules)
    if (index < 0 || index >= static_cast<int>(sg.stages.size()))
      throw ScheduleError("schedule for stage " + std::to_string(index) + ": there are " +
                          std::to_string(sg.stages.size()) + " stages");
  bool changed = false;
  for (const Stage& s : sg.stages) changed = changed || !s.schedule.primitives.empty() || s.computed_in >= 0;
  return {changed, std::to_string(l.schedules.size()) + " of " + std::to_string(sg.stages.size()) +
                       " stages by the user's schedule, the rest by default"};
}

Result compile(Lowering& l) {
  if (!l.jit) {
    l.p.fallbacks.assign(l.p.stages.stages.size(), "the JIT is off");
    return {false, "the JIT is off"};
  }
  if (l.background) {
    compile_stages_in_background(l.p);
    return {true, "compiling in the background"};
  }
  compile_stages(l.p);
  return {l.p.compiled + l.p.disk_hits > 0,
          std::to_string(l.p.compiled) + " compiled, " + std::to_string(l.p.disk_hits) + " from the disk cache"};
}

std::string kernels_text(const Lowering& l) {
  l.p.settle();
  std::ostringstream os;
  os << "// kernels\n";
  for (size_t i = 0; i < l.p.stages.stages.size(); ++i) {
    const int in = l.p.stages.stages[i].computed_in;
    os << "stage " << i << ": ";
    if (in >= 0) os << "part of stage " << in << "\n";
    else if (i < l.p.kernels.size() && l.p.kernels[i]) os << "native code\n";
    else os << "reference executor: " << (i < l.p.fallbacks.size() ? l.p.fallbacks[i] : "not compiled") << "\n";
  }
  return os.str();
}

// Fused for a GPU and scheduled; each stage's CUDA C, or why the CUDA backend refuses it.
Result cuda(Lowering& l) {
  const Target target = l.target;
  l.target = Target::Cuda;
  fuse(l);
  l.target = target;
  schedule(l);
  l.cuda.clear();
  for (const Stage& s : l.p.stages.stages) {
    try {
      l.cuda.push_back(emit_cuda_stage(l.p.graph, s).source);
    } catch (const std::invalid_argument& e) {
      l.cuda.push_back(std::string("// refused: ") + e.what() + "\n");
    }
  }
  return {false, std::to_string(l.cuda.size()) + " stages"};
}

std::string cuda_text(const Lowering& l) {
  std::string out;
  for (size_t i = 0; i < l.cuda.size(); ++i) out += "// cuda stage " + std::to_string(i) + "\n" + l.cuda[i];
  return out;
}

// The whole pipeline, as one step of a text run.
Result whole(Lowering& l) {
  return replace_graph(l, lower(l.p.graph, l.schedules, true, l.target).graph, "lowered");
}

// Every step, by name: lower() runs them in its own order, run_passes in the order asked.
const std::vector<Step>& steps() {
  static const std::vector<Step> all = {
      {"verify_graph", verify, nothing},
      {"build_storage_table", storage_table,
       [](const Lowering& l) { return "// storage table\n" + print_storage_table(l.p.graph, l.p.table); }},
      {"build_dependence_dag", dependence_dag, [](const Lowering& l) { return "// dependence edges\n" + print_dag(l.p.dag); }},
      {"eliminate_dead_ops", dead_ops, nothing},
      {"select_sort_heads", sort_heads, nothing},
      {"narrow_casts", narrow_step, [](const Lowering& l) { return lines("narrowed", l.narrowed); }},
      {"compress_in_place", in_place_step, [](const Lowering& l) { return lines("in place", l.in_place); }},
      {"carry_gathers", carry_step, [](const Lowering& l) { return lines("carried", l.carried); }},
      {"inline_producers", inline_step, [](const Lowering& l) { return lines("recomputed", l.recomputed); }},
      {"buffer_overlapping_writes", buffer_step, [](const Lowering& l) { return lines("buffered", l.buffered); }},
      {"fuse_stages", fuse, stages_text, "schedule_stages"},
      {"schedule_stages", schedule, stages_text},
      {"compile_stages", compile, kernels_text},
      {"emit_cuda", cuda, cuda_text},
      {"lower", whole, nothing},
  };
  return all;
}

const Step& find_step(const std::string& name) {
  for (const Step& s : steps())
    if (name == s.name) return s;
  std::string known;
  for (const Step& s : steps()) known += std::string(known.empty() ? "" : ", ") + s.name;
  throw std::invalid_argument("unknown pass '" + name + "' (known: " + known + ")");
}

// Runs one step: logs its name, wall time and whether it changed anything (STRIDER_LOG=passes)
// and dumps the IR after it (STRIDER_DUMP_DIR). Returns whether it changed anything.
bool run(Lowering& l, const char* name) {
  const Step& s = find_step(name);
  const auto start = std::chrono::steady_clock::now();
  const Result r = s.run(l);
  const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start;
  char number[8];
  std::snprintf(number, sizeof number, "%02d", l.steps_run++);
  if (log_enabled("passes")) {
    char timing[64];
    std::snprintf(timing, sizeof timing, " %-26s %9.3f ms  ", s.name, ms.count());
    log_line("passes", l.p.graph.name + "." + number + timing + (r.changed ? "changed" : "unchanged") +
                           (r.note.empty() ? "" : ": " + r.note));
  }
  if (dumps_enabled())
    debug_dump_text(l.p.graph.name + "." + number + "." + s.name + ".ir", print_graph(l.p.graph) + s.print(l));
  return r.changed;
}

}  // namespace

std::vector<std::string> pass_names() {
  std::vector<std::string> names;
  for (const Step& s : steps()) names.push_back(s.name);
  return names;
}

std::shared_ptr<CudaProgram> cuda_program(std::shared_ptr<const Program> p, int ordinal) {
  const CudaBackend backend{
      [](const Graph& g, const Stage& s) { return emit_cuda_stage(g, s); },
      [](const Graph& g, const std::vector<const Stage*>& stages, const std::vector<const CudaStage*>& emitted,
         const std::string& arch, bool* from_disk) { return compile_cuda_group(g, stages, emitted, arch, from_disk); }};
  return std::make_shared<CudaProgram>(std::move(p), ordinal, backend);
}

namespace {

void run_pipeline(Lowering& l) {
  const Target target = l.target;
  run(l, "verify_graph");  // the graph as traced
  run(l, "build_storage_table");
  run(l, "eliminate_dead_ops");
  run(l, "select_sort_heads");  // after dead readers are gone
  if (run(l, "narrow_casts")) run(l, "eliminate_dead_ops");  // the float64 ops it replaced
  // a GPU's compress moves every row at once: in place, a row would overwrite one not yet moved
  if (target == Target::Cpu) {
    run(l, "compress_in_place");
    run(l, "carry_gathers");  // the compresses it mirrors are the in-place ones
  }
  if (run(l, "inline_producers")) run(l, "eliminate_dead_ops");  // the producers it copied
  if (target == Target::Cuda) run(l, "buffer_overlapping_writes");
  run(l, "build_dependence_dag");  // ordering edges only
  run(l, "verify_graph");
  run(l, "fuse_stages");
  run(l, "schedule_stages");
  link_regions(l.p);
  l.p.stages.recomputed = std::move(l.recomputed);
  l.p.stages.buffered = std::move(l.buffered);
  l.p.stages.in_place = std::move(l.in_place);
  l.p.stages.narrowed = std::move(l.narrowed);
  l.p.stages.carried = std::move(l.carried);
  run(l, "compile_stages");  // last: a background compile reads the program from here on
}

}  // namespace

Program lower(Graph g, const std::map<int, std::string>& schedules, bool jit, Target target) {
  Lowering l(std::move(g), schedules, target, jit);
  run_pipeline(l);
  return std::move(l.p);
}

std::shared_ptr<Program> lower_in_background(Graph g, const std::map<int, std::string>& schedules) {
  Lowering l(std::move(g), schedules, Target::Cpu, true);
  l.background = true;
  run_pipeline(l);
  return l.owner;
}

std::string run_passes(const std::string& ir_text, const std::vector<std::string>& passes,
                       const std::map<int, std::string>& schedules, Target target) {
  Lowering l(parse_graph(ir_text), schedules, target, true);
  l.hints = true;
  std::string sections;
  for (size_t i = 0; i < passes.size(); ++i) {
    const Step& s = find_step(passes[i]);
    run(l, s.name);
    if (s.then && (i + 1 == passes.size() || passes[i + 1] != s.then)) run(l, s.then);
    sections += s.print(l);
  }
  return print_graph(l.p.graph) + sections;
}

}  // namespace strider
