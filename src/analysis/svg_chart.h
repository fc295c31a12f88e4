// Minimal SVG charts for the HTML report and the replay picture (private). Every chart is a
// standalone <svg> element with a viewBox, so the HTML needs no script and no external file.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace objprof::analysis::internal {

std::string xml_escape(std::string_view s);

struct Series {
  std::string name;
  std::vector<double> values;
};

// A fixed palette; colour i of n series.
std::string palette(std::size_t i);

// Stacked areas over x (e.g. live bytes per cohort over the bytes clock). Series are stacked
// in order, the first at the bottom.
std::string stacked_area_chart(const std::string& title, const std::vector<double>& x, const std::vector<Series>& series,
                               const std::string& x_label, const std::string& y_label,
                               const std::function<std::string(double)>& x_fmt,
                               const std::function<std::string(double)>& y_fmt);

// Grouped bars: one group per category, one bar per series.
std::string bar_chart(const std::string& title, const std::vector<std::string>& categories,
                      const std::vector<Series>& series, const std::string& y_label,
                      const std::function<std::string(double)>& y_fmt);

// "1.2K", "3.4M": compact axis numbers.
std::string short_number(double v);

}  // namespace objprof::analysis::internal
