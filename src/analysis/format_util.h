// Small formatting helpers shared by the report writers (private).
#pragma once

#include <cstdint>
#include <string>

namespace objprof::analysis::internal {

// "512 B", "1.5 KiB", "3.0 MiB", "2.0 GiB".
std::string human_bytes(std::uint64_t bytes);
// "12.5%" of part in whole ("-" when whole is 0).
std::string percent(double part, double whole);
// Parses "64", "64K", "1M", "2G" (powers of 1024). False on anything else.
bool parse_size_text(const std::string& text, std::uint64_t& out);

}  // namespace objprof::analysis::internal
