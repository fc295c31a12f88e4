#include "text_table.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace objprof::analysis::internal {

namespace {
// Display width: count UTF-8 code points, not bytes.
std::size_t width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}
std::string cut(const std::string& s, std::size_t max) {
  if (width(s) <= max) return s;
  std::string out;
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80 && ++n > max - 1) break;
    out += s[i];
  }
  return out + "…";
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
