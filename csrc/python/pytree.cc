// Encoding and decoding of pytree structure (pytree.h).
#include "pytree.h"

#include <cstring>
#include <stdexcept>

namespace strider::python {

namespace {

int64_t take_count(const char*& code) {
  int64_t n;
  std::memcpy(&n, code, sizeof n);
  code += sizeof n;
  return n;
}

}  // namespace

py::object build_tree(const char*& code, const py::object*& object, const py::object*& leaf) {
  const Node node = static_cast<Node>(*code++);
  switch (node) {
    case Node::Leaf: return *leaf++;
    case Node::Items: return py::list(*leaf++);
    case Node::Numbers: return (*leaf++).attr("tolist")();
    case Node::Rows: {
      const py::tuple types = (*object++).cast<py::tuple>();
      const bool tuples = types[0].ptr() == reinterpret_cast<PyObject*>(&PyTuple_Type);
      py::list rows = (*leaf++).attr("tolist")();
      for (size_t i = 0; i < rows.size(); ++i) {
        py::list items = rows[i];
        for (size_t k = 1; k < types.size(); ++k) items[k - 1] = types[k](items[k - 1]);
        if (tuples) rows[i] = py::tuple(items);
      }
      return std::move(rows);
    }
    case Node::Static: ++object; return *object++;  // its type, then itself
    case Node::Default: return py::none();
    case Node::Choice: {
      const bool first = py::bool_(*leaf++);
      py::object then = build_tree(code, object, leaf);
      py::object other = build_tree(code, object, leaf);
      return first ? then : other;
    }
    case Node::Dict: {
      const int64_t n = take_count(code);
      const py::tuple keys = (*object++).cast<py::tuple>();
      py::dict d;
      for (int64_t i = 0; i < n; ++i) d[keys[i]] = build_tree(code, object, leaf);
      return std::move(d);
    }
    case Node::Named: {  // a subclass of tuple or list (a namedtuple: by _make), of these items
      const int64_t n = take_count(code);
      const py::object cls = *object++;
      py::list items(n);
      for (int64_t i = 0; i < n; ++i) PyList_SET_ITEM(items.ptr(), i, build_tree(code, object, leaf).release().ptr());
      return py::hasattr(cls, "_make") ? cls.attr("_make")(items) : cls(items);
    }
    case Node::Tuple:
    case Node::List: {
      const int64_t n = take_count(code);
      if (node == Node::Tuple) {
        py::tuple items(n);
        for (int64_t i = 0; i < n; ++i) PyTuple_SET_ITEM(items.ptr(), i, build_tree(code, object, leaf).release().ptr());
        return std::move(items);
      }
      py::list items(n);
      for (int64_t i = 0; i < n; ++i) PyList_SET_ITEM(items.ptr(), i, build_tree(code, object, leaf).release().ptr());
      return std::move(items);
    }
  }
  throw std::logic_error("build_tree: unknown node");
}

void encode_result(const py::handle& spec, std::string& codes, std::vector<py::object>& objects) {
  const std::string kind = spec[py::int_(0)].cast<std::string>();
  if (kind == "leaf" || kind == "items" || kind == "numbers") {
    codes += static_cast<char>(kind == "leaf" ? Node::Leaf : kind == "items" ? Node::Items : Node::Numbers);
    return;
  }
  const py::tuple items = spec[py::int_(1)].cast<py::tuple>();
  if (kind == "rows") {  // (the types of a row's positions)
    codes += static_cast<char>(Node::Rows);
    objects.push_back(items);
    return;
  }
  if (kind == "choice") {  // (its condition's leaf, which the node's code stands for; the two sides)
    codes += static_cast<char>(Node::Choice);
    encode_result(items[1], codes, objects);
    encode_result(items[2], codes, objects);
    return;
  }
  if (kind == "dict") {
    put_node(codes, Node::Dict, static_cast<int64_t>(items.size()));
    py::list keys;
    for (const py::handle& kv : items) keys.append(kv[py::int_(0)]);
    objects.push_back(py::tuple(keys));
    for (const py::handle& kv : items) encode_result(kv[py::int_(1)], codes, objects);
    return;
  }
  if (kind == "tuple" || kind == "list") {
    put_node(codes, kind == "tuple" ? Node::Tuple : Node::List, static_cast<int64_t>(items.size()));
  } else {  // ("subclass", items, its type)
    put_node(codes, Node::Named, static_cast<int64_t>(items.size()));
    objects.push_back(spec[py::int_(2)]);
  }
  for (const py::handle& item : items) encode_result(item, codes, objects);
}

}  // namespace strider::python
