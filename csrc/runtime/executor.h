#pragma once

#include <vector>

#include "runtime/program.h"

namespace strider {

/// Runs a lowered program over raw memory: stage by stage, a stage's native kernel where it has
/// one, else its ops one at a time with NumPy's semantics for every op (the reference executor,
/// the semantic oracle the compiled backends are tested against).
///
/// `buffers[s]` is the base address of storage s: required for Arg storages, optional for Temp
/// storages (the executor allocates the ones left null, except registers of compiled stages),
/// ignored for Const storages. `latest_first` runs every op on the reference executor in the
/// other extreme legal order of the DAG (tests use it to check the DAG's edges).
void execute(const Program& p, const std::vector<void*>& buffers, bool latest_first = false);

/// Where each unit of a run (a stage, or an op) whose op is a control op (ops.def) sends the
/// run, given that op per unit (null for the others): loop_while and branch_if where their bool
/// is false, loop_end and branch_else always; -1 for the other units. Throws std::logic_error
/// where the regions do not nest (verify_graph says which).
std::vector<int> region_jumps(const std::vector<const Op*>& control);

/// Runs the ops `op_ids`, in that order, on the reference executor. `buffers[s]` is required for
/// every non-Const storage they touch; the others are never read (null is fine).
void execute_ops(const Program& p, const std::vector<int>& op_ids, const std::vector<void*>& buffers);

}  // namespace strider
