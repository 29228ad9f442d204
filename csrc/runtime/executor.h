#pragma once

#include <vector>

#include "transforms/passes.h"

namespace strider {

/// The reference executor: runs a lowered program's ops one at a time over raw memory, in a
/// topological order of its DAG, with NumPy's semantics for every op. It is the semantic oracle
/// the compiled backends are tested against.
///
/// `buffers[s]` is the base address of storage s: required for Arg storages, optional for Temp
/// storages (the executor allocates the ones left null), ignored for Const storages.
/// `latest_first` picks the other extreme legal order (tests use it to check the DAG's edges).
void execute(const Program& p, const std::vector<void*>& buffers, bool latest_first = false);

}  // namespace strider
