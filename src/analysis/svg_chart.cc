#include "svg_chart.h"

#include "fmt_format.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace objprof::analysis::internal {

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        // Control characters are not allowed in XML 1.0 text.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') out += ' ';
        else out += c;
    }
  }
  return out;
}

std::string palette(std::size_t i) {
  static const char* colours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                                  "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#8c564b"};
  return colours[i % std::size(colours)];
}

std::string short_number(double v) {
  const double a = std::fabs(v);
  if (a >= 1e9) return fmt::format("{:.1f}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.1f}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:.1f}K", v / 1e3);
  if (a == std::floor(a)) return fmt::format("{:.0f}", v);
  return fmt::format("{:.2f}", v);
}

namespace {

constexpr double kW = 900, kH = 320, kLeft = 80, kRight = 190, kTop = 36, kBottom = 50;

void frame(std::string& out, const std::string& title, const std::string& x_label, const std::string& y_label) {
  fmt::format_to(std::back_inserter(out),
                 R"(<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {} {}" width="{}" height="{}" role="img">)"
                 "\n<title>{}</title>\n"
                 R"(<rect x="0" y="0" width="{}" height="{}" fill="#ffffff"/>)"
                 "\n"
                 R"(<text x="{}" y="22" font-size="15" font-family="sans-serif" font-weight="bold">{}</text>)"
                 "\n"
                 R"(<text x="{}" y="{}" font-size="12" font-family="sans-serif" text-anchor="middle">{}</text>)"
                 "\n"
                 R"~(<text x="14" y="{}" font-size="12" font-family="sans-serif" text-anchor="middle" transform="rotate(-90 14 {})">{}</text>)~"
                 "\n",
                 kW, kH, kW, kH, xml_escape(title), kW, kH, kLeft, xml_escape(title), kLeft + (kW - kLeft - kRight) / 2,
                 kH - 10, xml_escape(x_label), kTop + (kH - kTop - kBottom) / 2, kTop + (kH - kTop - kBottom) / 2,
                 xml_escape(y_label));
}

void y_axis(std::string& out, double y_max, const std::function<std::string(double)>& y_fmt) {
  const double plot_h = kH - kTop - kBottom;
  for (int i = 0; i <= 4; ++i) {
    const double v = y_max * i / 4.0;
    const double y = kTop + plot_h - plot_h * i / 4.0;
    fmt::format_to(std::back_inserter(out),
                   R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#dddddd"/>)"
                   R"(<text x="{}" y="{:.1f}" font-size="10" font-family="sans-serif" text-anchor="end">{}</text>)"
                   "\n",
                   kLeft, y, kW - kRight, y, kLeft - 4, y + 3, xml_escape(y_fmt(v)));
  }
}

void legend(std::string& out, const std::vector<Series>& series) {
  const std::size_t shown = std::min<std::size_t>(series.size(), 14);
  for (std::size_t i = 0; i < shown; ++i) {
    const std::size_t k = i;  // the first 14: callers order series by importance
    const double y = kTop + 4 + 18.0 * static_cast<double>(i);
    std::string name = series[k].name;
    if (name.size() > 26) name = name.substr(0, 25) + "…";
    fmt::format_to(std::back_inserter(out),
                   R"(<rect class="legend" x="{}" y="{:.1f}" width="10" height="10" fill="{}"/>)"
                   R"(<text x="{}" y="{:.1f}" font-size="11" font-family="sans-serif">{}</text>)"
                   "\n",
                   kW - kRight + 12, y, palette(k), kW - kRight + 27, y + 9, xml_escape(name));
  }
  if (series.size() > shown)
    fmt::format_to(std::back_inserter(out), R"(<text x="{}" y="{:.1f}" font-size="11" font-family="sans-serif">+{} more</text>)",
                   kW - kRight + 12, kTop + 4 + 18.0 * static_cast<double>(shown) + 9, series.size() - shown);
}

// The axes' lines, the legend and the end of the document: how every chart finishes.
void close_chart(std::string& out, const std::vector<Series>& series) {
  fmt::format_to(std::back_inserter(out), R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#333333"/>)"
                 R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#333333"/>)" "\n",
                 kLeft, kTop, kLeft, kH - kBottom, kLeft, kH - kBottom, kW - kRight, kH - kBottom);
  legend(out, series);
  out += "</svg>\n";
}

void empty_note(std::string& out) {
  fmt::format_to(std::back_inserter(out),
                 R"(<text x="{}" y="{}" font-size="13" font-family="sans-serif" text-anchor="middle" fill="#888888">no data</text>)",
                 kLeft + (kW - kLeft - kRight) / 2, kTop + (kH - kTop - kBottom) / 2);
}

}  // namespace

std::string stacked_area_chart(const std::string& title, const std::vector<double>& x, const std::vector<Series>& series,
                               const std::string& x_label, const std::string& y_label,
                               const std::function<std::string(double)>& x_fmt,
                               const std::function<std::string(double)>& y_fmt) {
  std::string out;
  frame(out, title, x_label, y_label);
  const std::size_t n = x.size();
  std::vector<double> top(n, 0.0);
  for (const Series& s : series)
    for (std::size_t i = 0; i < n && i < s.values.size(); ++i) top[i] += s.values[i];
  const double y_max = std::max(1.0, n ? *std::max_element(top.begin(), top.end()) : 1.0);
  const double x_min = n ? x.front() : 0, x_max = n ? std::max(x.back(), x.front() + 1) : 1;
  const double plot_w = kW - kLeft - kRight, plot_h = kH - kTop - kBottom;
  auto px = [&](double v) { return kLeft + plot_w * (v - x_min) / (x_max - x_min); };
  auto py = [&](double v) { return kTop + plot_h - plot_h * v / y_max; };
  y_axis(out, y_max, y_fmt);
  for (int i = 0; i <= 4; ++i) {
    const double v = x_min + (x_max - x_min) * i / 4.0;
    fmt::format_to(std::back_inserter(out),
                   R"(<text x="{:.1f}" y="{}" font-size="10" font-family="sans-serif" text-anchor="middle">{}</text>)"
                   "\n",
                   px(v), kH - kBottom + 14, xml_escape(x_fmt(v)));
  }
  if (n == 0 || series.empty()) {
    empty_note(out);
  } else {
    std::vector<double> base(n, 0.0);
    for (std::size_t k = 0; k < series.size(); ++k) {
      std::vector<double> upper(base);
      for (std::size_t i = 0; i < n && i < series[k].values.size(); ++i) upper[i] += series[k].values[i];
      std::string d;
      for (std::size_t i = 0; i < n; ++i) fmt::format_to(std::back_inserter(d), "{}{:.1f},{:.1f}", i ? " L" : "M", px(x[i]), py(upper[i]));
      // A single sample is drawn as a thin band so it stays visible.
      if (n == 1) fmt::format_to(std::back_inserter(d), " L{:.1f},{:.1f}", px(x[0]) + 4, py(upper[0]));
      if (n == 1) fmt::format_to(std::back_inserter(d), " L{:.1f},{:.1f}", px(x[0]) + 4, py(base[0]));
      for (std::size_t i = n; i-- > 0;) fmt::format_to(std::back_inserter(d), " L{:.1f},{:.1f}", px(x[i]), py(base[i]));
      fmt::format_to(std::back_inserter(out), R"(<path class="area" d="{} Z" fill="{}" fill-opacity="0.85" stroke="none"><title>{}</title></path>)"
                     "\n", d, palette(k), xml_escape(series[k].name));
      base.swap(upper);
    }
  }
  close_chart(out, series);
  return out;
}

std::string bar_chart(const std::string& title, const std::vector<std::string>& categories, const std::vector<Series>& series,
                      const std::string& y_label, const std::function<std::string(double)>& y_fmt) {
  std::string out;
  frame(out, title, "", y_label);
  double y_max = 1.0;
  for (const Series& s : series)
    for (double v : s.values) y_max = std::max(y_max, v);
  const double plot_w = kW - kLeft - kRight, plot_h = kH - kTop - kBottom;
  y_axis(out, y_max, y_fmt);
  const std::size_t nc = categories.size(), ns = std::max<std::size_t>(series.size(), 1);
  if (nc == 0 || series.empty()) {
    empty_note(out);
  } else {
    const double group_w = plot_w / static_cast<double>(nc);
    const double bar_w = std::max(1.0, group_w * 0.8 / static_cast<double>(ns));
    for (std::size_t c = 0; c < nc; ++c) {
      const double gx = kLeft + group_w * static_cast<double>(c);
      for (std::size_t k = 0; k < series.size(); ++k) {
        const double v = c < series[k].values.size() ? series[k].values[c] : 0.0;
        const double h = plot_h * v / y_max;
        fmt::format_to(std::back_inserter(out),
                       R"(<rect class="bar" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"><title>{}: {}</title></rect>)"
                       "\n",
                       gx + group_w * 0.1 + bar_w * static_cast<double>(k), kTop + plot_h - h, bar_w, h, palette(k),
                       xml_escape(series[k].name + " " + categories[c]), xml_escape(y_fmt(v)));
      }
      // Category labels, thinned when crowded.
      const std::size_t every = nc <= 16 ? 1 : (nc + 15) / 16;
      if (c % every == 0)
        fmt::format_to(std::back_inserter(out),
                       R"(<text x="{:.1f}" y="{}" font-size="10" font-family="sans-serif" text-anchor="middle">{}</text>)"
                       "\n",
                       gx + group_w / 2, kH - kBottom + 14, xml_escape(categories[c]));
    }
  }
  close_chart(out, series);
  return out;
}

}  // namespace objprof::analysis::internal
