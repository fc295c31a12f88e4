// Textual form of the register IR: parser and printer (grammar and examples in
// docs/ir-format.md).
//
// Round trip: for every module M that parses, parse(print(M)) == M, and print(parse(T)) == T
// for any text T that print produced. Parse errors are ErrorCode::kParse values whose message
// reads "FILE:LINE:COL: expected X, found Y"; the parser never crashes or throws on bad input.
#pragma once

#include "objprof/ir/ir.h"
#include "objprof/result.h"

#include <functional>
#include <string>
#include <string_view>

namespace objprof::ir {

// Parses a whole module. `filename` is only used in error messages.
Result<Module> parse_module(std::string_view text, std::string_view filename = "<input>");

struct PrintOptions {
  // Called for each instruction; a non-empty return value is printed as a trailing
  // `; ...` comment (e.g. the barrier decision of an access). Optional.
  std::function<std::string(const Function&, BlockId, std::size_t instr_index)> annotate;
};

std::string print_module(const Module& module, const PrintOptions& options = {});
std::string print_function(const Function& function, const PrintOptions& options = {});
// One instruction without indentation or comment, e.g. "v2 = getfield v0, Node.next #1".
std::string print_instr(const Function& function, const Instr& instr);

}  // namespace objprof::ir
