#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace strider {

/// One access of an op (or of the graph's return, op == number of ops) to a storage.
struct Access {
  int op = 0;
  View view;
  bool write = false;
};

/// DESIGN.md's per-storage data-dependency table: for each storage, its accesses in program
/// order (an op's reads come before its write).
struct StorageTable {
  std::vector<std::vector<Access>> accesses;  // indexed by storage
};

StorageTable build_storage_table(const Graph& g);
/// Whether an op strictly between ops `after` and `before` writes `storage`.
bool written_between(const StorageTable& t, int storage, int after, int before);

/// Per storage: the op writing it when it is a temporary written exactly once (else -1), and
/// how many accesses read it.
struct SingleWriters {
  std::vector<int> writer;
  std::vector<int> reads;
};
SingleWriters single_writers(const Graph& g, const StorageTable& t);
std::string print_storage_table(const Graph& g, const StorageTable& t);

}  // namespace strider
