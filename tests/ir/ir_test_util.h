// Helpers shared by the [ir] tests.
#pragma once

#include <catch2/catch.hpp>

#include "objprof/ir/analysis.h"
#include "objprof/ir/elim.h"
#include "objprof/ir/generate.h"
#include "objprof/ir/text.h"

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

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

// Function i of a random stream, as a compiler thread sees them: all three CFG shapes, sizes
// that jump up and down (so that reused arrays are both larger and smaller than the function's),
// 2-21 registers (every 11th function 300: the one-register-at-a-time phi placement), GC points,
// and a receiver in every fourth.
inline Function stream_function(std::mt19937_64& rng, int i) {
  GenOptions o;
  o.shape = static_cast<CfgShape>(rng() % 3);
  o.blocks = 1 + static_cast<std::uint32_t>(rng() % (i % 7 == 0 ? 2000 : 120));
  o.regs = 2 + static_cast<std::uint32_t>(rng() % 20);
  o.safepoint_percent = static_cast<std::uint32_t>(rng() % 30);
  Function f = generate_function(rng(), o);
  if (i % 11 == 5) f.num_regs = 300;
  f.has_receiver = (i % 4 == 1) && !f.params.empty();
  return f;
}

// The global pass's options for function i of the stream: every assumption on and off, both
// safepoint models, and the self-check.
inline ElimOptions stream_options(int i) {
  ElimOptions options;
  options.allocation_marks = (i & 1) != 0;
  options.roots_marked = (i & 2) != 0;
  options.receiver_marked = (i & 4) != 0;
  options.safepoints = i % 5 == 0 ? SafepointMode::kPaper : SafepointMode::kExact;
  options.self_check = true;
  return options;
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

template <class T>
inline void require_same_lists(const CsrLists<T>& a, const CsrLists<T>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto x = a[i];
    auto y = b[i];
    REQUIRE(std::vector<T>(x.begin(), x.end()) == std::vector<T>(y.begin(), y.end()));
  }
}

// Every analysis of the two managers is identical, array by array.
inline void require_same_analyses(FunctionAnalyses& reused, FunctionAnalyses& fresh) {
  const Cfg& c1 = reused.cfg();
  const Cfg& c2 = fresh.cfg();
  require_same_lists(c1.succs, c2.succs);
  require_same_lists(c1.preds, c2.preds);
  REQUIRE(c1.pred_position == c2.pred_position);
  REQUIRE(c1.rpo == c2.rpo);
  REQUIRE(c1.rpo_index == c2.rpo_index);
  REQUIRE(c1.critical_edges == c2.critical_edges);
  REQUIRE(c1.unreachable == c2.unreachable);
  const DomTree& d1 = reused.domtree();
  const DomTree& d2 = fresh.domtree();
  REQUIRE(d1.idom == d2.idom);
  require_same_lists(d1.children, d2.children);
  REQUIRE(d1.pre == d2.pre);
  REQUIRE(d1.post == d2.post);
  require_same_lists(reused.frontiers().df, fresh.frontiers().df);
  const SsaForm& s1 = reused.ssa();
  const SsaForm& s2 = fresh.ssa();
  REQUIRE(s1.num_regs == s2.num_regs);
  REQUIRE(s1.values.size() == s2.values.size());
  for (std::size_t v = 0; v < s1.values.size(); ++v) {
    REQUIRE(s1.values[v].kind == s2.values[v].kind);
    REQUIRE(s1.values[v].reg == s2.values[v].reg);
    REQUIRE(s1.values[v].block == s2.values[v].block);
    REQUIRE(s1.values[v].index == s2.values[v].index);
  }
  REQUIRE(s1.phis.offsets_ == s2.phis.offsets_);
  REQUIRE(s1.phis.total() == s2.phis.total());
  for (std::size_t p = 0; p < s1.phis.total(); ++p) {
    REQUIRE(s1.phis.items_[p].reg == s2.phis.items_[p].reg);
    REQUIRE(s1.phis.items_[p].value == s2.phis.items_[p].value);
    REQUIRE(s1.phis.items_[p].first_arg == s2.phis.items_[p].first_arg);
    REQUIRE(s1.phis.items_[p].num_args == s2.phis.items_[p].num_args);
  }
  REQUIRE(s1.phi_args == s2.phi_args);
  REQUIRE(s1.instr_base == s2.instr_base);
  REQUIRE(s1.use_base == s2.use_base);
  REQUIRE(s1.uses == s2.uses);
  REQUIRE(s1.defs == s2.defs);
  REQUIRE(s1.entry_values == s2.entry_values);
  REQUIRE(s1.copy_root == s2.copy_root);
}

// The same decisions and the same summary flags.
inline void require_same_result(const ElimResult& a, const ElimResult& b) {
  require_same_decisions(a, b);  // accesses and block_first
  REQUIRE(a.returns_marked == b.returns_marked);
  REQUIRE(a.allocation_marks == b.allocation_marks);
  REQUIRE(a.roots_marked == b.roots_marked);
}

}  // namespace objprof::ir::test
