// Helpers shared by the [ir] tests.
#pragma once

#include <catch2/catch.hpp>

#include "objprof/ir/elim.h"
#include "objprof/ir/generate.h"
#include "objprof/ir/text.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace objprof::ir::test {

// The property tests' random functions: `per_shape` of each CFG shape (structured,
// unstructured, mixed). Function i of shape k comes from seed `seed + 100 k + i` with the
// options tune(i, options) sets (blocks, registers); fn(k, i, function) runs on each.
template <class Tune, class Fn>
void for_each_generated(int per_shape, std::uint64_t seed, Tune&& tune, Fn&& fn) {
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < per_shape; ++i) {
      GenOptions o;
      o.shape = static_cast<CfgShape>(k);
      tune(i, o);
      Function f = generate_function(seed + 100 * static_cast<std::uint64_t>(k) + static_cast<std::uint64_t>(i), o);
      fn(k, i, f);
    }
}

inline std::string data_path(const std::string& name) { return std::string(OBJPROF_TEST_DATA_DIR) + "/ir/" + name; }

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Work scale for the property tests in percent (OBJPROF_IR_TEST_SCALE, default 100): lower it
// for slow builds (sanitizers, qemu), raise it for a soak run.
inline int scaled(int n) {
  static const int scale = [] {
    const char* s = std::getenv("OBJPROF_IR_TEST_SCALE");
    int v = s != nullptr ? std::atoi(s) : 100;
    return v > 0 ? v : 100;
  }();
  int r = n * scale / 100;
  return r > 0 ? r : 1;
}

inline Module parse_or_die(const std::string& text, const std::string& name) {
  auto m = parse_module(text, name);
  if (!m) throw std::runtime_error(m.error().message);
  return std::move(m).value();
}

// The module printed with every function annotated by `pass` decisions.
inline std::string annotated(const Module& m, const ElimOptions& options) {
  Module types_only;
  types_only.types = m.types;
  std::string out = print_module(types_only);
  for (const Function& f : m.functions) {
    auto r = run_elim(f, options, &m);
    if (!r) return "error: " + r.error().message;
    const ElimResult& res = *r;
    PrintOptions po;
    po.annotate = [&res](const Function&, BlockId b, std::size_t i) { return annotate_instr(res, b, static_cast<std::uint32_t>(i)); };
    out += "\n";
    out += print_function(f, po);
  }
  return out;
}

// Two results decide every access alike (same order, reason and covering site).
inline void require_same_decisions(const ElimResult& a, const ElimResult& b) {
  REQUIRE(a.accesses.size() == b.accesses.size());
  REQUIRE(a.block_first == b.block_first);
  for (std::size_t i = 0; i < a.accesses.size(); ++i) {
    const AccessDecision& x = a.accesses[i];
    const AccessDecision& y = b.accesses[i];
    INFO("access " << i << " block " << x.block << " instr " << x.instr);
    REQUIRE(x.block == y.block);
    REQUIRE(x.instr == y.instr);
    REQUIRE(x.operand == y.operand);
    REQUIRE(x.site == y.site);
    REQUIRE(x.reg == y.reg);
    REQUIRE(x.kept == y.kept);
    REQUIRE(x.reason == y.reason);
    REQUIRE(x.because == y.because);
  }
}

}  // namespace objprof::ir::test
