#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/cuda_executor.h"
#include "runtime/kernel_cache.h"
#include "runtime/program.h"
#include "transforms/passes.h"

// The top of the compiler: the pipeline that lowers a traced graph into a Program, compiling its
// stages with the backends, and the text driver of its steps.
namespace strider {

/// Compiles every stage to native code where the backend can (LLVM), or loads it from the disk
/// cache (runtime/kernel_cache.h); records why not elsewhere, and counts compiles and disk hits.
void compile_stages(Program& p);
/// compile_stages on background threads (runtime/background_compile.h): returns at once, with
/// p.background set; p must not move until that compile is done or p is destroyed. A stage runs
/// on the reference executor until its kernel is ready, unless the reference would compute it
/// otherwise (float transcendentals, float sums and products: within ulps, codegen/llvm/codegen.h)
/// or it has more element-ops than the reference runs in microseconds: it waits for its kernel,
/// a quick one first where the reference computes it alike (Effort::kQuick, p.quick_kernels) and
/// `cache` has no entry for its group.
void compile_stages_in_background(Program& p, DiskCache* cache = DiskCache::process());

/// THE pipeline (driver/lower.cc), one step a line: verify_graph, build_storage_table,
/// eliminate_dead_ops, inline_producers (eliminate_dead_ops again when it copied any),
/// buffer_overlapping_writes (Target::Cuda), build_dependence_dag, verify_graph, fuse_stages,
/// schedule_stages (the user's schedule text for a stage index where given, else the default),
/// compile_stages. Each step is logged with its time and whether it changed anything
/// (STRIDER_LOG=passes), and the IR after it is dumped to
/// STRIDER_DUMP_DIR/<graph>.<NN>.<step>.ir, numbered in run order.
/// `jit` false leaves every stage to the reference executor. Target::Cuda stages are fused for a
/// GPU and left for cuda_program to compile.
Program lower(Graph g, const std::map<int, std::string>& schedules = {}, bool jit = true, Target target = Target::Cpu);
/// lower() for the host, its stages compiling in the background (compile_stages_in_background):
/// what a traced function's first call runs while LLVM works.
std::shared_ptr<Program> lower_in_background(Graph g, const std::map<int, std::string>& schedules = {});

/// A Target::Cuda program's stages compiled by the CUDA backend (NVRTC, cubins cached on disk)
/// for device `ordinal` and loaded there; see CudaProgram.
std::shared_ptr<CudaProgram> cuda_program(std::shared_ptr<const Program> p, int ordinal);

/// The names of the steps lower() runs, and of emit_cuda (fused for a GPU; each stage's CUDA C,
/// or why the CUDA backend refuses it) and lower (the whole pipeline), which only run_passes runs.
std::vector<std::string> pass_names();

/// Runs the named steps in order on IR text and prints the resulting graph, followed by what
/// each step printed (its storage table, edges, stages, ...): the text tests and the
/// strider-opt tool use this. fuse_stages is followed by schedule_stages unless that is the
/// next name, so that stages print scheduled. An unknown name throws, listing the known ones.
std::string run_passes(const std::string& ir_text, const std::vector<std::string>& passes,
                       const std::map<int, std::string>& schedules = {}, Target target = Target::Cpu);

}  // namespace strider
