// Imported JVM classes seen as one program: its class hierarchy resolves calls, and may-GC
// summaries over the call graph let calls that cannot reach a GC point keep availability.
//
// Resolution (class-hierarchy analysis over the classes given, by method name and descriptor,
// as the JVM selects methods; a call without a recorded descriptor (ClassImport::
// call_descriptors) matches every overload of its name, which can only add callees):
//  - invokestatic Owner.m: every `m` declared by Owner and its superclasses;
//  - invokespecial of a constructor, or of a method Owner declares only as private: Owner's `m`;
//  - any other invoke: for Owner and every subtype of it in the program that can have
//    instances (not abstract, not an interface), every `m` along its superclass chain and its
//    superinterfaces (default methods).
// A call is unknown — it may GC — when its owner, a superclass or a superinterface on the way is
// not in the program, when a candidate is native or was not imported, when no candidate class
// can have instances, and always for invokedynamic. The class set is taken as closed (as a JIT
// with class-hierarchy dependencies assumes until a new class loads): a class loaded later
// that overrides a summarized method invalidates the decisions that relied on it.
//
// Summaries (the least fixed point): a function may GC when it allocates, has a safepoint or
// an unknown call that may GC (`jvm.caught`, a handler's entry, is one), or makes a call with a
// callee that may GC. Recursion without such points does not GC.
// Not thread-safe while apply_*_summaries() run; callees() is const and may run concurrently.
#pragma once

#include "objprof/ir/call_resolver.h"
#include "objprof/ir/jvm_import.h"

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace objprof::ir {

struct GcSummaryStats {
  std::size_t functions = 0;
  std::size_t functions_no_gc = 0;  // cannot reach a GC point
  std::size_t calls = 0;            // call instructions (invokes and static calls, not markers)
  std::size_t calls_resolved = 0;   // whose callees are all known
  std::size_t calls_no_gc = 0;      // resolved, and no callee may GC: now `.nogc`
};

struct ElimOptions;

class JvmProgram final : public CallResolver {
 public:
  explicit JvmProgram(std::vector<ClassImport> classes);

  const std::vector<ClassImport>& classes() const { return classes_; }
  bool callees(const Instr& call, std::vector<const Function*>* out) const override;

  // Computes the summaries and sets `may_gc = false` on every call whose callees cannot GC.
  GcSummaryStats apply_gc_summaries();
  // After apply_gc_summaries(): may the function (one of this program's) reach a GC point?
  bool may_gc(const Function& f) const;

  // Return summaries: runs the global pass (with `options`) over every function, and marks
  // `.marked` each call with a result whose callees all return marked objects
  // (ElimResult::returns_marked), round after round until nothing changes (at most
  // `max_rounds`). Each round only adds facts the previous rounds proved. Returns the calls
  // marked. The checker verifies each such callee's returns (CheckOptions::verify_returns).
  std::size_t apply_return_summaries(const ElimOptions& options, int max_rounds = 8);

 private:
  struct Target {
    bool known = false;
    std::vector<std::uint32_t> functions;  // global function numbers
  };
  const Target* resolve(const Instr& call) const;
  std::string key_of(const Instr& call) const;
  Target resolve_call(const Instr& call, const std::string& desc) const;
  // `desc` empty: every overload of `method`.
  Target resolve_name(const std::string& owner, const std::string& method, const std::string& desc, bool is_static,
                      bool is_invoke) const;
  bool collect_chain(std::uint32_t cls, const std::string& method, const std::string& desc, bool with_interfaces,
                     std::vector<std::uint32_t>* out) const;
  bool collect_interface(std::uint32_t iface, const std::string& method, const std::string& desc,
                         std::vector<std::uint32_t>* out) const;
  bool add_declared(std::uint32_t cls, const std::string& method, const std::string& desc,
                    std::vector<std::uint32_t>* out) const;

  std::vector<ClassImport> classes_;
  std::unordered_map<std::string, std::uint32_t> class_index_;
  std::vector<std::vector<std::uint32_t>> subtypes_;     // per class: direct subclasses and implementors
  std::vector<std::uint32_t> function_base_;             // per class: its first global function number
  std::vector<Function*> functions_;                     // by global number
  std::unordered_map<const Function*, std::uint32_t> function_number_;
  std::unordered_map<const Instr*, const std::string*> descriptor_of_;  // calls with a known descriptor
  // Keyed by (static or invoke) + call name, resolved once for the whole program.
  std::unordered_map<std::string, Target> targets_;
  std::vector<std::uint8_t> may_gc_;                     // per global function, after summaries
  // Calls from outside the program's own code, resolved on first use.
  mutable std::mutex other_mutex_;
  mutable std::unordered_map<std::string, Target> other_targets_;
};

}  // namespace objprof::ir
