#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "transforms/passes.h"

namespace strider {

namespace {

View retarget(View v, int storage) {
  v.storage = storage;
  return v;
}

// The loop_end closing the loop that `begin` opens (the same region number in axes).
int loop_end_of(const Graph& g, int begin) {
  for (int k = begin + 1; k < static_cast<int>(g.ops.size()); ++k)
    if (g.ops[k].code == OpCode::loop_end && g.ops[k].axes == g.ops[begin].axes) return k;
  return -1;
}

// Whether `op` gathers single elements in the graph's form: a 1-d source at 0-d or 1-d indices
// (not the take fuse_stages writes over its output's domain).
bool element_take(const Op& op) {
  return op.code == OpCode::take && op.axes.empty() && op.inputs[0].ndim() == 1 && op.inputs[1].ndim() <= 1;
}

// A temporary for `size` values of `source`'s dtype.
int values_of(Graph& out, const View& source, int64_t size) {
  Storage st;
  st.dtype = out.storages[source.storage].dtype;
  st.size = size;
  return out.add_storage(st);
}

// A gathered view and the takes of it the rewrite replaces.
struct Gathered {
  View source;
  std::vector<int> takes;
};

// One carried index array of a loop and what the rewrite adds for it.
struct Carried {
  int index = -1;     // the index array's storage
  int init = -1;      // its one write before the loop
  std::vector<int> compresses;     // its in-place compresses in the loop
  std::vector<Gathered> gathered;  // by distinct gathered view
};

// The index array carried by loop [b, e) at view `carried`, if the rewrite applies to it: written
// once before the loop (densely from its start: every element the loop reads), and in the loop only
// by compresses of itself in place, in the loop's own region.
std::optional<Carried> carried_index(const Graph& g, const StorageTable& t, int b, int e, const View& carried) {
  Carried c;
  c.index = carried.storage;
  if (g.storages[c.index].dtype != DType::Int64 || g.storages[c.index].kind != StorageKind::Temp) return std::nullopt;
  for (const Access& a : t.accesses[c.index]) {
    if (!a.write || a.op == b || a.op == e) continue;
    const Op& op = g.ops[a.op];
    if (a.op < b && c.init < 0 && !carries(op.code)) c.init = a.op;
    else if (a.op > b && a.op < e && op.code == OpCode::compress && op.inputs[1].storage == c.index) c.compresses.push_back(a.op);
    else return std::nullopt;
  }
  if (c.init < 0 || c.compresses.empty()) return std::nullopt;
  const View& w = g.ops[c.init].output;
  if (w.ndim() != 1 || w.strides[0] != 1 || w.offset != 0) return std::nullopt;
  // the write runs whenever the loop begins (no region opens or closes between them), and no
  // region inside the loop carries the array
  for (int k = c.init + 1; k < b; ++k)
    if (is_control(g.ops[k].code)) return std::nullopt;
  for (int k = b + 1; k < e; ++k)
    if (carries(g.ops[k].code))
      for (const View& v : g.ops[k].inputs)
        if (v.storage == c.index) return std::nullopt;
  return c;
}

// The one op that writes `storage`, or -1.
int only_writer(const StorageTable& t, int storage) {
  int found = -1;
  for (const Access& a : t.accesses[storage]) {
    if (!a.write) continue;
    if (found >= 0 && found != a.op) return -1;
    found = a.op;
  }
  return found;
}

// Whether the loop [b, e) leaves `v` as it was when it began: its storage and its run-time
// extents.
bool invariant(const StorageTable& t, const View& v, int b, int e) {
  if (written_between(t, v.storage, b, e + 1)) return false;
  for (int x : v.extents)
    if (x >= 0 && written_between(t, x, b, e + 1)) return false;
  return true;
}

}  // namespace

Graph carry_gathers(const Graph& g, const StorageTable& t, std::vector<std::string>* log) {
  const int n = static_cast<int>(g.ops.size());
  std::vector<std::vector<Op>> before(n), after(n);  // ops inserted around op k
  std::map<int, Op> replaced;
  Graph out = g;
  for (int b = 0; b < n; ++b) {
    if (g.ops[b].code != OpCode::loop_begin) continue;
    const int e = loop_end_of(g, b);
    if (e < 0) continue;
    for (const View& carried : g.ops[b].inputs) {
      std::optional<Carried> c = carried_index(g, t, b, e, carried);
      if (!c) continue;
      for (int k = b + 1; k < e; ++k) {
        const Op& op = g.ops[k];
        if (!element_take(op) || op.inputs[1].storage != c->index || replaced.count(k)) continue;
        // the gathered values must stay what they were when the loop began
        const View& source = op.inputs[0];
        if (source.storage == c->index || written_between(t, source.storage, c->init, e + 1)) continue;
        auto it = std::find_if(c->gathered.begin(), c->gathered.end(), [&](const Gathered& x) { return x.source == source; });
        if (it == c->gathered.end()) it = c->gathered.insert(it, Gathered{source, {}});
        it->takes.push_back(k);
      }
      const View& init = g.ops[c->init].output;
      for (const auto& [source, takes] : c->gathered) {
        const int held = values_of(out, source, g.storages[c->index].size);
        // the gathered values, before the loop: compressed with the indices every trip, so that
        // the loop's gathers become reads of them
        before[b].push_back(Op{OpCode::take, {source, init}, retarget(init, held), {}, g.ops[b].file, g.ops[b].line});
        for (int k : takes) {
          const Op& take = g.ops[k];
          replaced[k] = Op{OpCode::copy, {retarget(take.inputs[1], held)}, take.output, {}, take.file, take.line};
          if (log)
            log->push_back(describe_op(g, k) + " reads %s" + std::to_string(held) + ", the values of %s" +
                           std::to_string(source.storage) + " at %s" + std::to_string(c->index) + " the loop carries");
        }
        for (int k : c->compresses) {
          const Op& op = g.ops[k];
          after[k].push_back(Op{OpCode::compress, {op.inputs[0], retarget(op.inputs[1], held)}, retarget(op.output, held),
                                {}, op.file, op.line});
        }
        out.ops[b].inputs.push_back(retarget(carried, held));
        out.ops[e].inputs.push_back(retarget(carried, held));
      }
    }
    // a gather at positions of an index array the loop does not write (greedy NMS's
    // x1[order[i + 1:]], a take of x1 through a take of order): the values at every position,
    // taken once before the loop, are read at the positions instead
    struct Taken {
      View source, index, values;
    };
    std::vector<Taken> taken;
    for (int k = b + 1; k < e; ++k) {
      const Op& op = g.ops[k];
      if (!element_take(op) || op.inputs[1].ndim() != 1 || replaced.count(k)) continue;
      const int inner = only_writer(t, op.inputs[1].storage);
      if (inner <= b || inner >= k) continue;
      const Op& at = g.ops[inner];
      if (!element_take(at) || !(at.output == op.inputs[1]) || at.inputs[1].ndim() != 1 ||
          !invariant(t, at.inputs[0], b, e) || !invariant(t, op.inputs[0], b, e))
        continue;
      // the two run together, the positions unchanged between them
      bool apart = written_between(t, at.inputs[1].storage, inner, k);
      for (int j = inner + 1; j < k; ++j) apart = apart || is_control(g.ops[j].code);
      if (apart) continue;
      const View &source = op.inputs[0], &index = at.inputs[0];
      auto it = std::find_if(taken.begin(), taken.end(), [&](const Taken& x) { return x.source == source && x.index == index; });
      if (it == taken.end()) {
        const View values{values_of(out, source, index.shape[0]), index.shape, {1}, 0, index.extents};
        before[b].push_back(Op{OpCode::take, {source, index}, values, {}, g.ops[b].file, g.ops[b].line});
        it = taken.insert(it, Taken{source, index, values});
      }
      const View& values = it->values;
      replaced[k] = Op{OpCode::take, {values, at.inputs[1]}, op.output, {}, op.file, op.line};
      if (log)
        log->push_back(describe_op(g, k) + " reads %s" + std::to_string(values.storage) + ", the values of %s" +
                       std::to_string(source.storage) + " at %s" + std::to_string(index.storage) +
                       " taken before the loop, at the positions " + describe_op(g, inner) + " reads");
    }
  }
  if (replaced.empty()) return g;
  std::vector<Op> ops;
  for (int k = 0; k < n; ++k) {
    ops.insert(ops.end(), before[k].begin(), before[k].end());
    auto r = replaced.find(k);
    ops.push_back(r != replaced.end() ? r->second : out.ops[k]);
    ops.insert(ops.end(), after[k].begin(), after[k].end());
  }
  out.ops = std::move(ops);
  return out;
}

}  // namespace strider
