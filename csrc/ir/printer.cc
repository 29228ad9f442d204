#include <cctype>
#include <cstdio>
#include <sstream>

#include "ir/graph.h"

namespace strider {

const char* storage_kind_name(StorageKind k) {
  switch (k) {
    case StorageKind::Arg: return "arg";
    case StorageKind::Const: return "const";
    case StorageKind::Temp: break;
  }
  return "temp";
}

namespace {
void print_ints(std::ostream& os, const Shape& v) {
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
}

void print_quoted(std::ostream& os, const std::string& text) {
  os << '"';
  for (char c : text) os << (c == '"' || c == '\\' ? "\\" : "") << c;
  os << '"';
}

// A graph's name is Python's (`<lambda>`, `Head.decode`): quoted unless it is a plain word.
void print_name(std::ostream& os, const std::string& name) {
  bool word = !name.empty();
  for (char c : name) word = word && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (word) os << name;
  else print_quoted(os, name);
}

}  // namespace

std::string print_view(const View& v) {
  std::ostringstream os;
  os << "%s" << v.storage << "[";
  for (int d = 0; d < v.ndim(); ++d) {
    os << (d ? "," : "");
    if (v.extent_of(d) >= 0) os << "?%s" << v.extent_of(d) << "<=";  // run-time extent, static bound
    os << v.shape[d];
  }
  os << "]{";
  print_ints(os, v.strides);
  os << "}+" << v.offset;
  return os.str();
}

std::string print_graph(const Graph& g) {
  std::ostringstream os;
  os << "graph @";
  print_name(os, g.name);
  os << " {\n";
  for (size_t i = 0; i < g.storages.size(); ++i) {
    const Storage& s = g.storages[i];
    os << "  %s" << i << " = storage " << dtype_name(s.dtype) << "[" << s.size << "] "
       << storage_kind_name(s.kind);
    if (s.kind == StorageKind::Arg) os << " " << s.arg;
    if (s.kind == StorageKind::Const) {
      os << " 0x";
      char hex[3];
      for (uint8_t b : s.data) {
        std::snprintf(hex, sizeof hex, "%02x", b);
        os << hex;
      }
    }
    os << "\n";
  }
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    os << "  op" << i << " = " << op_name(op.code) << "(";
    for (size_t k = 0; k < op.inputs.size(); ++k) os << (k ? ", " : "") << print_view(op.inputs[k]);
    os << ")";
    if (!op.axes.empty()) {
      os << " axes=[";
      for (size_t k = 0; k < op.axes.size(); ++k) os << (k ? "," : "") << op.axes[k];
      os << "]";
    }
    os << " -> " << print_view(op.output);
    if (op.line != 0 || !op.file.empty()) {
      os << " @";
      print_quoted(os, op.file);
      os << ":" << op.line;
    }
    os << "\n";
  }
  os << "  return";
  for (size_t k = 0; k < g.outputs.size(); ++k) os << (k ? ", " : " ") << print_view(g.outputs[k]);
  os << "\n}\n";
  return os.str();
}

}  // namespace strider
