#pragma once
// The structure of a pytree (tuples, lists and dicts of leaves and static values) as a string of
// node codes: the call's arguments in a signature's key and a traced function's result share
// the encoding and one decoder.

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

namespace strider::python {

namespace py = pybind11;

/// A node of a pytree's structure as a signature records it. The call's arguments and a traced
/// function's result share the encoding (codes in a string, sequence lengths after them) and
/// one decoder, build_tree.
enum class Node : char {
  Leaf = 'X',     // the next leaf
  Items = 'I',    // the next leaf, an array, as the list of its items (a list a loop filled)
  Numbers = 'P',  // the next leaf, an array, as the list of its items as Python numbers (tolist())
  Rows = 'R',     // the next leaf, a 2-d array, as rows of Python numbers: the next object, a tuple,
                  // gives the rows' type (list or tuple), then each position's
  Tuple = 'T',    // + length: a tuple of that many nodes
  List = 'L',     // + length: a list
  Named = 'N',    // + length: a subclass of tuple or list (its type is the next object), a namedtuple
  Dict = 'M',     // + length: a dict (its keys, a tuple, are the next object)
  Static = 'O',   // a static value (the next two objects: its type, then itself)
  Default = 'D',  // a parameter the caller left out: the function applies its own default
  Choice = 'C',   // the next leaf, a bool, picks the first of the two nodes after it, else the second
};

/// Appends a node with a length (Tuple, List, Named, Dict) to `codes` (a std::string or
/// std::pmr::string).
template <typename String>
void put_node(String& codes, Node node, int64_t length) {
  codes += static_cast<char>(node);
  codes.append(reinterpret_cast<const char*>(&length), sizeof length);
}

/// Appends a traced result's structure (_api's ("leaf",) | (type name, specs) | ("dict", ((key,
/// spec), ...))) to `codes` and `objects`.
void encode_result(const py::handle& spec, std::string& codes, std::vector<py::object>& objects);

/// Decodes one node at `code`, advancing `code`, `object` and `leaf`.
py::object build_tree(const char*& code, const py::object*& object, const py::object*& leaf);

}  // namespace strider::python
