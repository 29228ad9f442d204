#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/dependence.h"
#include "transforms/passes.h"

namespace strider {
namespace {

bool has(const Dag& d, int src, int dst, DepKind k) {
  return std::any_of(d.edges.begin(), d.edges.end(),
                     [&](const DepEdge& e) { return e.src == src && e.dst == dst && e.kind == k; });
}

Dag dag_of(const std::string& text) {
  Graph g = parse_graph(text);
  return build_dependence_dag(g, build_storage_table(g));
}

TEST(Dependence, OverlappingAssignment) {
  // x[1:] = x[:-1] + 1
  Dag d = dag_of(R"(graph @f {
    %s0 = storage f32[10] arg 0
    %s1 = storage f32[1] const 0x0000803f
    %s2 = storage f32[9] temp
    op0 = add(%s0[9]{1}+0, %s1[9]{0}+0) -> %s2[9]{1}+0
    op1 = copy(%s2[9]{1}+0) -> %s0[9]{1}+1
    return
  })");
  EXPECT_TRUE(has(d, 0, 1, DepKind::RAW));
  EXPECT_TRUE(has(d, 0, 1, DepKind::WAR));
}

TEST(Dependence, InterleavedWritesAreUnordered) {
  // x[:, 0::2] = a; x[:, 1::2] = b; then a read of all of x
  Dag d = dag_of(R"(graph @f {
    %s0 = storage f32[24] arg 0
    %s1 = storage f32[1] const 0x00000000
    op0 = copy(%s1[4,3]{0,0}+0) -> %s0[4,3]{6,2}+0
    op1 = copy(%s1[4,3]{0,0}+0) -> %s0[4,3]{6,2}+1
    op2 = copy(%s0[24]{1}+0) -> %s0[24]{1}+0
    return
  })");
  EXPECT_FALSE(has(d, 0, 1, DepKind::WAW));
  EXPECT_TRUE(has(d, 0, 2, DepKind::RAW));
  EXPECT_TRUE(has(d, 1, 2, DepKind::RAW));
  EXPECT_TRUE(has(d, 0, 1, DepKind::RAR));  // both read the constant
}

TEST(Dependence, TopologicalOrdersRespectEdges) {
  Graph g = parse_graph(R"(graph @f {
    %s0 = storage f32[10] arg 0
    %s1 = storage f32[10] temp
    %s2 = storage f32[10] temp
    op0 = exp(%s0[10]{1}+0) -> %s1[10]{1}+0
    op1 = log(%s0[10]{1}+0) -> %s2[10]{1}+0
    op2 = copy(%s1[10]{1}+0) -> %s0[10]{1}+0
    return %s2[10]{1}+0
  })");
  Dag d = build_dependence_dag(g, build_storage_table(g));
  for (bool latest : {false, true}) {
    std::vector<int> order = d.topological_order(latest);
    ASSERT_EQ(order.size(), 3u);
    auto pos = [&](int op) { return std::find(order.begin(), order.end(), op) - order.begin(); };
    for (const DepEdge& e : d.edges)
      if (e.kind != DepKind::RAR) EXPECT_LT(pos(e.src), pos(e.dst));
  }
  EXPECT_EQ(d.topological_order(true).front(), 1);  // the other extreme order starts with the log
}

TEST(EliminateDeadOps, DropsUnobservedTemporaries) {
  Graph g = parse_graph(R"(graph @f {
    %s0 = storage f32[10] arg 0
    %s1 = storage f32[10] temp
    %s2 = storage f32[10] temp
    op0 = exp(%s0[10]{1}+0) -> %s1[10]{1}+0
    op1 = log(%s0[10]{1}+0) -> %s2[10]{1}+0
    return %s2[10]{1}+0
  })");
  StorageTable t = build_storage_table(g);
  Graph out = eliminate_dead_ops(g, t, build_dependence_dag(g, t));
  ASSERT_EQ(out.ops.size(), 1u);
  EXPECT_EQ(out.ops[0].code, OpCode::log);
  EXPECT_EQ(out.storages.size(), 2u);
  EXPECT_EQ(out.outputs[0].storage, 1);
  // nothing dead: the input comes back unchanged
  StorageTable t2 = build_storage_table(out);
  EXPECT_EQ(eliminate_dead_ops(out, t2, build_dependence_dag(out, t2)), out);
}

}  // namespace
}  // namespace strider

namespace strider {
namespace {

TEST(Dependence, ReadingARunTimeExtentOrdersAfterItsWriter) {
  Dag d = dag_of(R"(graph @f {
    %s0 = storage f32[8] arg 0
    %s1 = storage i64[1] temp
    %s2 = storage f32[8] temp
    %s3 = storage i64[1] const 0x0300000000000000
    op0 = copy(%s3[]{}+0) -> %s1[]{}+0
    op1 = exp(%s0[?%s1<=8]{1}+0) -> %s2[?%s1<=8]{1}+0
    return %s2[?%s1<=8]{1}+0
  })");
  EXPECT_TRUE(has(d, 0, 1, DepKind::RAW));
}

}  // namespace
}  // namespace strider
