#pragma once

#include <vector>

#include "transforms/passes.h"

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

}  // namespace strider
