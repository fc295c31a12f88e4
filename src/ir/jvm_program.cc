// Class-hierarchy call resolution and may-GC summaries over imported JVM classes (see
// jvm_program.h for the rules).
#include "objprof/ir/jvm_program.h"

#include "objprof/ir/elim.h"

#include <algorithm>

namespace objprof::ir {
namespace {

constexpr std::uint16_t kAccPrivate = 0x0002;
constexpr std::uint16_t kAccNative = 0x0100;
constexpr std::uint16_t kAccInterface = 0x0200;
constexpr std::uint16_t kAccAbstract = 0x0400;
const std::string kAnyDescriptor;  // a call without a recorded descriptor matches every overload

bool is_call(const Instr& in) { return in.op == Opcode::kInvoke || in.op == Opcode::kCallStatic; }


// "Owner.method": owners are internal class names, which the IR spells without dots.
bool split_call(const std::string& name, std::string* owner, std::string* method) {
  std::size_t dot = name.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == name.size()) return false;
  *owner = name.substr(0, dot);
  *method = name.substr(dot + 1);
  return true;
}

}  // namespace

std::string JvmProgram::key_of(const Instr& call) const {
  std::string key = (call.op == Opcode::kInvoke ? "i:" : "s:") + call.name;
  auto it = descriptor_of_.find(&call);
  if (it != descriptor_of_.end()) key += "|" + *it->second;
  return key;
}

JvmProgram::JvmProgram(std::vector<ClassImport> classes) : classes_(std::move(classes)) {
  for (std::uint32_t c = 0; c < classes_.size(); ++c) class_index_.emplace(classes_[c].info.name, c);
  subtypes_.resize(classes_.size());
  for (std::uint32_t c = 0; c < classes_.size(); ++c) {
    const JvmClass& info = classes_[c].info;
    auto link = [&](const std::string& parent) {
      auto it = class_index_.find(parent);
      if (it != class_index_.end() && it->second != c) subtypes_[it->second].push_back(c);
    };
    if (!info.super.empty()) link(info.super);
    for (const std::string& i : info.interfaces) link(i);
  }
  for (std::uint32_t c = 0; c < classes_.size(); ++c) {
    function_base_.push_back(static_cast<std::uint32_t>(functions_.size()));
    ClassImport& ci = classes_[c];
    for (std::size_t j = 0; j < ci.module.functions.size(); ++j) {
      Function& f = ci.module.functions[j];
      function_number_.emplace(&f, static_cast<std::uint32_t>(functions_.size()));
      functions_.push_back(&f);
      if (j >= ci.call_descriptors.size()) continue;
      for (const CallDescriptor& d : ci.call_descriptors[j]) {
        if (d.block < f.blocks.size() && d.instr < f.blocks[d.block].instrs.size())
          descriptor_of_.emplace(&f.blocks[d.block].instrs[d.instr], &d.descriptor);
      }
    }
  }
  for (Function* f : functions_) {
    for (const Block& b : f->blocks) {
      for (const Instr& in : b.instrs) {
        if (!is_call(in)) continue;
        std::string key = key_of(in);
        if (targets_.count(key) != 0) continue;
        auto d = descriptor_of_.find(&in);
        targets_.emplace(std::move(key), resolve_call(in, d != descriptor_of_.end() ? *d->second : kAnyDescriptor));
      }
    }
  }
}

bool JvmProgram::add_declared(std::uint32_t cls, const std::string& method, const std::string& desc,
                              std::vector<std::uint32_t>* out) const {
  for (const JvmMethod& m : classes_[cls].info.methods) {
    if (m.name != method || (!desc.empty() && m.descriptor != desc)) continue;
    if (m.function >= 0) {
      out->push_back(function_base_[cls] + static_cast<std::uint32_t>(m.function));
    } else if ((m.access & kAccAbstract) == 0 || (m.access & kAccNative) != 0) {
      return false;  // native, or code we did not import
    }
  }
  return true;
}

bool JvmProgram::collect_interface(std::uint32_t iface, const std::string& method, const std::string& desc,
                                   std::vector<std::uint32_t>* out) const {
  if (!add_declared(iface, method, desc, out)) return false;
  for (const std::string& parent : classes_[iface].info.interfaces) {
    auto it = class_index_.find(parent);
    if (it == class_index_.end() || !collect_interface(it->second, method, desc, out)) return false;
  }
  return true;
}

bool JvmProgram::collect_chain(std::uint32_t cls, const std::string& method, const std::string& desc,
                               bool with_interfaces, std::vector<std::uint32_t>* out) const {
  for (std::uint32_t c = cls;;) {
    if (!add_declared(c, method, desc, out)) return false;
    if (with_interfaces) {
      for (const std::string& i : classes_[c].info.interfaces) {
        auto it = class_index_.find(i);
        if (it == class_index_.end() || !collect_interface(it->second, method, desc, out)) return false;
      }
    }
    const std::string& super = classes_[c].info.super;
    if (super.empty()) return true;
    auto it = class_index_.find(super);
    if (it == class_index_.end()) return false;  // the chain leaves the program
    c = it->second;
  }
}

JvmProgram::Target JvmProgram::resolve_name(const std::string& owner, const std::string& method,
                                             const std::string& desc, bool is_static, bool is_invoke) const {
  Target t;
  auto it = class_index_.find(owner);
  if (it == class_index_.end()) return t;
  const std::uint32_t cls = it->second;
  std::vector<std::uint32_t> fs;
  if (is_static) {
    if (!collect_chain(cls, method, desc, false, &fs)) return t;
  } else if (is_invoke) {
    bool exact = method == "<init>";
    if (!exact) {
      bool any = false, all_private = true;
      for (const JvmMethod& m : classes_[cls].info.methods) {
        if (m.name != method || (!desc.empty() && m.descriptor != desc)) continue;
        any = true;
        all_private &= (m.access & kAccPrivate) != 0;
      }
      exact = any && all_private;
    }
    if (exact) {
      if (!add_declared(cls, method, desc, &fs)) return t;
    } else {
      // Every class that can be the receiver: the owner and its subtypes with instances.
      std::vector<std::uint8_t> seen(classes_.size(), 0);
      std::vector<std::uint32_t> stack{cls};
      seen[cls] = 1;
      bool any_receiver = false;
      while (!stack.empty()) {
        std::uint32_t c = stack.back();
        stack.pop_back();
        if ((classes_[c].info.access & (kAccInterface | kAccAbstract)) == 0) {
          any_receiver = true;
          if (!collect_chain(c, method, desc, true, &fs)) return t;
        }
        for (std::uint32_t s : subtypes_[c]) {
          if (!seen[s]) {
            seen[s] = 1;
            stack.push_back(s);
          }
        }
      }
      if (!any_receiver) return t;
    }
  } else {
    return t;
  }
  std::sort(fs.begin(), fs.end());
  fs.erase(std::unique(fs.begin(), fs.end()), fs.end());
  if (fs.empty()) return t;
  t.known = true;
  t.functions = std::move(fs);
  return t;
}

JvmProgram::Target JvmProgram::resolve_call(const Instr& call, const std::string& desc) const {
  std::string owner, method;
  if (!split_call(call.name, &owner, &method)) return {};
  return resolve_name(owner, method, desc, call.op == Opcode::kCallStatic, call.op == Opcode::kInvoke);
}

const JvmProgram::Target* JvmProgram::resolve(const Instr& call) const {
  const std::string key = key_of(call);
  auto it = targets_.find(key);
  if (it != targets_.end()) return it->second.known ? &it->second : nullptr;
  // A call that is not one of the program's own instructions (a copy, or code from elsewhere):
  // resolved by name, every overload counting, once.
  std::lock_guard<std::mutex> lock(other_mutex_);
  auto [slot, fresh] = other_targets_.try_emplace(key);
  if (fresh) slot->second = resolve_call(call, kAnyDescriptor);
  return slot->second.known ? &slot->second : nullptr;
}

bool JvmProgram::callees(const Instr& call, std::vector<const Function*>* out) const {
  if (!is_call(call)) return false;
  const Target* t = resolve(call);
  if (t == nullptr) return false;
  for (std::uint32_t g : t->functions) out->push_back(functions_[g]);
  return true;
}

GcSummaryStats JvmProgram::apply_gc_summaries() {
  const std::size_t n = functions_.size();
  // Nodes: functions [0, n), then one per resolved call target set.
  std::unordered_map<const Target*, std::uint32_t> target_node;
  std::vector<const Target*> node_target;
  for (auto& [key, t] : targets_) {
    if (!t.known) continue;
    target_node.emplace(&t, static_cast<std::uint32_t>(n + node_target.size()));
    node_target.push_back(&t);
  }
  const std::size_t nodes = n + node_target.size();
  std::vector<std::vector<std::uint32_t>> dependents(nodes);  // node -> nodes whose summary reads it
  std::vector<std::uint8_t> may(nodes, 0);
  std::vector<std::uint32_t> work;
  for (std::uint32_t g = 0; g < n; ++g) {
    std::vector<std::uint32_t> uses;
    bool local = false;
    for (const Block& b : functions_[g]->blocks) {
      for (const Instr& in : b.instrs) {
        if (!is_call(in) && ir::may_gc(in)) local = true;  // an allocation or a safepoint
        if (!is_call(in)) continue;
        const Target* t = resolve(in);
        if (t == nullptr) {
          local |= in.may_gc;
        } else {
          uses.push_back(target_node.at(t));
        }
      }
    }
    std::sort(uses.begin(), uses.end());
    uses.erase(std::unique(uses.begin(), uses.end()), uses.end());
    for (std::uint32_t u : uses) dependents[u].push_back(g);
    if (local) {
      may[g] = 1;
      work.push_back(g);
    }
  }
  for (std::size_t k = 0; k < node_target.size(); ++k) {
    const auto node = static_cast<std::uint32_t>(n + k);
    for (std::uint32_t g : node_target[k]->functions) dependents[g].push_back(node);
  }
  while (!work.empty()) {
    std::uint32_t x = work.back();
    work.pop_back();
    for (std::uint32_t d : dependents[x]) {
      if (may[d]) continue;
      may[d] = 1;
      work.push_back(d);
    }
  }
  may_gc_.assign(may.begin(), may.begin() + static_cast<std::ptrdiff_t>(n));
  GcSummaryStats stats;
  stats.functions = n;
  for (std::uint32_t g = 0; g < n; ++g) stats.functions_no_gc += may[g] ? 0 : 1;
  for (Function* f : functions_) {
    for (Block& b : f->blocks) {
      for (Instr& in : b.instrs) {
        if (!is_call(in) || in.name.rfind("jvm.", 0) == 0) continue;
        ++stats.calls;
        const Target* t = resolve(in);
        if (t == nullptr) continue;
        ++stats.calls_resolved;
        if (may[target_node.at(t)]) continue;
        in.may_gc = false;
        ++stats.calls_no_gc;
      }
    }
  }
  return stats;
}

std::size_t JvmProgram::apply_return_summaries(const ElimOptions& options, int max_rounds) {
  std::size_t marked = 0;
  std::vector<std::uint8_t> returns(functions_.size(), 0);
  FunctionAnalyses workspace;
  for (int round = 0; round < max_rounds; ++round) {
    for (std::size_t g = 0; g < functions_.size(); ++g) {
      if (returns[g]) continue;  // facts only grow: once proved, it stays proved
      auto r = run_elim(*functions_[g], options, nullptr, workspace);
      returns[g] = r.ok() && r->returns_marked ? 1 : 0;
    }
    bool changed = false;
    for (Function* f : functions_) {
      for (Block& b : f->blocks) {
        for (Instr& in : b.instrs) {
          if (!is_call(in) || in.dst == kNoReg || in.result_marked) continue;
          const Target* t = resolve(in);
          if (t == nullptr) continue;
          bool all = true;
          for (std::uint32_t g : t->functions) all &= returns[g] != 0;
          if (!all) continue;
          in.result_marked = true;
          ++marked;
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  return marked;
}

bool JvmProgram::may_gc(const Function& f) const {
  auto it = function_number_.find(&f);
  return it == function_number_.end() || may_gc_.empty() || may_gc_[it->second] != 0;
}

}  // namespace objprof::ir
