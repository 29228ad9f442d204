#include <cctype>
#include <stdexcept>
#include <string>

#include "ir/graph.h"

namespace strider {

namespace {

// A cursor over the text form; every error names the line it stopped on.
class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Graph parse() {
    Graph g;
    expect("graph");
    expect("@");
    g.name = peek("\"") ? quoted() : word();
    expect("{");
    while (true) {
      skip_space();
      if (peek("%s")) {
        parse_storage(g);
      } else if (peek("op")) {
        parse_op_line(g);
      } else {
        break;
      }
    }
    expect("return");
    skip_space_inline();
    if (peek("%s")) {
      g.outputs.push_back(view());
      while (accept(",")) g.outputs.push_back(view());
    }
    expect("}");
    skip_space();
    if (pos_ != s_.size()) fail("trailing text after the graph");
    return g;
  }

 private:
  void parse_storage(Graph& g) {
    expect("%s");
    if (integer() != static_cast<int64_t>(g.storages.size())) fail("storages must be numbered in order");
    expect("=");
    expect("storage");
    Storage st;
    st.dtype = parse_dtype(word());
    expect("[");
    st.size = integer();
    expect("]");
    std::string kind = word();
    if (kind == "arg") {
      st.kind = StorageKind::Arg;
      st.arg = static_cast<int>(integer());
    } else if (kind == "temp") {
      st.kind = StorageKind::Temp;
    } else if (kind == "const") {
      st.kind = StorageKind::Const;
      expect("0x");
      while (pos_ + 1 < s_.size() && std::isxdigit(s_[pos_]) && std::isxdigit(s_[pos_ + 1])) {
        st.data.push_back(static_cast<uint8_t>(std::stoi(s_.substr(pos_, 2), nullptr, 16)));
        pos_ += 2;
      }
    } else {
      fail("unknown storage kind '" + kind + "'");
    }
    g.storages.push_back(std::move(st));
  }

  void parse_op_line(Graph& g) {
    expect("op");
    if (integer() != static_cast<int64_t>(g.ops.size())) fail("ops must be numbered in order");
    expect("=");
    Op op;
    try {
      op.code = parse_op(word());
    } catch (const std::invalid_argument& e) {
      fail(e.what());
    }
    expect("(");
    if (!accept(")")) {
      op.inputs.push_back(view());
      while (accept(",")) op.inputs.push_back(view());
      expect(")");
    }
    if (accept("axes")) {
      expect("=");
      expect("[");
      if (!accept("]")) {
        do op.axes.push_back(static_cast<int>(integer()));
        while (accept(","));
        expect("]");
      }
    }
    expect("->");
    op.output = view();
    skip_space_inline();
    if (accept("@")) {
      op.file = quoted();
      expect(":");
      op.line = static_cast<int>(integer());
    }
    g.ops.push_back(std::move(op));
  }

  View view() {
    View v;
    expect("%s");
    v.storage = static_cast<int>(integer());
    expect("[");
    if (!accept("]")) {
      do {
        int extent = -1;
        if (accept("?%s")) {
          extent = static_cast<int>(integer());
          expect("<=");
        }
        if (extent >= 0 || v.is_dynamic()) {
          v.extents.resize(v.shape.size(), -1);
          v.extents.push_back(extent);
        }
        v.shape.push_back(integer());
      } while (accept(","));
      expect("]");
    }
    expect("{");
    v.strides = ints("}");
    expect("+");
    v.offset = integer();
    if (v.shape.size() != v.strides.size()) fail("a view needs one stride per dimension");
    return v;
  }

  Shape ints(const char* close) {
    Shape out;
    if (accept(close)) return out;
    do out.push_back(integer());
    while (accept(","));
    expect(close);
    return out;
  }

  int64_t integer() {
    skip_space();
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (start == pos_ || (pos_ == start + 1 && s_[start] == '-')) fail("expected an integer");
    return std::stoll(s_.substr(start, pos_ - start));
  }

  // "text" with \" and \\ escaped, as the printer writes file names and names that are not words
  std::string quoted() {
    expect("\"");
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      if (s_[pos_] == '\\') ++pos_;
      if (pos_ < s_.size()) out += s_[pos_++];
    }
    expect("\"");
    return out;
  }

  std::string word() {
    skip_space();
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    if (start == pos_) fail("expected a name");
    return s_.substr(start, pos_ - start);
  }

  bool peek(const char* tok) {
    skip_space();
    return s_.compare(pos_, std::char_traits<char>::length(tok), tok) == 0;
  }
  bool accept(const char* tok) {
    if (!peek(tok)) return false;
    pos_ += std::char_traits<char>::length(tok);
    return true;
  }
  void expect(const char* tok) {
    if (!accept(tok)) fail(std::string("expected '") + tok + "'");
  }

  void skip_space() {
    while (pos_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[pos_]))) {
        ++pos_;
      } else if (s_.compare(pos_, 2, "//") == 0) {  // comments, as in lit test files
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  void skip_space_inline() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }

  [[noreturn]] void fail(const std::string& what) {
    int line = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) line += s_[i] == '\n';
    throw std::invalid_argument("IR parse error at line " + std::to_string(line) + ": " + what);
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

Graph parse_graph(const std::string& text) { return Parser(text).parse(); }

}  // namespace strider
