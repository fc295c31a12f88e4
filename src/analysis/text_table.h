// TextTable (private): aligned columns for the text report. The first column is left-aligned
// (names), the others right-aligned (numbers).
#pragma once

#include <string>
#include <vector>

namespace objprof::analysis::internal {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }
  // Appends the table, each line indented by `indent` spaces.
  void render(std::string& out, std::size_t indent = 2, std::size_t max_first = 48) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// "12,345,678"
std::string grouped(std::uint64_t v);

}  // namespace objprof::analysis::internal
