#include "format_util.h"

#include "objprof/analysis/byte_size.h"

#include <fmt/core.h>

#include <cctype>
#include <limits>

namespace objprof::analysis::internal {

std::string human_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

std::string percent(double part, double whole) {
  if (whole <= 0) return "-";
  return fmt::format("{:.1f}%", 100.0 * part / whole);
}

bool parse_size_text(const std::string& text, std::uint64_t& out) {
  if (text.empty()) return false;
  std::uint64_t v = 0;
  std::size_t i = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    const std::uint64_t d = static_cast<std::uint64_t>(text[i] - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  if (i == 0) return false;
  unsigned shift = 0;
  if (i < text.size()) {
    switch (std::toupper(static_cast<unsigned char>(text[i]))) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      default: return false;
    }
    ++i;
    if (i < text.size() && (text[i] == 'B' || text[i] == 'b')) ++i;  // "64KB"
    if (i != text.size()) return false;
  }
  if (shift && v > (std::numeric_limits<std::uint64_t>::max() >> shift)) return false;
  out = v << shift;
  return true;
}

}  // namespace objprof::analysis::internal

namespace objprof::analysis {

Result<std::uint64_t> parse_byte_size(const std::string& text, const std::string& what) {
  std::uint64_t v = 0;
  if (!internal::parse_size_text(text, v))
    return make_error(ErrorCode::kParse, fmt::format("{} '{}' is not a size (a number with an optional K, M or G)", what, text));
  return v;
}

}  // namespace objprof::analysis
