#include "text_table.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace objprof::analysis::internal {

namespace {
// Display width: count UTF-8 code points, not bytes.
std::size_t width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}
// Cuts in the middle: both ends of a name carry the information (a rank and a package at the
// start; a method, or a source file and line, at the end).
std::string cut(const std::string& s, std::size_t max) {
  if (width(s) <= max || max < 3) return s;
  std::vector<std::string> chars;  // code points
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) chars.emplace_back();
    if (!chars.empty()) chars.back() += s[i];
  }
  const std::size_t head = max / 3;
  const std::size_t tail = max - head - 1;
  std::string out;
  for (std::size_t i = 0; i < head; ++i) out += chars[i];
  out += "…";
  for (std::size_t i = chars.size() - tail; i < chars.size(); ++i) out += chars[i];
  return out;
}
}  // namespace

void TextTable::render(std::string& out, std::size_t indent, std::size_t max_first) const {
  std::vector<std::size_t> w(headers_.size(), 0);
  auto measure = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size() && i < w.size(); ++i)
      w[i] = std::max(w[i], i == 0 ? std::min(width(cells[i]), max_first) : width(cells[i]));
  };
  measure(headers_);
  for (const auto& r : rows_) measure(r);
  auto line = [&](const std::vector<std::string>& cells) {
    out.append(indent, ' ');
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::string c = i < cells.size() ? (i == 0 ? cut(cells[i], max_first) : cells[i]) : "";
      const std::size_t pad = w[i] - std::min(w[i], width(c));
      if (i == 0) {
        out += c;
        out.append(pad, ' ');
      } else {
        out.append(pad + 2, ' ');
        out += c;
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
  };
  line(headers_);
  for (const auto& r : rows_) line(r);
}

std::string grouped(std::uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

}  // namespace objprof::analysis::internal
