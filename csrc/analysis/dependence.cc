#include "analysis/dependence.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <set>
#include <sstream>
#include <tuple>

#include "analysis/overlap.h"

namespace strider {

const char* dep_name(DepKind k) {
  switch (k) {
    case DepKind::RAW: return "RAW";
    case DepKind::WAR: return "WAR";
    case DepKind::WAW: return "WAW";
    case DepKind::RAR: break;
  }
  return "RAR";
}

Dag build_dependence_dag(const Graph& g, const StorageTable& t, bool hints) {
  Dag d;
  d.num_ops = static_cast<int>(g.ops.size());
  std::set<std::tuple<int, int, int>> seen;  // (src, dst, kind): one edge per kind and pair
  for (size_t s = 0; s < t.accesses.size(); ++s) {
    const std::vector<Access>& acc = t.accesses[s];
    // a region's boundary reads and writes the whole storage: what comes after it is ordered
    // after what came before through it, and needs no edge of its own (an unrolled loop of
    // branches would otherwise make the edges quadratic)
    size_t from = 0;
    // each access's first and last element (last < first: none), so that most pairs of a list of
    // thousands of traced numbers joined into one array cost two compares
    std::vector<std::pair<int64_t, int64_t>> span(acc.size());
    for (size_t k = 0; k < acc.size(); ++k)
      span[k] = acc[k].view.numel() == 0 ? std::pair<int64_t, int64_t>{0, -1}
                                         : std::pair<int64_t, int64_t>{acc[k].view.min_offset(), acc[k].view.max_offset()};
    for (size_t j = 0; j < acc.size(); ++j) {
      const Access& later = acc[j];
      if (later.op >= d.num_ops) continue;  // the return orders nothing
      for (size_t i = from; i < j; ++i) {
        const Access& earlier = acc[i];
        if (earlier.op == later.op || (!hints && !earlier.write && !later.write)) continue;
        if (span[i].second < span[j].first || span[j].second < span[i].first) continue;
        DepKind kind = earlier.write ? (later.write ? DepKind::WAW : DepKind::RAW)
                                     : (later.write ? DepKind::WAR : DepKind::RAR);
        const std::tuple<int, int, int> key{earlier.op, later.op, static_cast<int>(kind)};
        if (seen.count(key) || !footprints_overlap(earlier.view, later.view).overlap) continue;
        seen.insert(key);
        d.edges.push_back({earlier.op, later.op, kind, static_cast<int>(s)});
      }
      if (later.write && carries(g.ops[later.op].code)) from = j > 0 && acc[j - 1].op == later.op ? j - 1 : j;
    }
  }
  // NumPy raises where an index is out of range after the lines before it ran and before the
  // lines after it: a check comes after every earlier write into the caller's arrays and before
  // every later one (as if it read all they write)
  for (int c = 0; c < d.num_ops; ++c) {
    if (op_kind(g.ops[c].code) != OpKind::Check) continue;
    for (int w = 0; w < d.num_ops; ++w) {
      const int s = g.ops[w].output.storage;
      if (w == c || g.storages[s].kind != StorageKind::Arg) continue;
      const DepEdge e = w < c ? DepEdge{w, c, DepKind::RAW, s} : DepEdge{c, w, DepKind::WAR, s};
      if (seen.insert({e.src, e.dst, static_cast<int>(e.kind)}).second) d.edges.push_back(e);
    }
  }
  std::sort(d.edges.begin(), d.edges.end(), [](const DepEdge& a, const DepEdge& b) {
    return std::tie(a.src, a.dst, a.kind) < std::tie(b.src, b.dst, b.kind);
  });
  return d;
}

std::vector<int> Dag::topological_order(bool latest_first) const {
  std::vector<std::vector<int>> succ(num_ops);
  std::vector<int> indegree(num_ops, 0);
  for (const DepEdge& e : edges) {
    if (e.kind == DepKind::RAR) continue;
    succ[e.src].push_back(e.dst);
    ++indegree[e.dst];
  }
  std::priority_queue<int, std::vector<int>, std::function<bool(int, int)>> ready(
      [latest_first](int a, int b) { return latest_first ? a < b : a > b; });
  for (int i = 0; i < num_ops; ++i)
    if (indegree[i] == 0) ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    int op = ready.top();
    ready.pop();
    order.push_back(op);
    for (int n : succ[op])
      if (--indegree[n] == 0) ready.push(n);
  }
  return order;
}

std::string print_dag(const Dag& d) {
  std::ostringstream os;
  for (const DepEdge& e : d.edges)
    os << "op" << e.src << " -> op" << e.dst << " " << dep_name(e.kind) << " %s" << e.storage << "\n";
  return os.str();
}

}  // namespace strider
