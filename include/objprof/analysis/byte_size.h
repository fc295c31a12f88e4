// Sizes on the command line: "4096", "64K", "1M", "2G" (powers of 1024; a trailing B is
// allowed: "64KB").
#pragma once

#include "objprof/result.h"

#include <cstdint>
#include <string>

namespace objprof::analysis {

// Errors: not a number, unknown suffix, overflow (kParse; the message quotes `what`).
Result<std::uint64_t> parse_byte_size(const std::string& text, const std::string& what = "size");

}  // namespace objprof::analysis
