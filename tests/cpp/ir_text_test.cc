#include <gtest/gtest.h>

#include "ir/graph.h"

namespace strider {
namespace {

const char* kText = R"(graph @delta2bbox {
  %s0 = storage f32[400] arg 0
  %s1 = storage f32[1] const 0x0000803f
  %s2 = storage f32[100] temp
  %s3 = storage i64[10] temp
  op0 = multiply(%s0[100]{4}+2, %s1[100]{0}+0) -> %s2[100]{1}+0 @"heads.py":12
  op1 = copy(%s2[100]{1}+0) -> %s0[100]{-4}+396 @"dir/with \"quote\".py":13
  op2 = argmax(%s2[10,10]{10,1}+0) axes=[1] -> %s3[10]{1}+0
  return %s3[10]{1}+0, %s0[100,4]{4,1}+0
}
)";

TEST(IrText, PrintParseRoundTrip) {
  Graph g = parse_graph(kText);
  EXPECT_EQ(print_graph(g), kText);
  EXPECT_EQ(parse_graph(print_graph(g)), g);
  EXPECT_EQ(g.ops[1].file, "dir/with \"quote\".py");
  EXPECT_EQ(g.ops[2].axes, (std::vector<int>{1}));
  verify_graph(g);
}

// Python's names and file names are not words: <lambda>, Head.decode, <string>, quotes
TEST(IrText, NamesThatAreNotWordsRoundTrip) {
  for (const char* name : {"<lambda>", "Head.decode", "a\"b\\c", ""}) {
    Graph g = parse_graph(kText);
    g.name = name;
    g.ops[0].file = "<string>";
    g.ops[2].file = "no line";
    verify_text_roundtrip(g);
  }
}

// the check fails on a graph its text cannot express (a temporary that claims an argument slot)
TEST(IrText, RoundTripCheckNamesTheMismatch) {
  Graph g = parse_graph(kText);
  g.storages[2].arg = 3;
  try {
    verify_text_roundtrip(g);
    FAIL() << "expected a round-trip mismatch";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("parses back to another graph"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("graph @delta2bbox {"), std::string::npos);
  }
}

TEST(IrText, ParseErrorsNameTheLine) {
  try {
    parse_graph("graph @f {\n  %s0 = storage f33[4] arg 0\n  return\n}\n");
    FAIL() << "expected a parse error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("f33"), std::string::npos);
  }
  EXPECT_THROW(parse_graph("graph @f {\n  op0 = frobnicate() -> %s0[]{}+0\n  return\n}"), std::invalid_argument);
}

TEST(Verifier, RejectsViewsOutsideTheirStorage) {
  Graph g = parse_graph(R"(graph @f {
    %s0 = storage f32[10] arg 0
    %s1 = storage f32[10] temp
    op0 = exp(%s0[10]{2}+0) -> %s1[10]{1}+0
    return
  })");
  EXPECT_THROW(verify_graph(g), std::logic_error);
}

TEST(Verifier, RejectsWritesIntoConstants) {
  Graph g = parse_graph(R"(graph @f {
    %s0 = storage f32[1] const 0x00000000
    %s1 = storage f32[1] temp
    op0 = copy(%s1[]{}+0) -> %s0[]{}+0
    return
  })");
  EXPECT_THROW(verify_graph(g), std::logic_error);
}

}  // namespace
}  // namespace strider
