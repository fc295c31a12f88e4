// GraphWalker: a HeapWalker over a hand-built object graph (addresses, typed objects with
// named fields and arrays, named roots), counting every call, for the path-search and profiler
// tests.
#pragma once

#include <objprof/heap_walk.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace objprof::test {

class GraphWalker final : public HeapWalker {
 public:
  struct Object {
    std::uint32_t type = kUnknownType;
    std::vector<std::pair<std::string, Address>> fields;  // in order
    std::vector<Address> elements;                         // an array when non-empty
  };
  struct Root {
    RootKind kind;
    std::string name;
    Address target;
  };

  Object& object(Address a, std::uint32_t type) {
    Object& o = objects[a];
    o.type = type;
    return o;
  }
  void field(Address from, std::string name, Address to) { objects[from].fields.emplace_back(std::move(name), to); }
  void add_root(RootKind kind, std::string name, Address to) { root_list.push_back({kind, std::move(name), to}); }
  std::uint64_t calls() const { return begins + ends + root_walks + reference_walks + type_calls + name_calls; }

  bool begin_walk() override {
    ++begins;
    return !decline;
  }
  void end_walk() override { ++ends; }
  void roots(RootVisitor& out) override {
    ++root_walks;
    for (std::size_t i = 0; i < root_list.size(); ++i) out.root(root_list[i].kind, i, root_list[i].target);
  }
  void references(Address obj, ReferenceVisitor& out) override {
    ++reference_walks;
    auto it = objects.find(obj);
    if (it == objects.end()) return;
    for (const auto& [name, to] : it->second.fields) out.field(name, to);
    for (std::size_t i = 0; i < it->second.elements.size(); ++i)
      if (it->second.elements[i] != 0) out.element(i, it->second.elements[i]);
  }
  std::uint32_t type_id(Address obj) override {
    ++type_calls;
    auto it = objects.find(obj);
    return it == objects.end() ? kUnknownType : it->second.type;
  }
  std::string root_name(RootKind, std::uint64_t token) override {
    ++name_calls;
    return root_list.at(token).name;
  }

  std::map<Address, Object> objects;
  std::vector<Root> root_list;
  bool decline = false;
  std::uint64_t begins = 0, ends = 0, root_walks = 0, reference_walks = 0, type_calls = 0, name_calls = 0;
};

}  // namespace objprof::test
